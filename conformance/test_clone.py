"""clone(): new memory with the same values, differentiable back to its source."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from conformance.check import (
    dense_non_overlapping,
    expect,
    expect_values,
    shares_storage,
    storage_id,
)
from conformance.harness import Example, property_test
from conformance.spellings import CLONES
from conformance.writes import writes_for
from strategies.dtypes import elements
from strategies.layouts import WRITABLE_LAYOUTS
from strategies.tensors import GRAD_ROLES


def _memory_range(t: torch.Tensor) -> tuple[int, int]:
    """[first, last) bytes a non-empty tensor can touch."""
    span = sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride(), strict=True))
    start = t.data_ptr()
    return start, start + (span + 1) * t.element_size()


@property_test("clone.new_storage")
def test_clone_has_new_storage(device, data):
    ex = Example(data, device)
    x = ex.tensor("source")
    clone = ex.draw(st.sampled_from(CLONES), "spelling")
    y = clone(x.tensor)
    expect(
        "clone.new_storage",
        not shares_storage(y, x.tensor),
        f"{clone} shares its source's storage ({storage_id(y):#x})",
    )
    if y.numel() and x.tensor.numel():
        a, b = _memory_range(x.tensor), _memory_range(y)
        expect(
            "clone.new_storage",
            a[1] <= b[0] or b[1] <= a[0],
            f"{clone} overlaps its source's memory: {a} and {b}",
        )


@property_test("clone.same_values")
def test_clone_has_same_values(device, data):
    ex = Example(data, device)
    x = ex.tensor("source")
    clone = ex.draw(st.sampled_from(CLONES), "spelling")
    y = clone(x.tensor)
    expect(
        "clone.same_values",
        (y.shape, y.dtype, y.device) == (x.tensor.shape, x.tensor.dtype, x.tensor.device),
        f"{clone} is {y.dtype}{list(y.shape)} on {y.device}, source is "
        f"{x.tensor.dtype}{list(x.tensor.shape)} on {x.tensor.device}",
    )
    expect_values("clone.same_values", y, x.values, f"{clone}")


@property_test("clone.write_isolated")
def test_writes_to_clone_and_source_stay_apart(device, data):
    ex = Example(data, device)
    x = ex.tensor("source", layout_kinds=WRITABLE_LAYOUTS)
    clone = ex.draw(st.sampled_from(CLONES), "spelling")
    y = clone(x.tensor)
    write = ex.draw(st.sampled_from(writes_for(x.dtype, device=x.device)), "write to clone")
    value = ex.draw(elements(x.dtype), "value")
    with torch.no_grad():
        write.apply(y, value)
    expect_values("clone.write_isolated", x.tensor, x.values, f"source after clone.{write}")
    clone_values = write.expected(x.values, value)
    write = ex.draw(st.sampled_from(writes_for(x.dtype, device=x.device)), "write to source")
    value = ex.draw(elements(x.dtype), "value")
    with torch.no_grad():
        write.apply(x.tensor, value)
    expect_values("clone.write_isolated", y, clone_values, f"clone after source.{write}")


@property_test("clone.own_version")
def test_clone_has_own_version_counter(device, data):
    ex = Example(data, device)
    x = ex.tensor("source", layout_kinds=WRITABLE_LAYOUTS)
    y = ex.draw(st.sampled_from(CLONES), "spelling")(x.tensor)
    before_clone, before_source = y._version, x.tensor._version
    write = ex.draw(st.sampled_from(writes_for(x.dtype, device=x.device)), "write")
    value = ex.draw(elements(x.dtype), "value")
    target = ex.draw(st.sampled_from(["source", "clone"]), "written")
    with torch.no_grad():
        write.apply(x.tensor if target == "source" else y, value)
    untouched, was = (y, before_clone) if target == "source" else (x.tensor, before_source)
    expect(
        "clone.own_version",
        untouched._version == was,
        f"{write} on the {target} moved the other's version from {was} to {untouched._version}",
    )


@property_test("clone.preserves_strides")
def test_clone_of_dense_tensor_keeps_strides(device, data):
    ex = Example(data, device)
    x = ex.tensor("source")
    if not dense_non_overlapping(x.tensor) or x.tensor.numel() == 0:
        return  # torch documents strides only for dense, non-overlapping inputs
    clone = ex.draw(st.sampled_from(CLONES), "spelling")
    y = clone(x.tensor)
    dims = [d for d in range(x.tensor.dim()) if x.tensor.size(d) > 1]
    expect(
        "clone.preserves_strides",
        all(y.stride(d) == x.tensor.stride(d) for d in dims),
        f"{clone} of a dense tensor with strides {x.tensor.stride()} has strides {y.stride()}",
    )


@property_test("clone.result_in_graph")
def test_clone_joins_the_graph_of_its_source(device, data):
    ex = Example(data, device)
    x = ex.tensor("source")
    clone = ex.draw(st.sampled_from(CLONES), "spelling")
    y = clone(x.tensor)
    tracked = x.tensor.requires_grad
    got = (y.requires_grad, y.grad_fn is not None, y.is_leaf)
    expect(
        "clone.result_in_graph",
        got == (tracked, tracked, not tracked),
        f"{clone} of a {x.role} tensor has requires_grad={got[0]}, grad_fn "
        f"{'set' if got[1] else 'None'}, is_leaf={got[2]}",
    )


@property_test("clone.grad_flows_to_source")
def test_gradient_through_clone_reaches_source(device, data):
    ex = Example(data, device)
    x = ex.tensor("source", roles=GRAD_ROLES)
    clone = ex.draw(st.sampled_from(CLONES), "spelling")
    through_clone = ex.draw(st.integers(1, 4), "scale through clone")
    direct = ex.draw(st.integers(0, 3), "scale on the direct path")
    grad = ex.gradient(x)
    out = clone(x.tensor) * through_clone + x.tensor * direct
    out.backward(torch.tensor(grad, dtype=x.tensor.dtype, device=device))
    expected = x.grad_for_root(grad * (through_clone + direct))
    expect(
        "clone.grad_flows_to_source",
        x.root.grad is not None,
        f"no gradient reached the source through {clone}",
    )
    expect_values("clone.grad_flows_to_source", x.root.grad, expected, f"gradient via {clone}")
