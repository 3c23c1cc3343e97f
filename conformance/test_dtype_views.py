"""x.view(dtype): x's bytes read as another dtype. The result shares x's memory
and version counter, has no _base and never requires grad; for a dtype of
another element size the last dim scales by the ratio of the sizes, which
the docstring's conditions must allow (else it raises). Expected values are
NumPy's ndarray.view of x's bytes (bfloat16, which NumPy lacks, as the high
half of a float32)."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st

from conformance.check import (
    attributed_to,
    expect,
    expect_raises,
    expect_values,
    shares_storage,
)
from conformance.harness import Example, property_test
from strategies.dtypes import arrays
from strategies.tensors import TORCH_DTYPES

RULE = "view.dtype_reinterprets"
_NUMPY = {"bfloat16": np.uint16, "bool": np.bool_}


def _bytes_of(values: np.ndarray, dtype: str) -> np.ndarray:
    """`values` as `dtype` stores them, one row of bytes per last-dim row."""
    if dtype == "bfloat16":
        bits = np.asarray(values, np.float32).view(np.uint32) >> np.uint32(16)
        a = bits.astype(np.uint16)
    else:
        a = np.asarray(values).astype(_NUMPY.get(dtype) or getattr(np, dtype))
    return np.require(a, requirements="C")  # (ascontiguousarray makes a 0-d array 1-d)


def _read_as(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Bytes (an array of some dtype) read as `dtype`, along the last dim."""
    a = (raw if raw.ndim else raw.reshape(1)).view(_NUMPY.get(dtype) or getattr(np, dtype))
    if dtype == "bfloat16":
        a = (a.astype(np.uint32) << np.uint32(16)).view(np.float32)
    a = a if raw.ndim else a.reshape(())
    return a.astype(np.complex128 if a.dtype.kind == "c" else a.dtype)


def _itemsize(dtype: str) -> int:
    # (torch.dtype.itemsize is new in 2.1; element_size() is in every release)
    return torch.empty(0, dtype=TORCH_DTYPES[dtype]).element_size()


def _layout(shape, strides, offset, old: str, new: str):
    """The docstring's layout of x.view(new), or None where it must raise."""
    a, b = _itemsize(old), _itemsize(new)
    if a == b:
        return shape, strides, offset
    if not shape or strides[-1] != 1:
        return None
    if a > b:
        r = a // b
        return shape[:-1] + (shape[-1] * r,), tuple(s * r for s in strides[:-1]) + (1,), offset * r
    r = b // a
    if shape[-1] % r or offset % r or any(s % r for s in strides[:-1]):
        return None
    return shape[:-1] + (shape[-1] // r,), tuple(s // r for s in strides[:-1]) + (1,), offset // r


@property_test(RULE)
def test_view_dtype_reads_the_same_bytes(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", dtypes=tuple(d for d in ex.dtypes() if d != "bool"))
    new = ex.draw(st.sampled_from([d for d in ex.dtypes() if d != "bool"]), "dtype")
    t = x.tensor
    if t.numel() == 0:
        return  # (an empty tensor's strides say nothing)
    want = _layout(tuple(t.shape), tuple(t.stride()), t.storage_offset(), x.dtype, new)
    call = f"x.view(torch.{new}) of a {x.dtype} {tuple(t.shape)} x, strides {t.stride()}"
    if want is None:
        expect_raises(RULE, "DTYPE_VIEW_LAYOUT", lambda: t.view(TORCH_DTYPES[new]), call)
        return
    with attributed_to(RULE, call):
        v = t.view(TORCH_DTYPES[new])
    expect(RULE, shares_storage(v, t), f"{call} has its own memory")
    expect(RULE, v._base is None, f"{call} has a _base")
    expect(RULE, not v.requires_grad, f"{call} requires grad")
    got = (tuple(v.shape), tuple(v.stride()), v.storage_offset())
    expect(RULE, got == want, f"{call}: shape, strides, offset {got}, expected {want}")
    expect_values(RULE, v, _read_as(_bytes_of(x.values, x.dtype), new), call)
    if torch._debug_has_internal_overlap(v) != 0:
        return  # (expanded: elements that share memory; 2: torch cannot tell)
    # one memory, one version counter: a write through the view is a write into x
    written = ex.draw(arrays(new, tuple(v.shape)), f"written through x.view(torch.{new})")
    before = t._version
    with torch.no_grad(), attributed_to(RULE, f"{call}.copy_(...)"):
        v.copy_(torch.tensor(written, dtype=TORCH_DTYPES[new], device=device))
    expect(
        RULE,
        t._version > before and v._version == t._version,
        f"versions (x, view) after a write through {call}: {t._version}, {v._version}",
    )
    expect_values(RULE, t, _read_as(_bytes_of(written, new), x.dtype), f"x after {call}.copy_")
