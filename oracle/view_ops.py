"""The rest of tensor_view.rst's view ops: windows, reorderings and the outputs of
the multi-output ops (unbind, split, split_with_sizes, chunk, tensor_split,
hsplit, vsplit), one output at a time.

Each function has the signature of the ones in oracle.view_geometry: the input's
(shape, strides, offset) and the op's params in, (shape, strides, offset,
backward) out. Each is written as the NumPy expression that selects the same
elements (`pick(a)` for an array a of the input's shape); the gradient
scatters back along the same selection, so the forward and its backward
cannot disagree about which element went where.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from .errors import ErrorKind, OracleError
from .geometry import Shape, numel
from .view_geometry import Geom, infer_shape, permute, transpose, view, wrap_dim

INDEX, SHAPE = ErrorKind.INDEX_OUT_OF_RANGE, ErrorKind.INVALID_SHAPE


def _scatter(pick: Callable[[np.ndarray], np.ndarray]) -> Callable:
    """backward(g, in_shape): g added back onto the elements `pick` selected."""

    def backward(g: np.ndarray, in_shape: Shape) -> np.ndarray:
        index = pick(np.arange(numel(in_shape)).reshape(in_shape))
        out = np.zeros(numel(in_shape), g.dtype)
        np.add.at(out, np.asarray(index).reshape(-1), np.asarray(g).reshape(-1))
        return out.reshape(in_shape)

    return backward


def _window(shape: Shape, strides: Shape, offset: int, dim: int, start: int, stop: int) -> Geom:
    """The slice start:stop of dim (a narrow; every split output is one)."""
    d = wrap_dim(dim, len(shape))
    key = (slice(None),) * d + (slice(start, stop),)
    return (
        shape[:d] + (stop - start,) + shape[d + 1 :],
        strides,
        offset + start * strides[d],
        _scatter(lambda a: a[key]),
    )


def narrow(shape: Shape, strides: Shape, offset: int, dim: int, start: int, length: int) -> Geom:
    if not shape:
        raise OracleError(INDEX, "narrow() cannot be applied to a 0-dim tensor.")
    n = shape[wrap_dim(dim, len(shape))]
    start = start + n if start < 0 else start
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise OracleError(INDEX, f"start ({start}) + length ({length}) exceeds dimension size")
    return _window(shape, strides, offset, dim, start, start + length)


def diagonal(shape: Shape, strides: Shape, offset: int, off: int, d1: int, d2: int) -> Geom:
    d1, d2 = wrap_dim(d1, len(shape)), wrap_dim(d2, len(shape))
    if d1 == d2:
        raise OracleError(SHAPE, "diagonal dimensions cannot be identical")
    size = max(min(shape[d1], shape[d2] - off) if off >= 0 else min(shape[d1] + off, shape[d2]), 0)
    if size:
        offset += off * strides[d2] if off >= 0 else -off * strides[d1]
    rest = [d for d in range(len(shape)) if d not in (d1, d2)]
    return (
        tuple(shape[d] for d in rest) + (size,),
        tuple(strides[d] for d in rest) + (strides[d1] + strides[d2],),
        offset,
        _scatter(lambda a: np.diagonal(a, off, d1, d2)),
    )


def movedim(shape: Shape, strides: Shape, offset: int, source: int, destination: int) -> Geom:
    n = len(shape)
    source, destination = wrap_dim(source, n), wrap_dim(destination, n)
    if not n:  # a 0-d tensor's dim 0 (or -1) moves nowhere
        return permute(shape, strides, offset, ())
    order = [d for d in range(n) if d != source]
    order.insert(destination, source)
    return permute(shape, strides, offset, tuple(order))


def unflatten(shape: Shape, strides: Shape, offset: int, dim: int, sizes: tuple) -> Geom:
    d = wrap_dim(dim, len(shape))
    sizes = infer_shape(tuple(sizes), shape[d])  # -1 is inferred from this dim alone
    return view(shape, strides, offset, shape[:d] + sizes + shape[d + 1 :])


def unfold(shape: Shape, strides: Shape, offset: int, dim: int, size: int, step: int) -> Geom:
    d = wrap_dim(dim, len(shape))
    n, s = (shape[d], strides[d]) if shape else (1, 1)
    if size > n:
        raise OracleError(SHAPE, f"maximum size for tensor at dimension {d} is {n}")
    if step <= 0:
        raise OracleError(SHAPE, f"step is {step} but must be > 0")
    count = (n - size) // step + 1
    if not shape:
        return (size,), (1,), offset, lambda g, in_shape: g.reshape(in_shape)

    def pick(a: np.ndarray) -> np.ndarray:
        starts = np.arange(count) * step
        taken = np.take(a, starts[:, None] + np.arange(size)[None, :], axis=d)
        return np.moveaxis(taken, d + 1, -1)  # (.., count, .., size)

    return (
        shape[:d] + (count,) + shape[d + 1 :] + (size,),
        strides[:d] + (s * step,) + strides[d + 1 :] + (s,),
        offset,
        _scatter(pick),
    )


def as_strided(
    shape: Shape, strides: Shape, offset: int, size: tuple, stride: tuple, storage_offset: int
) -> Geom:
    """Any window onto the storage. Its gradient is laid out in storage order and
    read back at the input's own elements (AsStridedBackward0)."""
    size, stride = tuple(size), tuple(stride)

    def positions(off: int, sh: Shape, st: Shape) -> np.ndarray:
        idx = np.full(sh, off, dtype=np.int64)
        for d, (n, s) in enumerate(zip(sh, st, strict=True)):
            idx += (np.arange(n) * s).reshape((n,) + (1,) * (len(sh) - d - 1))
        return idx

    def backward(g: np.ndarray, in_shape: Shape) -> np.ndarray:
        mine, theirs = positions(storage_offset, size, stride), positions(offset, shape, strides)
        top = max([int(x.max()) + 1 for x in (mine, theirs) if x.size], default=0)
        buf = np.zeros(top, g.dtype)
        np.add.at(buf, mine.reshape(-1), np.asarray(g).reshape(-1))
        return buf[theirs]

    return size, stride, storage_offset, backward


def mT(shape: Shape, strides: Shape, offset: int) -> Geom:  # noqa: N802 - torch's name
    if len(shape) < 2:
        raise OracleError(SHAPE, "tensor.mT is only supported on matrices or batches of matrices")
    return transpose(shape, strides, offset, -2, -1)


def T(shape: Shape, strides: Shape, offset: int) -> Geom:  # noqa: N802 - torch's name
    """x.T reverses the dims (torch deprecates it beyond 2-D, so it is not drawn there)."""
    return permute(shape, strides, offset, tuple(range(len(shape) - 1, -1, -1)))


# ---- one output of a multi-output op -----------------------------------------------
def _nth(bounds: list[tuple[int, int]], k: int) -> tuple[int, int]:
    """Where output k (counted from the end if negative) starts and stops."""
    if not -len(bounds) <= k < len(bounds):
        raise OracleError(INDEX, "tuple index out of range")
    return bounds[k]


def _end_to_end(sizes: list[int]) -> list[tuple[int, int]]:
    """(start, stop) of pieces of these sizes laid one after another from 0."""
    ends = list(itertools.accumulate(sizes, initial=0))
    return list(zip(ends, ends[1:], strict=False))


def split_sizes(n: int, size: int | list[int]) -> list[int]:
    """split(size): pieces of `size`, the last one shorter; one empty piece if n is 0.
    split(sizes), its list overload, is split_with_sizes."""
    if isinstance(size, list):
        if sum(size) != n or any(s < 0 for s in size):
            raise OracleError(SHAPE, "split_with_sizes expects split_sizes to sum exactly to")
        return list(size)
    if size <= 0 and n:
        raise OracleError(SHAPE, "split_size can only be 0 if dimension size is 0")
    return [min(size, n - i) for i in range(0, n, size)] if n else [0]


def chunk_sizes(n: int, chunks: int) -> list[int]:
    if chunks <= 0:
        raise OracleError(SHAPE, "chunk expects `chunks` to be greater than 0")
    return split_sizes(n, -(-n // chunks) if n else 1)


def section_sizes(n: int, sections: int | list[int]) -> list[int]:
    """The size of each piece of tensor_split (section_bounds)."""
    return [stop - start for start, stop in section_bounds(n, sections)]


def section_bounds(n: int, sections: int | list[int]) -> list[tuple[int, int]]:
    """Where each piece of tensor_split starts and stops along a dim of size n.

    tensor_split(sections): pieces end to end, the first n % sections one longer.
    tensor_split(indices): the slices x[:i0], x[i0:i1], ..., x[ik:] ("input[:2],
    input[2:3], and input[3:]"), each with Python's slice semantics: an index
    below 0 counts from the end, every index is clamped to 0..n, and a slice
    that stops before it starts is empty, at its (clamped) start. Indices that
    decrease make pieces overlap: [4, 2] of 6 is x[:4], x[4:2] (empty, at 4), x[2:].
    """
    if isinstance(sections, list):
        starts, stops = [None, *sections], [*sections, None]
        return [_slice(n, a, b) for a, b in zip(starts, stops, strict=True)]
    if sections <= 0:
        raise OracleError(SHAPE, "number of sections must be larger than 0")
    return _end_to_end([n // sections + (i < n % sections) for i in range(sections)])


def _slice(n: int, start: int | None, stop: int | None) -> tuple[int, int]:
    """x[start:stop] along a dim of size n, as (start, stop) with stop >= start."""
    start, stop, _ = slice(start, stop).indices(n)
    return start, max(stop, start)


def _output(
    shape: Shape, strides: Shape, offset: int, dim: int, bounds: list[tuple[int, int]], k: int
) -> Geom:
    if not shape:
        raise OracleError(INDEX, "cannot be applied to a 0-dim tensor")
    start, stop = _nth(bounds, k)
    return _window(shape, strides, offset, dim, start, stop)


def split_k(shape: Shape, strides: Shape, offset: int, size: int, dim: int, k: int) -> Geom:
    n = shape[wrap_dim(dim, len(shape))] if shape else 0
    return _output(shape, strides, offset, dim, _end_to_end(split_sizes(n, size)), k)


def split_with_sizes_k(
    shape: Shape, strides: Shape, offset: int, sizes: tuple, dim: int, k: int
) -> Geom:
    n = shape[wrap_dim(dim, len(shape))] if shape else 0
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise OracleError(SHAPE, "split_with_sizes expects split_sizes to sum exactly to")
    return _output(shape, strides, offset, dim, _end_to_end(list(sizes)), k)


def chunk_k(shape: Shape, strides: Shape, offset: int, chunks: int, dim: int, k: int) -> Geom:
    n = shape[wrap_dim(dim, len(shape))] if shape else 0
    return _output(shape, strides, offset, dim, _end_to_end(chunk_sizes(n, chunks)), k)


def tensor_split_k(
    shape: Shape, strides: Shape, offset: int, sections: int | list[int], dim: int, k: int
) -> Geom:
    n = shape[wrap_dim(dim, len(shape))] if shape else 0
    return _output(shape, strides, offset, dim, section_bounds(n, sections), k)


# each splitting geometry's piece sizes, from the split dim's size and its arguments
_PIECE_SIZES = {
    split_k: lambda n, p: split_sizes(n, p[0]),
    split_with_sizes_k: lambda n, p: list(p[0]),
    chunk_k: lambda n, p: chunk_sizes(n, p[0]),
    tensor_split_k: lambda n, p: section_sizes(n, p[0]),
}


def piece_number(geom: object, shape: Shape, p: tuple) -> int:
    """Which output of the split the piece `p[-1]` is, counted from 0 (autograd's
    output_nr): k itself, or, counted from the end, k plus the count of pieces."""
    k = p[-1]
    if k >= 0:
        return k
    return k + len(_PIECE_SIZES[geom](shape[wrap_dim(p[-2], len(shape))], p))


def _even(n: int, sections: int, name: str) -> list[int]:
    if sections <= 0 or n % sections:
        raise OracleError(SHAPE, f"{name} attempted to split along dimension")
    return _end_to_end(section_sizes(n, sections))


def hsplit_k(shape: Shape, strides: Shape, offset: int, sections: int, k: int) -> Geom:
    if not shape:
        raise OracleError(SHAPE, "torch.hsplit requires a tensor with at least 1 dimension")
    dim = 1 if len(shape) > 1 else 0
    return _output(shape, strides, offset, dim, _even(shape[dim], sections, "torch.hsplit"), k)


def vsplit_k(shape: Shape, strides: Shape, offset: int, sections: int, k: int) -> Geom:
    if len(shape) < 2:
        raise OracleError(SHAPE, "torch.vsplit requires a tensor with at least 2 dimension")
    return _output(shape, strides, offset, 0, _even(shape[0], sections, "torch.vsplit"), k)


def unbind_k(shape: Shape, strides: Shape, offset: int, dim: int, k: int) -> Geom:
    if not shape:
        raise OracleError(INDEX, "Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, len(shape))
    start, _ = _nth(_end_to_end([1] * shape[d]), k)
    key = (slice(None),) * d + (start,)
    return (
        shape[:d] + shape[d + 1 :],
        strides[:d] + strides[d + 1 :],
        offset + start * strides[d],
        _scatter(lambda a: a[key]),
    )
