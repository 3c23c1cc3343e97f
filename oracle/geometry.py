"""Strided geometry: the layout rules torch uses for views and new results.

A geometry is (offset, shape, strides), in elements. Everything here is pure
integer arithmetic on tuples; no values are touched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Shape = tuple[int, ...]


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def contiguous_strides(shape: Sequence[int]) -> Shape:
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= max(size, 1)
    return tuple(reversed(strides))


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    if numel(shape) == 0:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def is_dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """torch's is_non_overlapping_and_dense."""
    if len(shape) == 1:
        return shape[0] < 2 or strides[0] == 1
    order = sorted(range(len(shape)), key=lambda d: (shape[d] < 2, strides[d] if shape[d] >= 2 else 0))
    need = 1
    for d in order:
        if shape[d] < 2:
            return True
        if strides[d] != need:
            return False
        need *= shape[d]
    return True


def has_internal_overlap(shape: Sequence[int], strides: Sequence[int]) -> bool:
    return any(st == 0 and sz > 1 for sz, st in zip(shape, strides))


def _sort_dims(shape: Sequence[int], operand_strides: Sequence[Sequence[int]]) -> list[int]:
    """TensorIterator::reorder_dimensions: fastest-moving dimension first."""
    ndim = len(shape)
    perm = list(range(ndim - 1, -1, -1))

    def should_swap(d0: int, d1: int) -> int:
        for strides in operand_strides:
            s0, s1 = strides[d0], strides[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    for i in range(1, ndim):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            cmp = should_swap(perm[dim0], perm[dim1])
            if cmp > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif cmp < 0:
                break
    return perm


def infer_dense_strides(shape: Sequence[int], strides: Sequence[int]) -> Shape:
    """Strides keeping the input's layout permutation (empty_like, preserve)."""
    if len(shape) <= 1:
        return (1,) * len(shape)
    out, acc = [0] * len(shape), 1
    for d in _sort_dims(shape, [strides]):
        out[d] = acc
        if shape[d] > 1:
            acc *= shape[d]
    return tuple(out)


def preserve_strides(shape: Sequence[int], strides: Sequence[int]) -> Shape:
    """Strides of clone()/zeros_like() under memory_format=preserve."""
    if is_dense(shape, strides):
        return tuple(strides)
    return infer_dense_strides(shape, strides)


def broadcast_shapes(*shapes: Sequence[int]) -> Shape | None:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        sizes = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def elementwise_strides(shape: Shape, operands: Sequence[tuple[Shape, Shape]]) -> Shape:
    """Output strides TensorIterator picks for an out-of-place op.

    operands: (shape, strides) of every tensor input, python scalars as ((), ()).
    """
    if all(s == shape for s, _ in operands):
        if all(is_contiguous(s, st) for s, st in operands):
            return contiguous_strides(shape)
        if all(is_dense(s, st) for s, st in operands):
            first = operands[-1][1]
            if all(st == first for _, st in operands):
                return tuple(first)
    ndim = len(shape)
    full = []
    for s, st in operands:
        off = ndim - len(s)
        row = [0] * ndim
        for i, (size, stride) in enumerate(zip(s, st)):
            row[off + i] = 0 if (size == 1 and shape[off + i] != 1) else stride
        full.append(row)
    perm = _sort_dims(shape, full)
    if perm == list(range(ndim - 1, -1, -1)):
        return contiguous_strides(shape)
    out, acc = [0] * ndim, 1
    for d in perm:
        out[d] = acc
        acc *= shape[d]
    return tuple(out)


def overlap_status(a: tuple, b: tuple) -> str:
    """get_overlap_status for two geometries (storage, offset, shape, strides)."""
    sa, oa, sha, sta = a
    sb, ob, shb, stb = b
    if numel(sha) == 0 or numel(shb) == 0:
        return "no"
    if not is_dense(sha, sta) or not is_dense(shb, stb):
        return "too_hard"
    if sa is not sb:
        return "no"
    ea, eb = oa + numel(sha), ob + numel(shb)
    if oa == ob and ea == eb:
        return "full" if tuple(sta) == tuple(stb) else "partial"
    return "partial" if oa < eb and ob < ea else "no"


def view_strides(old_shape: Shape, old_strides: Shape, new_shape: Shape) -> Shape | None:
    """at::detail::computeStride: strides for a view, or None if impossible."""
    if not old_shape:
        return (1,) * len(new_shape)
    n = numel(old_shape)
    if n == 0 and tuple(old_shape) == tuple(new_shape):
        return tuple(old_strides)
    new_strides = [0] * len(new_shape)
    if n == 0:
        for d in range(len(new_shape) - 1, -1, -1):
            new_strides[d] = 1 if d == len(new_shape) - 1 else max(new_shape[d + 1], 1) * new_strides[d + 1]
        return tuple(new_strides)
    view_d = len(new_shape) - 1
    chunk_base = old_strides[-1]
    tensor_numel, view_numel = 1, 1
    for td in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[td]
        if td == 0 or (old_shape[td - 1] != 1 and old_strides[td - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if td > 0:
                chunk_base = old_strides[td - 1]
                tensor_numel, view_numel = 1, 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def expand_geometry(shape: Shape, strides: Shape, target: Sequence[int]) -> tuple[Shape, Shape] | str:
    """inferExpandGeometry; returns (shape, strides) or an error message."""
    ndim, tdim = len(target), len(shape)
    if ndim < tdim:
        return "the number of sizes provided must be greater or equal to the number of dimensions in the tensor"
    out_shape, out_strides = [0] * ndim, [0] * ndim
    for i in range(ndim - 1, -1, -1):
        dim = tdim - 1 - (ndim - 1 - i)
        size = shape[dim] if dim >= 0 else 1
        stride = strides[dim] if dim >= 0 else (out_shape[i + 1] * out_strides[i + 1] if i + 1 < ndim else 1)
        want = target[i]
        if want == -1:
            if dim < 0:
                return "isn't allowed in a leading, non-existing dimension"
            want = size
        if size != want:
            if size != 1:
                return "must match the existing size"
            size, stride = want, 0
        out_shape[i], out_strides[i] = size, stride
    return tuple(out_shape), tuple(out_strides)
