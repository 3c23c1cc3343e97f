"""Property tests, compiled: the rules that apply inside a compiled function,
held under each --compile target. clone() gives new memory and detach()
shares it, whatever the compiler does with them; writes through .data stay
invisible to autograd; gradients accumulate across backward calls through
compiled graphs; a tensor a compiled graph saved for backward, written after
the call, makes backward raise."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.check import InvariantViolation, expect, expect_raises, shares_storage
from conformance.compiled.targets import Target, guard_cache_limits
from conformance.harness import Example
from strategies.tensors import GRAD_ROLES

# Each example compiles a function (about 0.4 s with aot_eager).
COMPILED_EXAMPLES = max(2, settings.default.max_examples // 8)


def compiled(fn, target: Target):
    torch._dynamo.reset()  # a fresh cache per example: no recompile limit to hit
    guard_cache_limits()
    return torch.compile(fn, backend=target.backend)


def _clone(x):
    return x.clone()


def _detach(x):
    return x.detach()


def _mul_by_data_of(x, w):
    y = x * w  # saves w for x's gradient
    w.data.mul_(2)  # invisible to autograd: backward sees 2w, and does not raise
    return y


def _exp(x):
    return x.exp()  # saves its result


@pytest.mark.invariant("clone.new_storage")
@settings(max_examples=COMPILED_EXAMPLES)
@given(data=st.data())
def test_compiled_clone_has_new_storage(device, target: Target, data):
    ex = Example(data, device)
    x = ex.tensor("source").tensor
    y = compiled(_clone, target)(x)
    expect("clone.new_storage", not shares_storage(y, x), f"{target.name}: clone shares storage")
    expect("clone.new_storage", torch.equal(y.detach(), x.detach()), "clone changed the values")


@pytest.mark.invariant("detach.shares_storage")
@settings(max_examples=COMPILED_EXAMPLES)
@given(data=st.data())
def test_compiled_detach_shares_storage(device, target: Target, data):
    ex = Example(data, device)
    x = ex.tensor("source").tensor
    y = compiled(_detach, target)(x)
    expect(
        "detach.shares_storage",
        shares_storage(y, x) and y.storage_offset() == x.storage_offset(),
        f"{target.name}: detach() returned other memory",
    )
    expect("detach.shares_storage", not y.requires_grad, "detach() requires grad compiled")


@pytest.mark.invariant("data.write_is_silent", "data.write_changes_gradient")
@settings(max_examples=COMPILED_EXAMPLES)
@given(data=st.data())
def test_compiled_data_write_is_silent(device, target: Target, data):
    ex = Example(data, device)
    dtype = ex.draw(st.sampled_from(ex.dtypes(("float",))), "dtype")
    shape = ex.draw(st.sampled_from([(3,), (2, 2)]), "shape")
    x = torch.ones(shape, dtype=getattr(torch, dtype), device=device, requires_grad=True)
    w = torch.full(shape, 1.5, dtype=x.dtype, device=device, requires_grad=True)
    ex.record(dtype)
    try:
        y = compiled(_mul_by_data_of, target)(x, w)
    except Exception as error:  # a backend that refuses the program: reported, listable
        raise InvariantViolation(
            "data.write_is_silent", f"{target.name}: the compiled call raised: {error}"
        ) from None
    try:
        y.sum().backward()
    except RuntimeError as error:
        raise InvariantViolation(
            "data.write_is_silent", f"{target.name}: backward raised after a .data write: {error}"
        ) from None
    expected = torch.full(shape, 3.0, dtype=x.dtype)
    expect(
        "data.write_changes_gradient",
        torch.equal(x.grad.cpu(), expected),
        f"{target.name}: x.grad is {x.grad.tolist()}, expected the new w (3.0) after w.data *= 2",
    )


@pytest.mark.invariant("grad.accumulates_across_backward")
@settings(max_examples=COMPILED_EXAMPLES)
@given(data=st.data())
def test_compiled_backward_accumulates(device, target: Target, data):
    ex = Example(data, device)
    case = ex.tensor("leaf", dtypes=ex.dtypes(("float",)), roles=("leaf",))
    x = case.tensor
    fn = compiled(_exp, target)
    fn(x).sum().backward()
    once = x.grad.clone()
    fn(x).sum().backward()  # the same compiled graph, a second call
    expect(
        "grad.accumulates_across_backward",
        torch.allclose(x.grad, 2 * once, equal_nan=True),
        f"{target.name}: after two backward calls .grad is {x.grad.tolist()}, "
        f"expected twice {once.tolist()}",
    )


@pytest.mark.invariant("version.saved_modified_raises")
@settings(max_examples=COMPILED_EXAMPLES)
@given(data=st.data())
def test_compiled_saved_tensor_written_raises(device, target: Target, data):
    ex = Example(data, device)
    case = ex.tensor("input", dtypes=ex.dtypes(("float",)), roles=GRAD_ROLES)
    y = compiled(_exp, target)(case.tensor)  # exp saves its result, y
    with torch.no_grad():
        y.mul_(2)
    expect_raises(
        "version.saved_modified_raises",
        "SAVED_TENSOR_MODIFIED",
        lambda: y.sum().backward(),
        f"{target.name}: backward after writing the result a compiled exp saved",
    )
