"""copy_(): in place into dst's own memory, broadcast and cast, with gradient to src."""

from __future__ import annotations

import warnings

import numpy as np
import torch
from hypothesis import assume
from hypothesis import strategies as st

from conformance.check import (
    attributed_to,
    expect,
    expect_raises,
    expect_values,
    shares_storage,
    storage_id,
)
from conformance.harness import Example, property_test
from conformance.spellings import COPIES
from conformance.summing import summed_tolerance
from oracle.nodes import sum_to
from strategies.dtypes import DTYPES
from strategies.layouts import WRITABLE_LAYOUTS
from strategies.shapes import broadcast_sources
from strategies.tensors import DTYPE_NAMES, tensor_cases


def cast(values: np.ndarray, src: str, dst: str) -> np.ndarray:
    """What torch's copy_ makes of `values` (in src's dtype) in dst's dtype."""
    kind = DTYPES[dst].kind
    if kind == "bool":
        return values != 0
    if kind == "complex":
        return values.astype(np.complex128)
    real = values.real if np.iscomplexobj(values) else values
    if kind == "int":
        return np.trunc(real).astype(np.int64)
    return real.astype(np.float64)


def _draw_pair(ex: Example, dst_roles: tuple[str, ...], src_roles: tuple[str, ...], grad=False):
    kinds = ("float", "complex") if grad else None
    dst = ex.tensor("dst", roles=dst_roles, layout_kinds=WRITABLE_LAYOUTS, dtypes=ex.dtypes(kinds))
    src_device = ex.other_device("src device")
    src = ex.draw(_src_cases(ex, src_device, dst.shape, src_roles, ex.dtypes(kinds)), "src")
    ex.record(src.dtype)
    if dst.dtype == "uint8":  # a negative value has no uint8 it must become
        assume(np.all(np.real(src.values) >= 0))
    return dst, src


def _src_cases(ex, device, target, roles, dtypes):
    return tensor_cases(device, dtypes, roles=roles, shapes=broadcast_sources(target))


@property_test("copy.values_copied")
def test_copy_fills_dst_with_cast_broadcast_src(device, data):
    ex = Example(data, device)
    dst, src = _draw_pair(ex, ("plain", "nonleaf"), ("plain", "leaf", "view", "nonleaf"))
    copy = ex.draw(st.sampled_from(COPIES), "spelling")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex -> real warns that it drops the imaginary part
        with attributed_to("copy.values_copied", str(copy)):
            result = copy(dst.tensor, src.tensor)
    expect("copy.values_copied", result is dst.tensor, f"{copy} did not return dst itself")
    expected = np.broadcast_to(cast(src.values, src.dtype, dst.dtype), dst.shape)
    expect_values("copy.values_copied", dst.tensor, expected, f"dst after {copy}")


@property_test("copy.keeps_storage")
def test_copy_writes_into_dst_own_memory(device, data):
    ex = Example(data, device)
    dst, src = _draw_pair(ex, ("plain", "nonleaf"), ("plain", "leaf", "view", "nonleaf"))
    copy = ex.draw(st.sampled_from(COPIES), "spelling")
    before = (storage_id(dst.tensor), dst.tensor.data_ptr(), dst.tensor.stride())
    src_version = src.tensor._version
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copy(dst.tensor, src.tensor)
    after = (storage_id(dst.tensor), dst.tensor.data_ptr(), dst.tensor.stride())
    expect(
        "copy.keeps_storage",
        after == before,
        f"{copy} moved dst: (storage, data_ptr, strides) {before} -> {after}",
    )
    expect(
        "copy.keeps_storage", not shares_storage(dst.tensor, src.tensor), "dst shares src's storage"
    )
    expect_values("copy.keeps_storage", src.tensor, src.values, f"src after {copy}")
    expect(
        "copy.keeps_storage",
        src.tensor._version == src_version,
        f"{copy} bumped src's version from {src_version} to {src.tensor._version}",
    )


@property_test("copy.result_in_graph")
def test_copy_from_grad_src_puts_dst_in_graph(device, data):
    ex = Example(data, device)
    dst, src = _draw_pair(ex, ("plain", "nonleaf"), ("plain", "leaf", "view", "nonleaf"), grad=True)
    copy = ex.draw(st.sampled_from(COPIES), "spelling")
    was_tracked = dst.tensor.requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copy(dst.tensor, src.tensor)
    tracked = was_tracked or src.tensor.requires_grad
    got = (dst.tensor.requires_grad, dst.tensor.grad_fn is not None)
    expect(
        "copy.result_in_graph",
        got == (tracked, tracked),
        f"after {copy} from a {src.role} src into a {dst.role} dst: requires_grad={got[0]}, "
        f"grad_fn {'set' if got[1] else 'None'}; expected requires_grad={tracked}",
    )


@property_test("copy.grad_flows_to_src")
def test_gradient_through_copy_reaches_src(device, data):
    ex = Example(data, device)
    dst, src = _draw_pair(ex, ("plain", "nonleaf"), ("leaf", "view", "nonleaf"), grad=True)
    copy = ex.draw(st.sampled_from(COPIES), "spelling")
    grad = ex.gradient(dst)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copy(dst.tensor, src.tensor)
        with attributed_to("copy.grad_flows_to_src", f"backward through {copy}"):
            dst.tensor.backward(torch.tensor(grad, dtype=dst.tensor.dtype, device=device))
    reaching = sum_to(grad, src.shape)
    if not np.iscomplexobj(np.zeros(0, DTYPES[src.dtype].compute_dtype)):
        reaching = reaching.real
    expected = src.grad_for_root(reaching)
    got = src.root.grad
    expect("copy.grad_flows_to_src", got is not None, f"no gradient reached src through {copy}")
    expect(
        "copy.grad_flows_to_src",
        got.dtype == src.root.dtype and got.shape == src.root.shape,
        f"src's gradient is {got.dtype}{list(got.shape)}, src is "
        f"{src.root.dtype}{list(src.root.shape)}",
    )
    expect_values(
        "copy.grad_flows_to_src",
        got,
        expected,
        f"src's gradient through {copy}",
        summed_tolerance(DTYPE_NAMES[got.dtype], grad, src),
    )


@property_test("copy.overwritten_gets_no_grad")
def test_overwritten_values_get_zero_gradient(device, data):
    ex = Example(data, device)
    dst, src = _draw_pair(ex, ("nonleaf",), ("plain", "leaf", "view", "nonleaf"), grad=True)
    copy = ex.draw(st.sampled_from(COPIES), "spelling")
    grad = ex.gradient(dst)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copy(dst.tensor, src.tensor)
        dst.tensor.backward(torch.tensor(grad, dtype=dst.tensor.dtype, device=device))
    got = dst.root.grad
    expect(
        "copy.overwritten_gets_no_grad",
        got is None or not torch.any(got != 0),
        f"the values {copy} overwrote received gradient {got}",
    )


@property_test("copy.into_grad_leaf_raises")
def test_copy_into_grad_leaf_raises(device, data):
    ex = Example(data, device)
    dst, src = _draw_pair(ex, ("leaf",), ("plain", "leaf", "view", "nonleaf"), grad=True)
    copy = ex.draw(st.sampled_from(COPIES), "spelling")
    version = dst.tensor._version
    expect_raises(
        "copy.into_grad_leaf_raises",
        "INPLACE_ON_LEAF",
        lambda: copy(dst.tensor, src.tensor),
        f"{copy} into a leaf that requires grad",
    )
    expect_values(
        "copy.into_grad_leaf_raises", dst.tensor, dst.values, "dst after the refused copy_"
    )
    expect(
        "copy.into_grad_leaf_raises",
        dst.tensor._version == version,
        f"the refused copy_ bumped dst's version from {version} to {dst.tensor._version}",
    )
