"""Strided geometry: the layout rules torch uses for views and for new results.

A geometry is (offset, shape, strides) in elements; all of this is integer
arithmetic on tuples (each function follows the ATen routine it names).
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


def _packed(shape: Sequence[int], strides: Sequence[int], order: Sequence[int]) -> bool:
    """Dims other than size 1, fastest first in `order`, tile memory without gaps."""
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    return numel(shape) == 0 or _packed(shape, strides, range(len(shape) - 1, -1, -1))


def _channels_last_strides(shape: Sequence[int]) -> Shape:
    out, acc = [0] * 4, 1
    for d in (1, 3, 2, 0):
        out[d], acc = acc, acc * shape[d]
    return tuple(out)


def is_dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """is_non_overlapping_and_dense."""
    if numel(shape) == 0 or len(shape) == 1 and (shape[0] < 2 or strides[0] == 1):
        return True
    big = sorted((strides[d], d) for d in range(len(shape)) if shape[d] >= 2)
    return _packed(shape, strides, [d for _, d in big])


def has_internal_overlap(shape: Sequence[int], strides: Sequence[int]) -> bool:
    return not is_dense(shape, strides) and any(
        st == 0 and n > 1 for n, st in zip(shape, strides, strict=True)
    )


def _sort_dims(shape: Sequence[int], operand_strides: Sequence[Sequence[int]]) -> list[int]:
    """TensorIterator::reorder_dimensions: dims fastest-moving first (ties keep order)."""
    perm = list(range(len(shape) - 1, -1, -1))

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

    for i in range(1, len(shape)):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            cmp = should_swap(perm[dim0], perm[dim1])
            if cmp > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif cmp < 0:
                break
    return perm


def preserve_strides(shape: Sequence[int], strides: Sequence[int]) -> Shape:
    """clone()/zeros_like() (memory_format=preserve): dense strides are kept, others
    become dense in the same order (infer_dense_strides)."""
    if is_dense(shape, strides):
        return tuple(strides)
    if len(shape) <= 1:
        return (1,) * len(shape)
    out, acc = [0] * len(shape), 1
    for d in _sort_dims(shape, [strides]):
        out[d], acc = acc, acc * max(shape[d], 1)
    return tuple(out)


def broadcast_shapes(*shapes: Sequence[int]) -> Shape | None:
    ndim, out = max((len(s) for s in shapes), default=0), []
    for i in range(ndim):
        sizes = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def elementwise_strides(shape: Shape, operands: Sequence[tuple[Shape, Shape]]) -> Shape:
    """The strides TensorIterator gives an out-of-place result; operands are the
    (shape, strides) of its inputs, a python scalar being ((), ())."""
    if all(s == shape for s, _ in operands):  # fast setup
        if all(is_contiguous(s, st) for s, st in operands):
            return contiguous_strides(shape)
        if len(shape) == 4 and all(_packed(s, st, (1, 3, 2, 0)) for s, st in operands):
            return _channels_last_strides(shape)
        if all(is_dense(s, st) and st == operands[-1][1] for s, st in operands):
            return tuple(operands[-1][1])
    ndim, rows = len(shape), []
    for s, st in operands:  # broadcast dims count as stride 0
        off = ndim - len(s)
        rows.append(
            [0] * off
            + [
                0 if n == 1 and shape[off + i] != 1 else x
                for i, (n, x) in enumerate(zip(s, st, strict=True))
            ]
        )
    perm = _sort_dims(shape, rows)
    if perm == list(range(ndim - 1, -1, -1)):
        return contiguous_strides(shape)
    out, acc = [0] * ndim, 1
    for d in perm:
        out[d], acc = acc, acc * shape[d]
    return tuple(out)


def overlap_status(a: tuple, b: tuple) -> str:
    """get_overlap_status of two (storage, offset, shape, strides)."""
    (sa, oa, sha, sta), (sb, ob, shb, stb) = a, b
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
    """computeStride: the strides of a view with new_shape, or None if there is none."""
    if not old_shape:
        return (1,) * len(new_shape)
    if numel(old_shape) == 0:
        return (
            tuple(old_strides)
            if tuple(old_shape) == tuple(new_shape)
            else contiguous_strides(new_shape)
        )
    new_strides = [0] * len(new_shape)
    view_d, chunk_base = len(new_shape) - 1, old_strides[-1]
    tensor_numel = view_numel = 1
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
                chunk_base, tensor_numel, view_numel = old_strides[td - 1], 1, 1
    return tuple(new_strides) if view_d == -1 else None


def expand_geometry(shape: Shape, strides: Shape, target: Sequence[int]) -> tuple | str:
    """inferExpandGeometry: (shape, strides), or torch's complaint."""
    ndim, tdim = len(target), len(shape)
    if ndim < tdim:
        return "the number of sizes provided must be greater or equal to the number of dims"
    out_shape, out_strides = [0] * ndim, [0] * ndim
    for i in range(ndim - 1, -1, -1):
        dim = tdim - 1 - (ndim - 1 - i)
        size, want = (shape[dim] if dim >= 0 else 1), target[i]
        stride = (
            strides[dim]
            if dim >= 0
            else (out_shape[i + 1] * out_strides[i + 1] if i + 1 < ndim else 0)
        )  # 0-d: all 0
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
