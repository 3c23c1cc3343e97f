"""Writes at indexed positions: x[i] = v with a tensor index (which is
index_put_), index_put_, masked_fill_, index_add_, index_copy_ and scatter_
write the indexed elements of x in x's own memory, and their gradient reaches
the source from the elements it wrote. The expected values and gradients come
from the oracle's formulas (oracle.index_ops)."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.check import expect, expect_values, storage_id
from conformance.harness import Example, property_test
from oracle import index_ops
from strategies.dtypes import DTYPES, elements
from strategies.layouts import WRITABLE_LAYOUTS
from strategies.tensors import TORCH_DTYPES

ROW_WRITES = ("setitem", "index_put_", "index_add_", "index_copy_", "scatter_", "masked_fill_")


def _long(values, device: str) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=device)


def _draw_write(ex: Example, shape: tuple, dtype: str):
    """(name, params as index_ops takes them, source shape, torch call(x, src))."""
    kinds = ROW_WRITES if DTYPES[dtype].kind != "bool" else ROW_WRITES[:2] + ROW_WRITES[3:]
    name = ex.draw(st.sampled_from(kinds), "indexed write")
    n, device = shape[0], ex.device
    if name in ("setitem", "index_put_", "index_copy_", "index_add_"):
        distinct = name != "index_add_"
        rows = ex.draw(
            st.lists(st.integers(0, n - 1), min_size=1, max_size=n + 1, unique=distinct), "rows"
        )
        src = (len(rows), *shape[1:])
        if name == "setitem":
            return name, (rows,), src, lambda x, v: x.__setitem__(_long(rows, device), v)
        if name == "index_put_":
            return name, (rows,), src, lambda x, v: x.index_put_((_long(rows, device),), v)
        return name, (0, rows), src, lambda x, v: getattr(x, name)(0, _long(rows, device), v)
    if name == "scatter_":
        order = ex.draw(st.permutations(range(n)), "scatter order")
        index = np.broadcast_to(np.asarray(order).reshape((n,) + (1,) * (len(shape) - 1)), shape)
        return name, (0, index.tolist()), shape, lambda x, v: x.scatter_(0, _long(index, device), v)
    mask = ex.draw(hnp.arrays(np.bool_, shape), "mask")
    value = ex.draw(elements(dtype), "value")
    call = lambda x, v: x.masked_fill_(torch.tensor(mask, device=device), value)  # noqa: E731
    return name, (mask.tolist(), value), None, call


_FORMULAS = {
    "setitem": (index_ops.put_fwd, index_ops.put_bwd),
    "index_put_": (index_ops.put_fwd, index_ops.put_bwd),
    "index_add_": (index_ops.add_fwd, index_ops.add_bwd),
    "index_copy_": (index_ops.copy_fwd, index_ops.copy_bwd),
    "scatter_": (index_ops.scatter_fwd, index_ops.scatter_bwd),
    "masked_fill_": (index_ops.mask_fwd, index_ops.mask_bwd),
}


def _source(ex: Example, shape, dtype: str, label: str) -> np.ndarray:
    return ex.draw(hnp.arrays(DTYPES[dtype].compute_dtype, shape, elements=elements(dtype)), label)


@property_test("index.writes_in_place", "version.bumps_on_inplace")
def test_indexed_writes_change_the_indexed_elements_in_place(device, data):
    ex = Example(data, device)
    x = ex.tensor(
        "x",
        roles=("plain", "nonleaf"),
        layout_kinds=WRITABLE_LAYOUTS,
        shapes=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
    )
    name, params, src_shape, call = _draw_write(ex, x.shape, x.dtype)
    src = None if src_shape is None else _source(ex, src_shape, x.dtype, "source")
    before = (storage_id(x.tensor), x.tensor.data_ptr(), x.tensor._version)
    v = None if src is None else torch.tensor(src, dtype=TORCH_DTYPES[x.dtype], device=device)
    result = call(x.tensor, v)
    fwd = _FORMULAS[name][0]
    expected = fwd(x.values, src, params)
    expect_values("index.writes_in_place", x.tensor, expected, f"x after {name}{params}")
    after = (storage_id(x.tensor), x.tensor.data_ptr(), x.tensor._version)
    expect("index.writes_in_place", after[:2] == before[:2], f"{name} moved x: {before} -> {after}")
    expect(
        "version.bumps_on_inplace",
        after[2] > before[2],
        f"{name} left x's version at {after[2]} (was {before[2]})",
    )
    if result is not None:
        expect("index.writes_in_place", result is x.tensor, f"{name} returned another tensor")


@property_test("index.grad_to_source")
def test_gradient_of_an_indexed_write_reaches_the_source(device, data):
    ex = Example(data, device)
    dtype = ex.draw(st.sampled_from(ex.grad_dtypes()), "dtype")
    ex.record(dtype)
    shape = ex.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), "shape")
    name, params, src_shape, call = _draw_write(ex, shape, dtype)
    root_values = _source(ex, shape, dtype, "x")
    tdtype = TORCH_DTYPES[dtype]
    root = torch.tensor(root_values, dtype=tdtype, device=device, requires_grad=True)
    base = root * 1
    src = None
    if src_shape is not None:
        src = torch.tensor(
            _source(ex, src_shape, dtype, "source"), dtype=tdtype, device=device, requires_grad=True
        )
    call(base, src)
    g = _source(ex, shape, dtype, "gradient")
    assume(np.all(np.isfinite(g)))
    base.backward(torch.tensor(g, dtype=tdtype, device=device))
    to_self, to_src = _FORMULAS[name][1](g, params, src_shape)
    expect_values("index.grad_to_source", root.grad, to_self, f"x's gradient through {name}")
    if src is not None:
        expect("index.grad_to_source", src.grad is not None, f"no gradient reached {name}'s source")
        expect_values("index.grad_to_source", src.grad, to_src, "the source's gradient")
