"""Views: shared memory and version counter, the root as _base, CopySlices."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import assume
from hypothesis import strategies as st

from conformance.check import expect, expect_raises, expect_values, shares_storage
from conformance.harness import Example, rule_test
from conformance.writes import writes_for
from strategies.dtypes import arrays, elements
from strategies.layouts import WRITABLE_LAYOUTS
from strategies.programs import LEAF_LAYOUTS, layout_geometry
from strategies.tensors import leaf_tensor
from strategies.views import every_view, views


def _view(ex: Example, x, writable: bool = False, label: str = "view"):
    return ex.draw(views(x.shape, x.tensor.is_contiguous(), writable=writable), label)


@rule_test("view.shares_storage_and_version")
def test_view_shares_storage_and_version(ex):
    x = ex.tensor("base", layout_kinds=WRITABLE_LAYOUTS)
    view = _view(ex, x, writable=True)
    v = view(x.tensor)
    expect(
        "view.shares_storage_and_version",
        shares_storage(v, x.tensor),
        f"{view} has its own storage",
    )
    expect(
        "view.shares_storage_and_version",
        v._version == x.tensor._version,
        f"{view} starts at version {v._version}, its base is at {x.tensor._version}",
    )
    writes = writes_for(x.dtype, device=x.device)
    for target in ex.draw(st.permutations(["view", "base"]), "write order"):
        write = ex.draw(st.sampled_from(writes), f"write through the {target}")
        before = (x.tensor._version, v._version)
        with torch.no_grad():
            write.apply(v if target == "view" else x.tensor, ex.draw(elements(x.dtype), "value"))
        after = (x.tensor._version, v._version)
        expect(
            "view.shares_storage_and_version",
            after[0] == after[1] and after[0] > before[0],
            f"{write} through the {target} of {view} moved (base, view) versions "
            f"{before} -> {after}",
        )
    # and at creation, every other view op that applies
    shape, contiguous = x.shape, x.tensor.is_contiguous()
    for other in ex.draw(every_view(shape, contiguous, writable=True), "every view op"):
        w = other(x.tensor)
        expect(
            "view.shares_storage_and_version",
            shares_storage(w, x.tensor) and w._version == x.tensor._version,
            f"{other} has its own storage or version counter",
        )


@rule_test("view.write_visible")
def test_writes_through_views_are_seen_both_ways(ex):
    x = ex.tensor("base", layout_kinds=WRITABLE_LAYOUTS)
    view = _view(ex, x, writable=True)
    v = view(x.tensor)
    index = view.index_map(x.shape)
    values = x.values.reshape(-1).copy()
    writes = writes_for(x.dtype, device=x.device)
    for target in ex.draw(st.permutations(["view", "base"]), "write order"):
        write = ex.draw(st.sampled_from(writes), f"write through the {target}")
        value = ex.draw(elements(x.dtype), "value")
        with torch.no_grad():
            write.apply(v if target == "view" else x.tensor, value)
        if target == "view":
            values[index] = write.expected(values[index], value)
            expect_values(
                "view.write_visible",
                x.tensor,
                values.reshape(x.shape),
                f"base after {view}.{write}",
            )
        else:
            values = write.expected(values, value)
            expect_values("view.write_visible", v, values[index], f"{view} after base.{write}")


@rule_test("view.base_is_root")
def test_view_base_is_the_root(ex):
    x = ex.tensor("base")
    root = x.tensor._base if x.tensor._base is not None else x.tensor
    t = x.tensor
    chain = []
    for i in range(ex.draw(st.integers(1, 3), "views in the chain")):
        view = ex.draw(views(tuple(t.shape), t.is_contiguous()), f"view {i + 1}")
        chain.append(repr(view))
        t = view(t)
        expect(
            "view.base_is_root",
            t._base is root,
            f"after {' -> '.join(chain)}, _base is "
            f"{'None' if t._base is None else 'an intermediate tensor'}, not the root",
        )


_INPLACE_ON_VIEW = (
    ("mul_({0})", lambda t, s: t.mul_(s), lambda g, s: g * np.conj(s)),
    ("add_({0})", lambda t, s: t.add_(s), lambda g, s: g),
    ("fill_({0})", lambda t, s: t.fill_(s), lambda g, s: np.zeros_like(g)),
    ("zero_()", lambda t, s: t.zero_(), lambda g, s: np.zeros_like(g)),
    ("neg_()", lambda t, s: t.neg_(), lambda g, s: -g),
)


@rule_test("view.inplace_updates_base_grad")
def test_inplace_on_view_updates_base_history(ex):
    dtype = ex.draw(st.sampled_from(ex.grad_dtypes()), "dtype")
    ex.record(dtype)
    from strategies.shapes import shapes

    shape = ex.draw(shapes(), "shape")
    root_values = ex.draw(arrays(dtype, shape), "root values")
    # the root laid out contiguously, transposed, strided or from an offset
    layout = ex.draw(st.sampled_from(("", "", *LEAF_LAYOUTS)), "root layout")
    geometry = layout_geometry(tuple(shape), layout)
    root = leaf_tensor(root_values, dtype, ex.device, True, geometry, layout)
    base = root * 1
    earlier = ex.draw(
        views(shape, base.is_contiguous(), multi_output=False), "view taken before the write"
    )
    u = earlier(base)
    written = ex.draw(
        views(shape, base.is_contiguous(), writable=True, multi_output=False),
        "view written in place",
    )
    name, apply, local_grad = ex.draw(st.sampled_from(_INPLACE_ON_VIEW), "in-place op")
    scalar = ex.draw(elements(dtype), "scalar")
    apply(written(base), scalar)
    through = ex.draw(st.sampled_from(["base", "earlier view"]), "backward through")
    out = base if through == "base" else u
    g = ex.draw(arrays(dtype, tuple(out.shape)), "gradient")
    out.backward(torch.tensor(g, dtype=out.dtype, device=ex.device))
    grad = np.zeros(root_values.size, dtype=np.result_type(g, np.float64))
    index = np.arange(root_values.size) if through == "base" else earlier.index_map(shape)
    np.add.at(grad, np.asarray(index).reshape(-1), g.reshape(-1))
    region = written.index_map(shape).reshape(-1)
    grad[region] = local_grad(grad[region], scalar)
    expect(
        "view.inplace_updates_base_grad",
        root.grad is not None,
        f"no gradient reached the leaf after {written}.{name.format(scalar)}",
    )
    expect_values(
        "view.inplace_updates_base_grad",
        root.grad,
        grad.reshape(shape),
        f"gradient through the {through} after {written}.{name.format(scalar)}",
    )


@rule_test("view.overlapping_write_raises")
def test_write_to_overlapping_memory_raises(ex):
    x = ex.tensor("base", roles=("plain",))
    if x.layout.overlapping:
        t, what = x.tensor, f"a tensor of layout {x.layout}"
    else:
        assume(x.tensor.numel() > 0)
        t, what = x.tensor.expand(2, *x.shape), "x.expand(2, *x.shape)"
    write = ex.draw(
        st.sampled_from(writes_for(x.dtype, overlapping=True, device=x.device)), "write"
    )
    value = ex.draw(elements(x.dtype), "value")
    version = x.tensor._version
    expect_raises(
        "view.overlapping_write_raises",
        "OVERLAPPING_WRITE",
        lambda: write.apply(t, value),
        f"{write} on {what}",
    )
    expect_values("view.overlapping_write_raises", x.tensor, x.values, "values after the refusal")
    expect(
        "view.overlapping_write_raises",
        x.tensor._version == version,
        f"the refused write bumped the version from {version} to {x.tensor._version}",
    )
