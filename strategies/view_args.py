"""The argument spaces of the view ops (tensor_view.rst), one per op: each
argument's classes, the regions left out with the documentation's sentence,
and the procedure that draws them (strategies.view_draws); see
strategies.argspace.

The oracle's rows (oracle/view_rows.py) and the property tests' view table
(strategies/views.py) both take their arguments from here.
"""

from __future__ import annotations

import math
from dataclasses import replace

from . import view_draws as draws
from .argspace import LEFT_OUT, Arg, ArgSpace, Class, Operand, Undefined, spelling_classes
from .view_draws import cuts, kept_sizes, pieces

Shape = tuple[int, ...]


# ---- classes ---------------------------------------------------------------------
def _arg(name: str, *classes: Class) -> Arg:
    return Arg(name, classes)


def _spelled(name: str, *classes: Class) -> Arg:
    """A list argument of a varargs overload: its classes, and its spellings."""
    return Arg(name, (*classes, *spelling_classes()), spreads=True)


def _size(x: Operand, p: tuple, at: int) -> int:
    """The size of the dim the argument at position `at` names."""
    return x.shape[p[at]]


FROM_START = Class("counted from the start", lambda v, x, p: isinstance(v, int) and v >= 0)
FROM_END = Class("counted from the end", lambda v, x, p: isinstance(v, int) and v < 0)
SIGNED = (FROM_START, FROM_END)
# "a 0-d tensor takes dims -1 and 0" (torch's maybe_wrap_dim, wrap_scalar)
OF_0D = Class("of a 0-d operand", lambda v, x, p: not x.shape)


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


def _squeezed(v: object, x: Operand) -> int | None:
    """The size of the one dim squeeze(v) names (None where v names several or
    none, or x is 0-d)."""
    return x.shape[v] if isinstance(v, int) and x.shape else None


def _decrease(v: object, n: int) -> bool:
    """Whether tensor_split's indices v cut a dim of size n at a place before
    an earlier cut (a piece then stops before it starts, and pieces overlap)."""
    if not isinstance(v, list):
        return False
    at = cuts(n, v)
    return any(b < a for a, b in zip(at, at[1:], strict=False))


def _diagonal_size(x: Operand, p: tuple) -> int:
    off, d1, d2 = p
    a, b = x.shape[d1], x.shape[d2]
    return max(min(a, b - off) if off >= 0 else min(a + off, b), 0)


def _overlaps(size: tuple, stride: tuple) -> bool:
    """Whether two of the window's elements are one element of memory."""
    seen = {0}
    for n, s in zip(size, stride, strict=True):
        seen = {base + i * s for base in seen for i in range(n)}
    return len(seen) < math.prod(size)


# ---- the spaces ------------------------------------------------------------------
_TENSOR_T = (
    "The use of Tensor.T() on tensors of dimension other than 2 to reverse their shape"
    " is deprecated and it will throw an error in a future release."
)
_NOT_MATRIX = Undefined(
    "operands of rank other than 2",
    _TENSOR_T,
    "torch/_tensor_docs.py: T",
    lambda x, args: len(x.shape) != 2,
)
_DIM = _arg("dim", *SIGNED)
_K = _arg("k", *SIGNED)
# hsplit / vsplit: how many sections
_SECTIONS = _arg(
    "sections",
    Class("one", lambda v, x, p: v == 1),
    Class("several", lambda v, x, p: v > 1),
)

_SPACES: dict[str, ArgSpace] = {
    "getitem": ArgSpace((_arg("index", *_index_classes()),), draws.getitem),
    "select": ArgSpace((_DIM, _arg("index", *SIGNED)), draws.select),
    # the shape as a tuple, a list or one int after another: each overload
    "view": ArgSpace((_spelled("shape", *_rank_classes()),), draws.new_shape),
    "reshape": ArgSpace((_spelled("shape", *_rank_classes()),), draws.new_shape),
    "transpose": ArgSpace(
        (_arg("d0", *SIGNED, OF_0D), _arg("d1", *SIGNED, *_same_dim(0))), draws.dims(2)
    ),
    "t": ArgSpace((), draws.t),
    "permute": ArgSpace(
        (
            _spelled(
                "dims",
                Class("the identity", lambda v, x, p: list(v) == sorted(v)),
                Class("a reordering", lambda v, x, p: list(v) != sorted(v)),
            ),
        ),
        draws.permute,
    ),
    # the sizes as a tuple, a list or one int after another; -1 keeps a dim's size
    "expand": ArgSpace(
        (
            _spelled(
                "shape",
                Class("a new leading dim", lambda v, x, p: len(v) > len(x.shape)),
                Class(
                    "grows a size-1 dim",
                    lambda v, x, p: kept_sizes(v, x.shape)[len(v) - len(x.shape) :] != x.shape,
                ),
                Class("the same shape", lambda v, x, p: kept_sizes(v, x.shape) == x.shape),
                Class("a dim kept (-1)", lambda v, x, p: -1 in v),
            ),
        ),
        draws.expand,
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
        draws.dims(1, extra=1),
    ),
    # squeeze(dim), squeeze(dims) (2.0 on) and squeeze(): its three overloads
    "squeeze": ArgSpace(
        (
            Arg(
                "dim",
                (
                    *SIGNED,
                    OF_0D,
                    Class("a dim of size 1", lambda v, x, p: _squeezed(v, x) == 1),
                    Class(
                        "a dim of another size", lambda v, x, p: _squeezed(v, x) not in (1, None)
                    ),
                    Class("a tuple of dims", lambda v, x, p: isinstance(v, tuple)),
                    Class("left at its default (every dim)", lambda v, x, p: v is LEFT_OUT),
                ),
                optional=True,
            ),
        ),
        draws.squeeze,
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
        draws.narrow,
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
        draws.diagonal,
    ),
    "movedim": ArgSpace(
        (_arg("source", *SIGNED, OF_0D), _arg("destination", *SIGNED)), draws.two_dims
    ),
    "swapaxes": ArgSpace((_arg("axis0", *SIGNED, OF_0D), _arg("axis1", *SIGNED)), draws.two_dims),
    "swapdims": ArgSpace((_arg("dim0", *SIGNED, OF_0D), _arg("dim1", *SIGNED)), draws.two_dims),
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
        draws.unflatten,
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
        draws.unfold,
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
        draws.as_strided,
    ),
    "mT": ArgSpace((), draws.rank(2)),
    "T": ArgSpace((), draws.rank(2, 2), (_NOT_MATRIX,)),
    "H": ArgSpace((), draws.rank(2, 2)),  # only 2-D: others raise
    "mH": ArgSpace((), draws.rank(2)),
    "adjoint": ArgSpace((), draws.rank(2)),
    "unbind_k": ArgSpace((_DIM, _K), draws.unbind),
    "split_k": ArgSpace(
        (
            _arg(
                "size",
                *_pieces_classes(1, "split"),
                Class("a list of sizes (split_with_sizes)", lambda v, x, p: isinstance(v, list)),
            ),
            _DIM,
            _K,
        ),
        draws.split,
    ),
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
        draws.split_with_sizes,
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
        draws.chunk,
    ),
    "tensor_split_k": ArgSpace(
        (
            _arg(
                "sections",
                *_pieces_classes(1, "tensor_split"),
                Class(
                    "empty pieces", lambda v, x, p: 0 in pieces(_size(x, p, 1), "tensor_split", v)
                ),
                Class("a list of indices", lambda v, x, p: isinstance(v, list)),
                # the slices x[:i0], x[i0:i1], ..., x[ik:]: an index below 0
                # counts from the end, one beyond either end is clamped to it,
                # and a slice that stops before it starts is empty
                Class(
                    "a negative index",
                    lambda v, x, p: isinstance(v, list) and min(v, default=0) < 0,
                ),
                Class(
                    "an index before the start",
                    lambda v, x, p: isinstance(v, list) and any(i < -_size(x, p, 1) for i in v),
                ),
                Class("indices that decrease", lambda v, x, p: _decrease(v, _size(x, p, 1))),
            ),
            _DIM,
            _K,
        ),
        draws.tensor_split,
    ),
    "hsplit_k": ArgSpace(
        (
            _SECTIONS,
            _K,
        ),
        draws.hsplit,
    ),
    "vsplit_k": ArgSpace(
        (
            _SECTIONS,
            _K,
        ),
        draws.vsplit,
    ),
}
# split(size) alone: unsafe_split takes no list of sizes (strategies/op_args.py)
SPLIT_INTS = ArgSpace((_arg("size", *_pieces_classes(1, "split")), _DIM, _K), draws.split_ints)
# the in-place view ops (issue 37): each changes its operand's own geometry as
# its out-of-place twin makes a view's ("In-place version of Tensor.transpose"),
# so it draws the twin's arguments, counted under its own name
INPLACE_VIEWS = ("transpose_", "t_", "squeeze_", "unsqueeze_", "swapdims_", "as_strided_")
for _name in INPLACE_VIEWS:
    _SPACES[_name] = _SPACES[_name[:-1]]
SPACES: dict[str, ArgSpace] = {name: replace(s, op=name) for name, s in _SPACES.items()}
# the view ops of tensor_view.rst beyond the first ten (the in-place ones: their motif)
SURFACE = (
    frozenset(SPACES)
    - set(INPLACE_VIEWS)
    - {
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
)
