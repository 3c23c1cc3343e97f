"""The replay's trace (conformance.replay.Tracer) stays out of torch.compile:
a compiled call made while it records runs as it would without it, so a
compiled example that crashes in a run crashes in its replay too, rather
than running eagerly (a graph break inside the trace) or failing at the call
(Dynamo calls tensor methods on its fake tensors, which the trace must not
read)."""

from __future__ import annotations

import json
import os

import torch

from conformance.replay import Tracer


def _double_and_shift(x):
    return x * 2, x + 1


def test_a_compiled_call_under_the_trace_runs_as_without_it(tmp_path):
    log = tmp_path / "calls.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    torch._dynamo.reset()
    compiled = torch.compile(_double_and_shift, backend="aot_eager")
    try:
        with Tracer(fd):
            doubled, shifted = compiled(x)
            shifted.sum().backward()
    finally:
        os.close(fd)
        torch._dynamo.reset()
    # compiled, not run eagerly after a graph break inside the trace
    assert type(shifted.grad_fn).__name__ == "CompiledFunctionBackward"
    assert doubled.tolist() == [2.0, -4.0, 1.0]
    assert shifted.tolist() == [2.0, -1.0, 1.5]
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert any("torch.Tensor.backward(" in line for line in lines)  # the trace still records
    assert not any("FakeTensor" in line or "Functional" in line for line in lines)


def test_a_call_that_raised_is_guarded_and_autograd_state_is_kept():
    from conformance.replay import RAISED, _guarded, sliced

    lines = _guarded(
        [
            "v0 = torch.tensor([1.0], requires_grad=True)",
            "v1 = torch.Tensor.mul(v0, 2)",
            "v2 = torch.Tensor.backward(v1, gradient=None)",
            "v3 = torch.Tensor.backward(v1, gradient=None)",
            RAISED,
            "v4 = torch.Tensor.retain_grad(v1)",
            "v5 = torch.tensor([3.0])",
            "v6 = torch.Tensor.mul_(v1, 2)",
        ]
    )
    assert lines[3] == (
        "try:\n    v3 = torch.Tensor.backward(v1, gradient=None)\n"
        "except Exception:\n    pass  # raised in the example too"
    )
    kept = sliced(lines)
    # the backward calls and retain_grad change what a later call does
    assert "v4 = torch.Tensor.retain_grad(v1)" in kept
    assert "v2 = torch.Tensor.backward(v1, gradient=None)" in kept
    assert "v5 = torch.tensor([3.0])" not in kept
    namespace: dict = {"torch": torch}
    exec("\n".join(kept), namespace)  # runs past the call that raised
    assert namespace["v1"].tolist() == [4.0]
