""".data: the same memory with a version counter of its own, invisible to autograd."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from conformance.check import (
    attributed_to,
    expect,
    expect_no_raise,
    expect_values,
    shares_storage,
)
from conformance.harness import rule_test
from conformance.saving import draw_scenario, gradient_bound
from conformance.writes import writes_for
from oracle.dtypes import round_to
from strategies.dtypes import elements, small_elements
from strategies.layouts import WRITABLE_LAYOUTS
from strategies.tensors import DTYPE_NAMES, to_numpy


@rule_test("data.shares_storage")
def test_data_shares_storage(ex):
    x = ex.tensor("source")
    d = x.tensor.data
    expect("data.shares_storage", shares_storage(d, x.tensor), ".data has its own storage")
    got = (d.data_ptr(), d.shape, d.stride() if d.numel() else None)
    want = (x.tensor.data_ptr(), x.tensor.shape, x.tensor.stride() if d.numel() else None)
    expect(
        "data.shares_storage",
        got == want,
        f".data is at (data_ptr, shape, strides) {got}, its source at {want}",
    )
    expect_values("data.shares_storage", d, x.values, ".data")


@rule_test("data.own_version")
def test_data_has_own_version_counter(ex):
    x = ex.tensor("source", layout_kinds=WRITABLE_LAYOUTS)
    d = x.tensor.data
    writes = writes_for(x.dtype, device=x.device)
    target = ex.draw(st.sampled_from(["data", "source"]), "written")
    write = ex.draw(st.sampled_from(writes), "write")
    before = (x.tensor._version, d._version)
    with torch.no_grad():
        write.apply(d if target == "data" else x.tensor, ex.draw(elements(x.dtype), "value"))
    after = (x.tensor._version, d._version)
    written, other = (1, 0) if target == "data" else (0, 1)
    expect(
        "data.own_version",
        after[written] > before[written] and after[other] == before[other],
        f"{write} through {'.data' if target == 'data' else 'the source'} moved (source, .data) "
        f"versions {before} -> {after}",
    )


@rule_test("data.never_requires_grad")
def test_data_never_requires_grad(ex):
    x = ex.tensor("source")
    d = x.tensor.data
    got = (d.requires_grad, d.grad_fn, d.is_leaf)
    expect(
        "data.never_requires_grad",
        got == (False, None, True),
        f".data of a {x.role} tensor: requires_grad={got[0]}, grad_fn={got[1]}, is_leaf={got[2]}",
    )


@rule_test("data.write_is_silent")
def test_write_through_data_never_makes_backward_raise(ex):
    scenario = draw_scenario(ex)
    write = ex.draw(
        st.sampled_from(writes_for(scenario.x.dtype, device=scenario.x.device)), "write"
    )
    write.apply(scenario.saved.data, ex.draw(elements(scenario.x.dtype), "value"))
    expect_no_raise(
        "data.write_is_silent",
        scenario.backward,
        f"backward of {scenario.op} after {scenario.op.saved}.data.{write}",
    )


@rule_test("data.write_changes_gradient")
def test_write_through_data_changes_gradient(ex):
    scenario = draw_scenario(ex)
    write = ex.draw(
        st.sampled_from(writes_for(scenario.x.dtype, device=scenario.x.device)), "write"
    )
    value = ex.draw(small_elements(scenario.x.dtype), "value")
    # what the saved tensor holds after the write: rounded to its dtype (in
    # float16, tanh's 1 - r * r magnifies the rounding of r tenfold)
    held = DTYPE_NAMES[scenario.saved.dtype]
    new_values = round_to(write.expected(to_numpy(scenario.saved), value), held)
    write.apply(scenario.saved.data, value)
    with attributed_to("data.write_changes_gradient", f"backward after .data.{write}"):
        scenario.backward()
    g = to_numpy(scenario.gradient)
    grad = scenario.op.grad(g, new_values)
    # (a thorough run, complex64 tanh of 2.5+0.5j: 1 - r * r cancels to 0.01)
    bound = gradient_bound(scenario.op, g, new_values, DTYPE_NAMES[scenario.x.root.grad.dtype])
    expect_values(
        "data.write_changes_gradient",
        scenario.x.root.grad,
        scenario.x.grad_for_root(grad),
        f"gradient of {scenario.op} after {scenario.op.saved}.data.{write}",
        bound,
    )
