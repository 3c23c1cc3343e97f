"""View ops as a table: each row says when it applies to a shape, how to draw
its arguments, and how to apply it to a torch tensor and to a NumPy array.
The arguments of an op the differential draws too come from its argument
space (strategies.view_args), drawn the same way on both sides.

Applied to `np.arange(n).reshape(shape)`, the NumPy side says which element
of the base each element of the view reads, so a test can predict what a
write through either one does to the other. Only method calls appear on the
torch side, so this module does not import torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from .argspace import LEFT_OUT, Default, Operand, arguments, passed
from .view_args import SPACES
from .view_draws import kept_sizes, pieces

Shape = tuple[int, ...]


@dataclass(frozen=True)
class ViewOp:
    template: str  # how the call prints, with {0}, {1}... for its arguments
    applies: Callable[[Shape, bool], bool]  # (shape, contiguous) -> usable
    args: Callable[[Shape], st.SearchStrategy[tuple]]
    torch: Callable  # (tensor, args) -> view
    numpy: Callable  # (array, args) -> view or index array of the same shape
    overlapping: bool = False  # the view reads one element more than once
    multi_output: bool = False  # one output of unbind, split, split_with_sizes or chunk


def _declared(name: str, without: tuple[str, ...] = ()) -> Callable:
    """Args for a shape from the op's argument space (strategies.view_args),
    as the differential draws them; `without` leaves out classes of it."""
    space = SPACES[name]
    unknown = set(without) - set(space.declared)
    if unknown:
        raise ValueError(f"{name} has no classes {sorted(unknown)}: {space.declared}")

    def args(shape: Shape) -> st.SearchStrategy[tuple]:
        drawn = arguments(space, Operand(shape))
        if not without:
            return drawn
        return drawn.filter(lambda a: not set(space.classes_of(Operand(shape), a)) & set(without))

    args.op = name  # the row whose space it draws (tests/oracle/test_view_args.py)
    return args


def _along(d: int, ndim: int, item: object) -> tuple:
    """An index that applies `item` at dim d (counted from the end if negative)."""
    return (slice(None),) * (d % ndim) + (item,)


def _step_args(shape: Shape) -> st.SearchStrategy[tuple]:
    return st.tuples(st.integers(0, len(shape) - 1), st.integers(0, 3), st.integers(1, 3))


def _stepped(a, args):
    d, start, step = args
    return a[(slice(None),) * d + (slice(start, None, step),)]


def _squeeze_np(a: np.ndarray, d: int | tuple | Default) -> np.ndarray:
    """squeeze(dim), squeeze(dims) or squeeze() (LEFT_OUT) of an array of rank >= 1."""
    named = range(a.ndim) if d is LEFT_OUT else (d,) if isinstance(d, int) else d
    return np.squeeze(a, axis=tuple(k for k in named if a.shape[k] == 1))


def _has_sized(shape: Shape, contiguous: bool) -> bool:
    return any(n > 0 for n in shape)


def _unflatten_np(x: np.ndarray, a: tuple) -> np.ndarray:
    d, sizes = a[0] % x.ndim, tuple(a[1])
    if -1 in sizes:  # inferred from this dim alone, as torch does (NumPy: from all of x)
        known = math.prod(n for n in sizes if n != -1)
        sizes = tuple(x.shape[d] // known if n == -1 else n for n in sizes)
    return x.reshape(x.shape[:d] + sizes + x.shape[d + 1 :])


def _any(shape: Shape, contiguous: bool) -> bool:
    return True


# ---- the rest of tensor_view.rst (issue 10) -----------------------------------------
def _unfold_np(x: np.ndarray, a: tuple) -> np.ndarray:
    d, size, step = a
    d %= x.ndim
    starts = np.arange((x.shape[d] - size) // step + 1) * step
    taken = np.take(x, starts[:, None] + np.arange(size)[None, :], axis=d)
    return np.moveaxis(taken, d + 1, -1)


def _flat_window_args(shape: Shape) -> st.SearchStrategy[tuple]:
    n = math.prod(shape)
    return st.integers(1, 3).flatmap(
        lambda stride: st.integers(0, n - 1).flatmap(
            lambda start: st.tuples(
                st.integers(1, (n - 1 - start) // stride + 1), st.just(stride), st.just(start)
            )
        )
    )


def _piece(x: np.ndarray, d: int, sizes: list[int], k: int) -> np.ndarray:
    k %= len(sizes)
    start = sum(sizes[:k])
    return x[_along(d, x.ndim, slice(start, start + sizes[k]))]


def _split_piece(how: str) -> Callable:
    """x.<how>(arg, dim)[k] in NumPy, for args (arg, dim, k)."""
    return lambda x, a: _piece(x, a[1], pieces(x.shape[a[1]], how, a[0]), a[2])


def _tensor_split_piece(x: np.ndarray, a: tuple) -> np.ndarray:
    """x.tensor_split(arg, dim)[k] in NumPy: for a list of indices, the slice
    x[i(k-1):i(k)] along dim, as the documentation spells it (NumPy's slices
    count a negative index from the end, clamp, and stop no earlier than
    they start)."""
    arg, d, k = a
    if not isinstance(arg, list):
        return _split_piece("tensor_split")(x, a)
    bounds = [None, *arg, None]
    k %= len(bounds) - 1
    return x[_along(d, x.ndim, slice(bounds[k], bounds[k + 1]))]


SURFACE_VIEW_OPS: tuple[ViewOp, ...] = (
    ViewOp(
        "x.movedim({0}, {1})",
        lambda s, c: len(s) >= 1,
        _declared("movedim"),
        lambda t, a: t.movedim(*a),
        lambda x, a: np.moveaxis(x, *a),
    ),
    ViewOp(
        "x.swapaxes({0}, {1})",
        lambda s, c: len(s) >= 1,
        _declared("swapaxes"),
        lambda t, a: t.swapaxes(*a),
        lambda x, a: np.swapaxes(x, *a),
    ),
    ViewOp(
        "x.swapdims({0}, {1})",
        lambda s, c: len(s) >= 1,
        _declared("swapdims"),
        lambda t, a: t.swapdims(*a),
        lambda x, a: np.swapaxes(x, *a),
    ),
    ViewOp(
        "x.unflatten({0}, {1})",
        _has_sized,
        _declared("unflatten"),
        lambda t, a: t.unflatten(*a),
        _unflatten_np,
    ),
    # windows that do not overlap can be written; those that do cannot
    ViewOp(
        "x.unfold({0}, {1}, {2})",
        _has_sized,
        _declared("unfold", without=("step: overlapping windows",)),
        lambda t, a: t.unfold(*a),
        _unfold_np,
    ),
    ViewOp(
        "x.unfold({0}, {1}, {2})",
        _has_sized,
        _declared("unfold", without=("step: adjacent windows", "step: gaps between windows")),
        lambda t, a: t.unfold(*a),
        _unfold_np,
        overlapping=True,
    ),
    ViewOp(
        "x.as_strided(({0},), ({1},), x.storage_offset() + {2})",
        lambda s, c: c and math.prod(s) > 0,
        _flat_window_args,
        lambda t, a: t.as_strided((a[0],), (a[1],), t.storage_offset() + a[2]),
        lambda x, a: x.reshape(-1)[a[2] :: a[1]][: a[0]],
    ),
    ViewOp(
        "x.mT",
        lambda s, c: len(s) >= 2,
        _declared("mT"),
        lambda t, a: t.mT,
        lambda x, a: np.swapaxes(x, -1, -2),
    ),
    ViewOp(
        "x.T",
        lambda s, c: len(s) == 2,
        _declared("T"),
        lambda t, a: t.T,
        lambda x, a: x.T,
    ),
    ViewOp(
        "x[:1].expand_as(x)",
        lambda s, c: len(s) >= 1 and s[0] > 0,
        lambda s: st.just(()),
        lambda t, a: t[:1].expand_as(t),
        lambda x, a: np.broadcast_to(x[:1], x.shape),
        overlapping=True,
    ),
    ViewOp(
        "x.unbind({0})[{1}]",
        _has_sized,
        _declared("unbind_k"),
        lambda t, a: t.unbind(a[0])[a[1]],
        lambda x, a: x[_along(a[0], x.ndim, a[1])],
        multi_output=True,
    ),
    ViewOp(
        "x.split({0}, {1})[{2}]",
        _has_sized,
        _declared("split_k"),
        lambda t, a: t.split(a[0], a[1])[a[2]],
        _split_piece("split"),
        multi_output=True,
    ),
    ViewOp(
        "x.split_with_sizes({0}, {1})[{2}]",
        _has_sized,
        _declared("split_with_sizes_k"),
        lambda t, a: t.split_with_sizes(a[0], a[1])[a[2]],
        lambda x, a: _piece(x, a[1], a[0], a[2]),
        multi_output=True,
    ),
    ViewOp(
        "x.chunk({0}, {1})[{2}]",
        _has_sized,
        _declared("chunk_k"),
        lambda t, a: t.chunk(a[0], a[1])[a[2]],
        _split_piece("chunk"),
        multi_output=True,
    ),
    ViewOp(
        "x.tensor_split({0}, {1})[{2}]",
        _has_sized,
        _declared("tensor_split_k"),
        lambda t, a: t.tensor_split(a[0], a[1])[a[2]],
        _tensor_split_piece,
    ),
    ViewOp(
        "x.hsplit({0})[{1}]",
        lambda s, c: len(s) >= 1,
        _declared("hsplit_k"),
        lambda t, a: t.hsplit(a[0])[a[1]],
        lambda x, a: np.hsplit(x, a[0])[a[1]],
    ),
    ViewOp(
        "x.vsplit({0})[{1}]",
        lambda s, c: len(s) >= 2,
        _declared("vsplit_k"),
        lambda t, a: t.vsplit(a[0])[a[1]],
        lambda x, a: np.vsplit(x, a[0])[a[1]],
    ),
)


VIEW_OPS: tuple[ViewOp, ...] = (
    ViewOp(
        "x.transpose({0}, {1})",
        lambda s, c: len(s) >= 1,
        _declared("transpose"),
        lambda t, a: t.transpose(*a),
        lambda x, a: np.swapaxes(x, *a),
    ),
    ViewOp(
        "x.t()",
        lambda s, c: len(s) <= 2,
        _declared("t"),
        lambda t, a: t.t(),
        lambda x, a: x.T,
    ),
    ViewOp(
        "x.permute({0})",
        lambda s, c: len(s) >= 1,
        _declared("permute"),
        lambda t, a: t.permute(*passed(a)),
        lambda x, a: np.transpose(x, tuple(a[0])),
    ),
    ViewOp(
        "x.select({0}, {1})",
        lambda s, c: len(s) >= 1 and any(n > 0 for n in s),
        _declared("select"),
        lambda t, a: t.select(*a),
        lambda x, a: x[_along(a[0], x.ndim, a[1])],
    ),
    ViewOp(
        "x.narrow({0}, {1}, {2})",
        lambda s, c: len(s) >= 1,
        _declared("narrow"),
        lambda t, a: t.narrow(*a),
        lambda x, a: x[_along(a[0], x.ndim, slice(a[1], a[1] + a[2]))],
    ),
    ViewOp(
        "x[(slice(None),) * {0} + (slice({1}, None, {2}),)]",
        lambda s, c: len(s) >= 1,
        _step_args,
        _stepped,
        _stepped,
    ),
    ViewOp(
        "x.unsqueeze({0})",
        _any,
        _declared("unsqueeze"),
        lambda t, a: t.unsqueeze(*a),
        lambda x, a: np.expand_dims(x, a[0]),
    ),
    ViewOp(
        "x.squeeze({0})",
        lambda s, c: len(s) >= 1,
        _declared("squeeze"),
        lambda t, a: t.squeeze(*passed(a)),
        lambda x, a: _squeeze_np(x, a[0]),
    ),
    ViewOp(
        "x.diagonal({0}, {1}, {2})",
        lambda s, c: len(s) >= 2,
        _declared("diagonal"),
        lambda t, a: t.diagonal(*a),
        lambda x, a: np.diagonal(x, *a),
    ),
    ViewOp(
        "x.view(-1)",
        lambda s, c: c,
        lambda s: st.just(()),
        lambda t, a: t.view(-1),
        lambda x, a: x.reshape(-1),
    ),
    ViewOp(
        "x.view({0})",
        lambda s, c: c,
        _declared("view"),
        lambda t, a: t.view(*passed(a)),
        lambda x, a: x.reshape(tuple(a[0])),
    ),
    ViewOp(  # of a contiguous tensor, a view
        "x.reshape({0})",
        lambda s, c: c,
        _declared("reshape"),
        lambda t, a: t.reshape(*passed(a)),
        lambda x, a: x.reshape(tuple(a[0])),
    ),
    ViewOp(
        "x[{0}]",
        _any,
        _declared("getitem"),
        lambda t, a: t[a[0]],
        lambda x, a: x[a[0]],
    ),
    ViewOp(  # its size-1 dims grown, or a dim in front: most read an element more than once
        "x.expand({0})",
        _any,
        _declared("expand"),
        lambda t, a: t.expand(*passed(a)),
        lambda x, a: np.broadcast_to(x, kept_sizes(a[0], x.shape)),
        overlapping=True,
    ),
    ViewOp("x[None]", _any, lambda s: st.just(()), lambda t, a: t[None], lambda x, a: x[None]),
    ViewOp("x[...]", _any, lambda s: st.just(()), lambda t, a: t[...], lambda x, a: x[...]),
    ViewOp(
        "x.view_as(x)", _any, lambda s: st.just(()), lambda t, a: t.view_as(t), lambda x, a: x[...]
    ),
    ViewOp(
        "x.expand(2, *x.shape)",
        _any,
        lambda s: st.just(()),
        lambda t, a: t.expand(2, *t.shape),
        lambda x, a: np.broadcast_to(x, (2, *x.shape)),
        overlapping=True,
    ),
    *SURFACE_VIEW_OPS,
)


@dataclass(frozen=True)
class DrawnView:
    op: ViewOp
    args: tuple

    def __call__(self, tensor):
        return self.op.torch(tensor, self.args)

    def index_map(self, shape: Shape) -> np.ndarray:
        """Flat index into a base of `shape` of each element of the view."""
        base = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
        return np.array(self.op.numpy(base, self.args), order="C")

    def __repr__(self) -> str:  # (an argument left out is not printed: x.squeeze())
        return self.op.template.format(*("" if a is LEFT_OUT else a for a in self.args))


def views(
    shape: Shape, contiguous: bool, writable: bool = False, multi_output: bool = True
) -> st.SearchStrategy[DrawnView]:
    """A view op that applies to a tensor of `shape` (and `contiguous`-ness).

    `writable` leaves out views that read an element more than once;
    `multi_output=False` the outputs of unbind, split, split_with_sizes and
    chunk (autograd refuses in-place ops on them in grad mode).
    """
    ops = _fitting(shape, contiguous, writable, multi_output)
    return st.sampled_from(ops).flatmap(
        lambda op: op.args(shape).map(lambda args: DrawnView(op, args))
    )


def every_view(
    shape: Shape, contiguous: bool, writable: bool = False, multi_output: bool = True
) -> st.SearchStrategy[tuple[DrawnView, ...]]:
    """One view per view op that applies (arguments drawn for each), as `views`
    selects them: for the rules every view op must keep. Hypothesis favours the
    first of a sampled list, so a rule checked on one drawn view at a time can
    miss a single op's fault in a hundred examples."""
    ops = _fitting(shape, contiguous, writable, multi_output)
    return st.tuples(*(op.args(shape).map(lambda args, op=op: DrawnView(op, args)) for op in ops))


def _fitting(shape: Shape, contiguous: bool, writable: bool, multi_output: bool) -> list:
    return [
        op
        for op in VIEW_OPS
        if op.applies(shape, contiguous)
        and not (writable and op.overlapping)
        and (multi_output or not op.multi_output)
    ]
