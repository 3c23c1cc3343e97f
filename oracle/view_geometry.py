"""View ops: the geometry torch gives each view, and how its gradient maps back.

Each takes the input's (shape, strides, offset) and the op's params and returns
(shape, strides, offset, backward), backward(g, in_shape) mapping a gradient of
the view's shape to one of the input's, or raises OracleError as torch would.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .errors import ErrorKind, OracleError
from .geometry import Shape, expand_geometry, numel, view_strides
from .nodes import sum_to

Geom = tuple[Shape, Shape, int, Callable[[np.ndarray, Shape], np.ndarray]]
INDEX, SHAPE = ErrorKind.INDEX_OUT_OF_RANGE, ErrorKind.INVALID_SHAPE


def wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)  # a 0-d tensor takes dims -1 and 0
    if not -n <= dim < n:
        raise OracleError(INDEX, f"Dimension out of range (got {dim})")
    return dim % n


def _reshape_back(g: np.ndarray, in_shape: Shape) -> np.ndarray:
    return g.reshape(in_shape)


def index_is_identity(shape: Shape, index: tuple, open_slices: bool = True) -> bool:
    """torch's applySlicing makes no op for these items (x[()], x[0:], x[:, :]);
    with `open_slices` False (older releases, see oracle.releases) only
    for slices whose stop is the size itself (x[0:n])."""
    return all(
        isinstance(i, slice)
        and i.start in (None, 0)
        and i.step in (None, 1)
        and ((i.stop is None or i.stop >= n) if open_slices else i.stop == n)
        for i, n in zip(index, shape, strict=False)
    )


def getitem(
    shape: Shape,
    strides: Shape,
    offset: int,
    index: object,
    on_op: Callable = lambda: None,
    open_slices: bool = True,
) -> Geom:
    """Basic indexing, item by item as applySlicing does: on_op() runs when the first
    select/slice op is made (after an int's bounds check; not for whole-dim slices)."""
    index = index if isinstance(index, tuple) else (index,)
    if len(index) > len(shape):
        raise OracleError(INDEX, "too many indices for tensor")
    out_shape, out_strides, key = [], [], []
    for d, item in enumerate(index):
        n, s = shape[d], strides[d]
        if isinstance(item, slice):
            if not index_is_identity((n,), (item,), open_slices):
                on_op()
            start, stop, step = item.indices(n)
            stop = max(stop, start)
            out_shape.append(len(range(start, stop, step)))
            out_strides.append(s * step)
            offset += start * s
            key.append(slice(start, stop, step))
        else:
            if not -n <= int(item) < n:
                raise OracleError(INDEX, f"index {item} is out of bounds for dimension {d}")
            on_op()
            offset += (int(item) % n) * s
            key.append(int(item) % n)
    key = tuple(key)

    def backward(g: np.ndarray, in_shape: Shape) -> np.ndarray:
        if index_is_identity(in_shape, index, open_slices):  # AliasBackward0: grad as it is
            return g
        out = np.zeros(in_shape, g.dtype)
        out[key] = g
        return out

    return (
        tuple(out_shape) + shape[len(index) :],
        tuple(out_strides) + strides[len(index) :],
        offset,
        backward,
    )


def select(shape: Shape, strides: Shape, offset: int, dim: int, index: int) -> Geom:
    if not shape:
        raise OracleError(INDEX, "select() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, len(shape))
    if not -shape[dim] <= index < shape[dim]:
        raise OracleError(INDEX, f"select(): index {index} out of range")
    return getitem(shape, strides, offset, (slice(None),) * dim + (index,))


def permute(shape: Shape, strides: Shape, offset: int, dims: tuple) -> Geom:
    if len(dims) != len(shape):
        raise OracleError(SHAPE, "does not match the length of the desired ordering of dims")
    dims = tuple(wrap_dim(d, len(shape)) for d in dims)
    if len(set(dims)) != len(dims):
        raise OracleError(SHAPE, "permute(): duplicate dims are not allowed.")
    inverse = tuple(np.argsort(dims))
    return (
        tuple(shape[d] for d in dims),
        tuple(strides[d] for d in dims),
        offset,
        lambda g, in_shape: g.transpose(inverse) if dims else g,
    )


def transpose(shape: Shape, strides: Shape, offset: int, d0: int, d1: int) -> Geom:
    d0, d1 = wrap_dim(d0, len(shape)), wrap_dim(d1, len(shape))
    dims = list(range(len(shape)))
    if dims:
        dims[d0], dims[d1] = dims[d1], dims[d0]
    return permute(shape, strides, offset, tuple(dims))


def t(shape: Shape, strides: Shape, offset: int) -> Geom:
    if len(shape) > 2:
        raise OracleError(SHAPE, "t() expects a tensor with <= 2 dimensions")
    return transpose(shape, strides, offset, 0, -1 if shape else 0)


def infer_shape(target: tuple, n: int) -> Shape:
    """infer_size: fill in one -1, or raise as torch does."""
    target = tuple(int(s) for s in target)
    if sum(s == -1 for s in target) > 1:
        raise OracleError(SHAPE, "only one dimension can be inferred")
    if any(s < -1 for s in target):
        raise OracleError(SHAPE, "invalid shape dimension")
    known = numel(s for s in target if s != -1)
    if -1 in target and known == 0 and n == 0:
        raise OracleError(
            SHAPE, "the unspecified dimension size -1 can be any value and is ambiguous"
        )
    if (-1 in target and (known == 0 or n % known)) or (-1 not in target and known != n):
        raise OracleError(SHAPE, f"shape is invalid for input of size {n}")
    return tuple(n // known if s == -1 else s for s in target)


def view(shape: Shape, strides: Shape, offset: int, target: tuple) -> Geom:
    new_shape = infer_shape(target, numel(shape))
    new_strides = view_strides(shape, strides, new_shape)
    if new_strides is None:
        raise OracleError(
            ErrorKind.VIEW_INCOMPATIBLE,
            "view size is not compatible with input tensor's size and stride",
        )
    return new_shape, new_strides, offset, _reshape_back


def reshape(shape: Shape, strides: Shape, offset: int, target: tuple) -> Geom:
    """Like view, but strides None: torch copies (clone + _unsafe_view), no view."""
    new_shape = infer_shape(target, numel(shape))
    return new_shape, view_strides(shape, strides, new_shape), offset, _reshape_back


def expand(shape: Shape, strides: Shape, offset: int, target: tuple) -> Geom:
    res = expand_geometry(shape, strides, tuple(target))
    if isinstance(res, str):
        raise OracleError(ErrorKind.NOT_BROADCASTABLE, res)
    return res[0], res[1], offset, lambda g, in_shape: sum_to(g, in_shape)


def unsqueeze(shape: Shape, strides: Shape, offset: int, dim: int) -> Geom:
    n = len(shape)
    if not -(n + 1) <= dim <= n:
        raise OracleError(INDEX, f"Dimension out of range (got {dim})")
    dim %= n + 1
    stride = 1 if dim >= n else shape[dim] * strides[dim]
    return (
        shape[:dim] + (1,) + shape[dim:],
        strides[:dim] + (stride,) + strides[dim:],
        offset,
        _reshape_back,
    )


def squeeze(shape: Shape, strides: Shape, offset: int, dim: int | tuple | None) -> Geom:
    """squeeze(dim), squeeze(dims) or squeeze() (dim None): the named dims of
    size 1 go, every one of them without a dim; the others stay."""
    n = len(shape)
    if dim is None:
        named = range(n)
    else:
        named = [wrap_dim(d, n) for d in (dim if isinstance(dim, tuple) else (dim,))]
        if len(set(named)) != len(named):
            raise OracleError(SHAPE, "appears multiple times in the list of dims")
    gone = {d for d in named if n and shape[d] == 1}
    if not gone:  # nothing to squeeze: the gradient passes unchanged
        return shape, strides, offset, lambda g, in_shape: g
    kept = [d for d in range(n) if d not in gone]
    return (
        tuple(shape[d] for d in kept),
        tuple(strides[d] for d in kept),
        offset,
        _reshape_back,
    )
