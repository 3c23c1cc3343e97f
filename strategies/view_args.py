"""The argument spaces of the view ops (tensor_view.rst), one per op: the
arguments' classes, and how they are drawn (see strategies.argspace).

The oracle's rows (oracle/view_rows.py) and the property tests' view table
(strategies/views.py) both take their arguments from here. A procedure's
primitives, in their order, are the differential's draws: changing one
changes the programs a seed draws (tools/fingerprint.py).
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import cache

from .argspace import Arg, ArgSpace, Class, Operand, Pick, Undefined

Shape = tuple[int, ...]


# ---- classes ---------------------------------------------------------------------
def _arg(name: str, *classes: Class) -> Arg:
    return Arg(name, classes)


def _size(x: Operand, p: tuple, at: int) -> int:
    """The size of the dim the argument at position `at` names."""
    return x.shape[p[at]]


FROM_START = Class("counted from the start", lambda v, x, p: v >= 0)
FROM_END = Class("counted from the end", lambda v, x, p: v < 0)
SIGNED = (FROM_START, FROM_END)


def _same_dim(at: int) -> tuple[Class, Class]:
    """The dim is the one the argument at `at` names, or another one."""

    def same(v: int, x: Operand, p: tuple) -> bool:
        n = max(len(x.shape), 1)
        return v % n == p[at] % n

    return (
        Class("the same dim", same),
        Class("another dim", lambda v, x, p: not same(v, x, p)),
    )


def _pieces_classes(at_dim: int, how: str) -> tuple[Class, ...]:
    """For split(size) / chunk(chunks) / tensor_split(sections): how the dim
    is cut, the count of pieces being what the op makes of the argument."""

    def count(v: int, x: Operand, p: tuple) -> int:
        return len(pieces(_size(x, p, at_dim), how, v))

    def even(v: int, x: Operand, p: tuple) -> bool:
        return len(set(pieces(_size(x, p, at_dim), how, v))) == 1

    return (
        Class("one piece", lambda v, x, p: count(v, x, p) == 1),
        Class("even pieces", lambda v, x, p: count(v, x, p) > 1 and even(v, x, p)),
        Class("uneven pieces", lambda v, x, p: not even(v, x, p)),
    )


def _index_classes() -> tuple[Class, ...]:
    def items(kind: type):
        return lambda v, x, p: any(isinstance(i, kind) for i in v)

    return (
        Class("()", lambda v, x, p: v == ()),
        Class("an int", items(int)),
        Class("a slice", items(slice)),
        Class("a stepped slice", lambda v, x, p: any(_step(i) > 1 for i in v)),
        Class("an open bound", lambda v, x, p: any(_open(i) for i in v)),
        Class("fewer items than dims", lambda v, x, p: 0 < len(v) < len(x.shape)),
    )


def _step(item: object) -> int:
    return (item.step or 1) if isinstance(item, slice) else 1


def _open(item: object) -> bool:
    return isinstance(item, slice) and None in (item.start, item.stop)


def _rank_classes() -> tuple[Class, ...]:
    """A new shape: fewer, as many or more dims than the operand's."""
    return (
        Class("fewer dims", lambda v, x, p: len(v) < len(x.shape)),
        Class("as many dims", lambda v, x, p: len(v) == len(x.shape)),
        Class("more dims", lambda v, x, p: len(v) > len(x.shape)),
    )


# ---- primitives shared by the procedures ------------------------------------------
def _dim(pick: Pick, shape: Shape, sized: bool = False) -> int | None:
    """A dim of shape (one of size > 0 if `sized`); one in four counted from the end."""
    dims = tuple(d for d, n in enumerate(shape) if n > 0 or not sized)
    if not dims:
        return None
    return _from_end(pick, pick.one_of(dims), len(shape))


def _output(pick: Pick, count: int) -> int:
    """An output index of `count` outputs; one in four counted from the end."""
    k = pick.ints(0, count - 1)
    return k - count if pick.ints(0, 3) == 0 else k


def pieces(n: int, how: str, arg: int) -> list[int]:
    """The sizes of the pieces x.split(arg) / chunk(arg) / tensor_split(arg)
    cuts a dim of size n > 0 into (tensor_split: n >= 0); as oracle.view_ops."""
    if how == "split":
        return [min(arg, n - i) for i in range(0, n, arg)]
    if how == "chunk":
        return pieces(n, "split", -(-n // arg))
    return [n // arg + (i < n % arg) for i in range(arg)]  # tensor_split


def _divisors(n: int) -> tuple[int, ...]:
    return tuple(k for k in range(1, n + 1) if n % k == 0)


# ---- the first ten (getitem ... squeeze) ------------------------------------------
def _one_index(pick: Pick, n: int) -> int | slice:
    kind = pick.ints(0, 2 if n > 0 else 1)
    if kind == 0:
        return slice(None)
    if kind == 1:
        start, stop, step = pick.ints(0, n), pick.ints(0, n), pick.ints(1, 3)
        return slice(*(v if pick.chance(0.7) else None for v in (start, stop, step)))
    return pick.ints(0, n - 1)


def basic_index(pick: Pick, shape: Shape) -> tuple:
    """A basic indexing tuple: ints and slices with a positive step."""
    if not shape:
        return ()
    return tuple(_one_index(pick, n) for n in shape[: pick.ints(1, len(shape))])


@cache
def _view_candidates(shape: Shape) -> tuple[Shape, ...]:
    n = math.prod(shape)
    candidates = {(n,), shape + (1,), (1,) + shape}
    if len(shape) >= 2:
        candidates.add(shape[:-2] + (shape[-2] * shape[-1],))
        candidates.add((shape[0] * shape[1],) + shape[2:])
    for d, size in enumerate(shape):
        for f in (2, 3):
            if size % f == 0 and size > f:
                candidates.add(shape[:d] + (f, size // f) + shape[d + 1 :])
    if n == 0:
        candidates.add((0,))
    return tuple(sorted(candidates))


def view_shape(pick: Pick, shape: Shape) -> Shape:
    """A shape with the same number of elements: flattened, split, merged, with 1s."""
    return pick.one_of(_view_candidates(shape))


def expand_shape(pick: Pick, shape: Shape) -> Shape:
    """A shape `shape` expands to: size-1 dims grown, maybe a new leading dim."""
    lead = (pick.ints(1, 2),) if pick.chance(0.5) else ()
    return lead + tuple(pick.ints(1, 3) if n == 1 else n for n in shape)


def permutation(pick: Pick, rank: int) -> tuple[int, ...]:
    """A permutation of range(rank), drawn as random.Random.sample draws one."""
    pool, out = list(range(rank)), []
    for i in range(rank):
        j = pick.ints(0, rank - i - 1)
        out.append(pool[j])
        pool[j] = pool[rank - i - 1]
    return tuple(out)


def _getitem(pick: Pick, x: Operand) -> tuple:
    return (basic_index(pick, x.shape),)


def _select(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape, sized=True)
    return None if d is None else (d, pick.ints(-x.shape[d], x.shape[d] - 1))


def _new_shape(pick: Pick, x: Operand) -> tuple:
    return (view_shape(pick, x.shape),)


def _dims(count: int, extra: int = 0):
    """`count` dims in 0..rank - 1 + extra (unsqueeze: one past the last),
    each one in four counted from the end."""

    def choose(pick: Pick, x: Operand) -> tuple | None:
        n = len(x.shape) + extra
        if n == 0:
            return None
        return tuple(_from_end(pick, pick.ints(0, n - 1), n) for _ in range(count))

    return choose


def _from_end(pick: Pick, d: int, n: int) -> int:
    """Dim d of n, one in four as counted from the end (d - n)."""
    return d - n if pick.ints(0, 3) == 0 else d


def _t(pick: Pick, x: Operand) -> tuple | None:
    return () if len(x.shape) <= 2 else None


def _permute(pick: Pick, x: Operand) -> tuple:
    return (permutation(pick, len(x.shape)),)


def _expand(pick: Pick, x: Operand) -> tuple:
    return (expand_shape(pick, x.shape),)


# ---- the rest of tensor_view.rst --------------------------------------------------
def _narrow(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape)
    if d is None:
        return None
    n = x.shape[d]
    start = pick.ints(0, n)
    return (d, start, pick.ints(0, n - start))


def _diagonal(pick: Pick, x: Operand) -> tuple | None:
    r = len(x.shape)
    if r < 2:
        return None
    d1, d2 = pick.one_of(tuple((a, b) for a in range(r) for b in range(r)))
    if d1 == d2:
        d2 = (d1 + 1) % r
    return (pick.ints(-2, 2), d1, d2)


def _diagonal_size(x: Operand, p: tuple) -> int:
    off, d1, d2 = p
    a, b = x.shape[d1], x.shape[d2]
    return max(min(a, b - off) if off >= 0 else min(a + off, b), 0)


def _two_dims(pick: Pick, x: Operand) -> tuple | None:
    if not x.shape:
        return None
    return (_dim(pick, x.shape), _dim(pick, x.shape))


def _unflatten(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape)
    if d is None or x.shape[d] == 0:
        return None
    n = x.shape[d]
    a = pick.one_of(_divisors(n))
    sizes = (a, n // a)
    return (d, (-1, sizes[1]) if pick.ints(0, 3) == 0 else sizes)


def _unfold(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape, sized=True)
    if d is None:
        return None
    return (d, pick.ints(1, x.shape[d]), pick.ints(1, 3))


def _as_strided(pick: Pick, x: Operand) -> tuple | None:
    """A window inside the tensor's own elements (which must be laid out
    contiguously), so that its gradient lands on them."""
    n = math.prod(x.shape)
    if not x.contiguous or n == 0:
        return None
    size = tuple(pick.ints(1, 3) for _ in range(pick.ints(1, 2)))
    stride = tuple(pick.ints(0, 2) for _ in size)
    reach = sum((a - 1) * s for a, s in zip(size, stride, strict=True))
    if reach >= n:
        return None
    return (size, stride, x.offset + pick.ints(0, n - 1 - reach))


def _overlaps(size: tuple, stride: tuple) -> bool:
    """Whether two of the window's elements are one element of memory."""
    seen = {0}
    for n, s in zip(size, stride, strict=True):
        seen = {base + i * s for base in seen for i in range(n)}
    return len(seen) < math.prod(size)


def _rank(low: int, high: int | None = None):
    """No arguments, for operands of rank low..high (no upper bound if None)."""

    def choose(pick: Pick, x: Operand) -> tuple | None:
        fits = low <= len(x.shape) and (high is None or len(x.shape) <= high)
        return () if fits else None

    return choose


def _unbind(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape, sized=True)
    return None if d is None else (d, _output(pick, x.shape[d]))


def _split(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape, sized=True)
    if d is None:
        return None
    size = pick.ints(1, x.shape[d])
    return (size, d, _output(pick, len(pieces(x.shape[d], "split", size))))


def _split_with_sizes(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape, sized=True)
    if d is None:
        return None
    n, sizes = x.shape[d], []
    while sum(sizes) < n and len(sizes) < 3:
        sizes.append(pick.ints(0, n - sum(sizes)))
    sizes[-1] += n - sum(sizes)
    return (sizes, d, _output(pick, len(sizes)))


def _chunk(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape, sized=True)
    if d is None:
        return None
    chunks = pick.ints(1, x.shape[d] + 1)
    return (chunks, d, _output(pick, len(pieces(x.shape[d], "chunk", chunks))))


def _tensor_split(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape)
    if d is None:
        return None
    sections = pick.ints(1, 4)
    return (sections, d, _output(pick, sections))


def _even(pick: Pick, n: int) -> int:
    return pick.one_of(_divisors(n)) if n else 1


def _hsplit(pick: Pick, x: Operand) -> tuple | None:
    if not x.shape:
        return None
    sections = _even(pick, x.shape[1 if len(x.shape) > 1 else 0])
    return (sections, _output(pick, sections))


def _vsplit(pick: Pick, x: Operand) -> tuple | None:
    if len(x.shape) < 2:
        return None
    sections = _even(pick, x.shape[0])
    return (sections, _output(pick, sections))


# ---- the spaces ------------------------------------------------------------------
_TENSOR_T = (
    "The use of Tensor.T() on tensors of dimension other than 2 to reverse their shape"
    " is deprecated and it will throw an error in a future release."
)
_NOT_MATRIX = Undefined("operands of rank other than 2", _TENSOR_T, "torch/_tensor_docs.py: T")
_DIM = _arg("dim", *SIGNED)
_K = _arg("k", *SIGNED)

_SPACES: dict[str, ArgSpace] = {
    "getitem": ArgSpace((_arg("index", *_index_classes()),), _getitem),
    "select": ArgSpace((_DIM, _arg("index", *SIGNED)), _select),
    "view": ArgSpace((_arg("shape", *_rank_classes()),), _new_shape),
    "reshape": ArgSpace((_arg("shape", *_rank_classes()),), _new_shape),
    "transpose": ArgSpace((_arg("d0", *SIGNED), _arg("d1", *SIGNED, *_same_dim(0))), _dims(2)),
    "t": ArgSpace((), _t),
    "permute": ArgSpace(
        (
            _arg(
                "dims",
                Class("the identity", lambda v, x, p: v == tuple(sorted(v))),
                Class("a reordering", lambda v, x, p: v != tuple(sorted(v))),
            ),
        ),
        _permute,
    ),
    "expand": ArgSpace(
        (
            _arg(
                "shape",
                Class("a new leading dim", lambda v, x, p: len(v) > len(x.shape)),
                Class("grows a size-1 dim", lambda v, x, p: v[len(v) - len(x.shape) :] != x.shape),
                Class("the same shape", lambda v, x, p: v == x.shape),
            ),
        ),
        _expand,
    ),
    "unsqueeze": ArgSpace(
        (
            _arg(
                "dim",
                *SIGNED,
                Class("before a dim", lambda v, x, p: v % (len(x.shape) + 1) < len(x.shape)),
                Class("after the last dim", lambda v, x, p: v % (len(x.shape) + 1) == len(x.shape)),
            ),
        ),
        _dims(1, extra=1),
    ),
    "squeeze": ArgSpace(
        (
            _arg(
                "dim",
                *SIGNED,
                Class("a dim of size 1", lambda v, x, p: x.shape[v] == 1),
                Class("a dim of another size", lambda v, x, p: x.shape[v] != 1),
            ),
        ),
        _dims(1),
    ),
    "narrow": ArgSpace(
        (
            _DIM,
            _arg(
                "start",
                Class("0", lambda v, x, p: v == 0),
                Class("inside", lambda v, x, p: 0 < v < _size(x, p, 0)),
                Class("the end", lambda v, x, p: v == _size(x, p, 0) > 0),
            ),
            _arg(
                "length",
                Class("0", lambda v, x, p: v == 0),
                Class("to the end", lambda v, x, p: v > 0 and p[1] + v == _size(x, p, 0)),
                Class("short of the end", lambda v, x, p: p[1] + v < _size(x, p, 0)),
            ),
        ),
        _narrow,
    ),
    "diagonal": ArgSpace(
        (
            _arg(
                "offset",
                Class("0", lambda v, x, p: v == 0),
                Class("above", lambda v, x, p: v > 0),
                Class("below", lambda v, x, p: v < 0),
                Class("an empty diagonal", lambda v, x, p: _diagonal_size(x, p) == 0),
            ),
            _arg("dim1", FROM_START),
            _arg(
                "dim2",
                Class("after dim1", lambda v, x, p: v > p[1]),
                Class("before dim1", lambda v, x, p: v < p[1]),
            ),
        ),
        _diagonal,
    ),
    "movedim": ArgSpace((_arg("source", *SIGNED), _arg("destination", *SIGNED)), _two_dims),
    "swapaxes": ArgSpace((_arg("axis0", *SIGNED), _arg("axis1", *SIGNED)), _two_dims),
    "swapdims": ArgSpace((_arg("dim0", *SIGNED), _arg("dim1", *SIGNED)), _two_dims),
    "unflatten": ArgSpace(
        (
            _DIM,
            _arg(
                "sizes",
                Class("given", lambda v, x, p: -1 not in v),
                Class("one inferred (-1)", lambda v, x, p: -1 in v),
                Class("a size of 1", lambda v, x, p: 1 in v),
            ),
        ),
        _unflatten,
    ),
    "unfold": ArgSpace(
        (
            _arg("dimension", *SIGNED),
            _arg(
                "size",
                Class("1", lambda v, x, p: v == 1),
                Class("part of the dim", lambda v, x, p: 1 < v < _size(x, p, 0)),
                Class("the whole dim", lambda v, x, p: v == _size(x, p, 0)),
            ),
            _arg(
                "step",
                Class("overlapping windows", lambda v, x, p: v < p[1]),
                Class("adjacent windows", lambda v, x, p: v == p[1]),
                Class("gaps between windows", lambda v, x, p: v > p[1]),
            ),
        ),
        _unfold,
    ),
    "as_strided": ArgSpace(
        (
            _arg(
                "size",
                Class("1-d", lambda v, x, p: len(v) == 1),
                Class("2-d", lambda v, x, p: len(v) == 2),
            ),
            _arg(
                "stride",
                Class("a stride of 0", lambda v, x, p: 0 in v),
                Class("elements overlap", lambda v, x, p: _overlaps(p[0], v)),
                Class("elements distinct", lambda v, x, p: not _overlaps(p[0], v)),
            ),
            _arg(
                "offset",
                Class("the operand's own", lambda v, x, p: v == x.offset),
                Class("further on", lambda v, x, p: v > x.offset),
            ),
        ),
        _as_strided,
    ),
    "mT": ArgSpace((), _rank(2)),
    "T": ArgSpace((), _rank(2, 2), (_NOT_MATRIX,)),
    "H": ArgSpace((), _rank(2, 2)),  # only 2-D: others raise
    "mH": ArgSpace((), _rank(2)),
    "adjoint": ArgSpace((), _rank(2)),
    "unbind_k": ArgSpace((_DIM, _K), _unbind),
    "split_k": ArgSpace((_arg("size", *_pieces_classes(1, "split")), _DIM, _K), _split),
    "split_with_sizes_k": ArgSpace(
        (
            _arg(
                "sizes",
                Class("one size", lambda v, x, p: len(v) == 1),
                Class("several", lambda v, x, p: len(v) > 1),
                Class("an empty piece", lambda v, x, p: 0 in v),
            ),
            _DIM,
            _K,
        ),
        _split_with_sizes,
    ),
    "chunk_k": ArgSpace(
        (
            _arg(
                "chunks",
                *_pieces_classes(1, "chunk"),
                Class(
                    "fewer pieces than asked",
                    lambda v, x, p: len(pieces(_size(x, p, 1), "chunk", v)) < v,
                ),
            ),
            _DIM,
            _K,
        ),
        _chunk,
    ),
    "tensor_split_k": ArgSpace(
        (
            _arg(
                "sections",
                *_pieces_classes(1, "tensor_split"),
                Class("empty pieces", lambda v, x, p: v > _size(x, p, 1)),
            ),
            _DIM,
            _K,
        ),
        _tensor_split,
    ),
    "hsplit_k": ArgSpace(
        (
            _arg(
                "sections",
                Class("one", lambda v, x, p: v == 1),
                Class("several", lambda v, x, p: v > 1),
            ),
            _K,
        ),
        _hsplit,
    ),
    "vsplit_k": ArgSpace(
        (
            _arg(
                "sections",
                Class("one", lambda v, x, p: v == 1),
                Class("several", lambda v, x, p: v > 1),
            ),
            _K,
        ),
        _vsplit,
    ),
}
SPACES: dict[str, ArgSpace] = {name: replace(s, op=name) for name, s in _SPACES.items()}
# the view ops of tensor_view.rst beyond the first ten
SURFACE = frozenset(SPACES) - {
    "getitem",
    "select",
    "view",
    "reshape",
    "transpose",
    "t",
    "permute",
    "expand",
    "unsqueeze",
    "squeeze",
}
