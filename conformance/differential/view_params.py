"""Parameters for the view ops of tensor_view.rst whose arguments depend on each
other (a dim, then a start and length that fit it; a split size, then an output
index that exists). Each chooser takes the step's draw and the tensor's shape
and returns the op's params, or None when the op does not apply to that shape.
Only valid calls are drawn: the ops' argument checks are not what the rules are
about.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.differential.choices import ints, one_of
from oracle.geometry import is_contiguous
from oracle.view_ops import chunk_sizes, section_sizes, split_sizes

Shape = tuple[int, ...]


def _dim(draw, shape: Shape, sized: bool = False) -> int | None:
    """A dim of shape (one of size > 0 if `sized`); now and then as a negative index."""
    dims = tuple(d for d, n in enumerate(shape) if n > 0 or not sized)
    if not dims:
        return None
    d = draw(one_of(dims))
    return d - len(shape) if draw(ints(0, 3)) == 0 else d


def _pick(draw, count: int) -> int:
    """An output index of `count` outputs; now and then counted from the end."""
    k = draw(ints(0, count - 1))
    return k - count if draw(ints(0, 3)) == 0 else k


def _narrow(draw, shape: Shape):
    d = _dim(draw, shape)
    if d is None:
        return None
    n = shape[d]
    start = draw(ints(0, n))
    return (d, start, draw(ints(0, n - start)))


def _diagonal(draw, shape: Shape):
    if len(shape) < 2:
        return None
    d1, d2 = draw(one_of(tuple((a, b) for a in range(len(shape)) for b in range(len(shape)))))
    if d1 == d2:
        d2 = (d1 + 1) % len(shape)
    return (draw(ints(-2, 2)), d1, d2)


def _two_dims(draw, shape: Shape):
    if not shape:
        return None
    return (_dim(draw, shape), _dim(draw, shape))


def _unflatten(draw, shape: Shape):
    d = _dim(draw, shape)
    if d is None or shape[d] == 0:
        return None
    n = shape[d]
    a = draw(one_of(tuple(k for k in range(1, n + 1) if n % k == 0)))
    sizes = (a, n // a)
    return (d, (-1, sizes[1]) if draw(ints(0, 3)) == 0 else sizes)


def _unfold(draw, shape: Shape):
    d = _dim(draw, shape, sized=True)
    if d is None:
        return None
    return (d, draw(ints(1, shape[d])), draw(ints(1, 3)))


def _as_strided(draw, shape: Shape, contiguous: bool, offset: int):
    """A window inside the tensor's own elements (which must be laid out
    contiguously), so that its gradient lands on them."""
    n = 1
    for size in shape:
        n *= size
    if not contiguous or n == 0:
        return None
    size = tuple(draw(ints(1, 3)) for _ in range(draw(ints(1, 2))))
    stride = tuple(draw(ints(0, 2)) for _ in size)
    reach = sum((a - 1) * s for a, s in zip(size, stride, strict=True))
    if reach >= n:
        return None
    return (size, stride, offset + draw(ints(0, n - 1 - reach)))


def _rank(low: int, high: int | None = None) -> Callable:
    """No params, for tensors of rank low..high (no upper bound if None)."""

    def params(draw, shape: Shape):
        fits = low <= len(shape) and (high is None or len(shape) <= high)
        return () if fits else None

    return params


def _unbind(draw, shape: Shape):
    d = _dim(draw, shape, sized=True)
    return None if d is None else (d, _pick(draw, shape[d]))


def _split(draw, shape: Shape):
    d = _dim(draw, shape, sized=True)
    if d is None:
        return None
    size = draw(ints(1, shape[d]))
    return (size, d, _pick(draw, len(split_sizes(shape[d], size))))


def _split_with_sizes(draw, shape: Shape):
    d = _dim(draw, shape, sized=True)
    if d is None:
        return None
    n, sizes = shape[d], []
    while sum(sizes) < n and len(sizes) < 3:
        sizes.append(draw(ints(0, n - sum(sizes))))
    sizes[-1] += n - sum(sizes)
    return (sizes, d, _pick(draw, len(sizes)))


def _chunk(draw, shape: Shape):
    d = _dim(draw, shape, sized=True)
    if d is None:
        return None
    chunks = draw(ints(1, shape[d] + 1))
    return (chunks, d, _pick(draw, len(chunk_sizes(shape[d], chunks))))


def _tensor_split(draw, shape: Shape):
    d = _dim(draw, shape)
    if d is None:
        return None
    sections = draw(ints(1, 4))
    return (sections, d, _pick(draw, len(section_sizes(shape[d], sections))))


def _even(draw, n: int) -> int:
    return draw(one_of(tuple(k for k in range(1, n + 1) if n % k == 0))) if n else 1


def _hsplit(draw, shape: Shape):
    if not shape:
        return None
    sections = _even(draw, shape[1 if len(shape) > 1 else 0])
    return (sections, _pick(draw, sections))


def _vsplit(draw, shape: Shape):
    if len(shape) < 2:
        return None
    sections = _even(draw, shape[0])
    return (sections, _pick(draw, sections))


CHOOSERS: dict[str, Callable] = {
    "narrow": _narrow,
    "diagonal": _diagonal,
    "movedim": _two_dims,
    "swapaxes": _two_dims,
    "swapdims": _two_dims,
    "unflatten": _unflatten,
    "unfold": _unfold,
    "mT": _rank(2),
    "mH": _rank(2),
    "adjoint": _rank(2),
    "T": _rank(2, 2),  # x.T beyond 2-D, and below, is deprecated
    "H": _rank(2, 2),
    "unbind_k": _unbind,
    "split_k": _split,
    "split_with_sizes_k": _split_with_sizes,
    "chunk_k": _chunk,
    "tensor_split_k": _tensor_split,
    "hsplit_k": _hsplit,
    "vsplit_k": _vsplit,
}
CHOSEN = frozenset(CHOOSERS) | {"as_strided"}


def view_params(draw, op: str, t) -> tuple | None:
    """Params for view op `op` on oracle tensor `t`, or None if it has none that fit."""
    if op == "as_strided":
        return _as_strided(draw, t.shape, is_contiguous(t.shape, t.strides), t.offset)
    return CHOOSERS[op](draw, tuple(t.shape))
