"""Leaves that require grad refuse in-place ops, except under no_grad; no_grad
results do not require grad; views made under no_grad stay read-only after."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from conformance.check import attributed_to, expect, expect_raises, expect_values
from conformance.harness import Example, property_test
from conformance.writes import bumps_for, writes_for
from strategies.dtypes import elements
from strategies.layouts import WRITABLE_LAYOUTS
from strategies.views import views


def _refused(ex: Example, x, invariant: str, error: str, what: str) -> None:
    op = ex.draw(st.sampled_from(bumps_for(x.dtype, device=x.device)), "in-place op")
    value = ex.draw(elements(x.dtype), "value")
    version = x.tensor._version
    expect_raises(invariant, error, lambda: op.apply(x.tensor, value), f"{op} on {what}")
    expect_values(invariant, x.tensor, x.values, f"{what} after the refused {op}")
    expect(
        invariant,
        x.tensor._version == version,
        f"the refused {op} moved the version from {version} to {x.tensor._version}",
    )


@property_test("leaf.inplace_raises")
def test_inplace_on_grad_leaf_raises(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=("leaf",), layout_kinds=WRITABLE_LAYOUTS)
    _refused(ex, x, "leaf.inplace_raises", "INPLACE_ON_LEAF", "a leaf that requires grad")


@property_test("leaf.view_inplace_raises")
def test_inplace_on_view_of_grad_leaf_raises(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=("view",), layout_kinds=WRITABLE_LAYOUTS)
    _refused(ex, x, "leaf.view_inplace_raises", "INPLACE_ON_LEAF_VIEW", "a view of a grad leaf")


@property_test("nograd.inplace_on_leaf_allowed")
def test_inplace_on_grad_leaf_allowed_under_no_grad(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=("leaf", "view"), layout_kinds=WRITABLE_LAYOUTS)
    write = ex.draw(st.sampled_from(writes_for(x.dtype, device=x.device)), "write")
    value = ex.draw(elements(x.dtype), "value")
    with torch.no_grad(), attributed_to("nograd.inplace_on_leaf_allowed", f"{write} under no_grad"):
        write.apply(x.tensor, value)
    expect_values(
        "nograd.inplace_on_leaf_allowed", x.tensor, write.expected(x.values, value), str(write)
    )
    got = (x.root.requires_grad, x.root.is_leaf, x.root.grad_fn)
    expect(
        "nograd.inplace_on_leaf_allowed",
        got == (True, True, None),
        f"after {write} under no_grad the leaf has requires_grad={got[0]}, is_leaf={got[1]}, "
        f"grad_fn={got[2]}",
    )


_COMPUTATIONS = (
    ("x * 2", lambda x: x * 2),
    ("x + x", lambda x: x + x),
    ("x.clone()", lambda x: x.clone()),
    ("x.exp()", lambda x: x.exp()),
    ("x.sum()", lambda x: x.sum()),
    ("x.neg()", lambda x: x.neg()),
    ("x.contiguous() * 1", lambda x: x.contiguous() * 1),
    ("torch.cat([x.reshape(-1)])", lambda x: torch.cat([x.reshape(-1)])),
    ("x.detach()", lambda x: x.detach()),
)


@property_test("nograd.results_dont_require_grad")
def test_no_grad_results_do_not_require_grad(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=("leaf", "view", "nonleaf"))
    computations = tuple(c for c in _COMPUTATIONS if ex.has_kernel(*c, (x.dtype,)))
    name, compute = ex.draw(st.sampled_from(computations), "computation")
    with torch.no_grad():
        y = compute(x.tensor)
    expect(
        "nograd.results_dont_require_grad",
        (y.requires_grad, y.grad_fn) == (False, None),
        f"{name} under no_grad: requires_grad={y.requires_grad}, grad_fn={y.grad_fn}",
    )


@property_test("nograd.view_inplace_raises")
def test_view_from_no_grad_refuses_inplace_with_grad(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=("leaf", "view", "nonleaf"), layout_kinds=WRITABLE_LAYOUTS)
    view = ex.draw(views(x.shape, x.tensor.is_contiguous(), writable=True), "view")
    with torch.no_grad():
        v = view(x.tensor)
    write = ex.draw(st.sampled_from(writes_for(x.dtype, device=x.device)), "write")
    value = ex.draw(elements(x.dtype), "value")
    expect_raises(
        "nograd.view_inplace_raises",
        "NO_GRAD_VIEW_INPLACE",
        lambda: write.apply(v, value),
        f"{write} with grad on, on {view} made under no_grad",
    )
