"""View ops as a table: each row says when it applies to a shape, how to draw
its arguments, and how to apply it to a torch tensor and to a NumPy array.

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


def _dims(shape: Shape) -> st.SearchStrategy[int]:
    return st.integers(0, len(shape) - 1)


def _select_args(shape: Shape) -> st.SearchStrategy[tuple]:
    return (
        _dims(shape)
        .filter(lambda d: shape[d] > 0)
        .flatmap(lambda d: st.tuples(st.just(d), st.integers(-shape[d], shape[d] - 1)))
    )


def _narrow_args(shape: Shape) -> st.SearchStrategy[tuple]:
    return _dims(shape).flatmap(
        lambda d: st.integers(0, shape[d]).flatmap(
            lambda s: st.tuples(st.just(d), st.just(s), st.integers(0, shape[d] - s))
        )
    )


def _step_args(shape: Shape) -> st.SearchStrategy[tuple]:
    return st.tuples(_dims(shape), st.integers(0, 3), st.integers(1, 3))


def _stepped(a, args):
    d, start, step = args
    return a[(slice(None),) * d + (slice(start, None, step),)]


def _squeeze_np(a: np.ndarray, d: int) -> np.ndarray:
    return np.squeeze(a, axis=d) if a.shape[d] == 1 else a


def _any(shape: Shape, contiguous: bool) -> bool:
    return True


# ---- the rest of tensor_view.rst (issue 10) -----------------------------------------
def _sized_dim(shape: Shape) -> st.SearchStrategy[int]:
    return st.sampled_from([d for d, n in enumerate(shape) if n > 0])


def _has_sized(shape: Shape, contiguous: bool) -> bool:
    return any(n > 0 for n in shape)


def _then(first: st.SearchStrategy, rest: Callable) -> st.SearchStrategy[tuple]:
    """(a, *rest(a)): arguments that depend on the first one."""
    return first.flatmap(lambda a: rest(a).map(lambda more: (a, *more)))


def _unflatten_args(shape: Shape) -> st.SearchStrategy[tuple]:
    return _then(
        _sized_dim(shape),
        lambda d: st.sampled_from([k for k in range(1, shape[d] + 1) if shape[d] % k == 0]).map(
            lambda k: ((k, shape[d] // k),)
        ),
    )


def _unfold_args(shape: Shape) -> st.SearchStrategy[tuple]:
    # step >= size: windows that do not overlap, so the view can be written
    return _then(
        _sized_dim(shape),
        lambda d: st.integers(1, shape[d]).flatmap(
            lambda size: st.tuples(st.just(size), st.integers(size, size + 2))
        ),
    )


def _unfold_np(x: np.ndarray, a: tuple) -> np.ndarray:
    d, size, step = a
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


def _pieces(n: int, how: str, arg: int) -> list[int]:
    if how == "split":
        return [min(arg, n - i) for i in range(0, n, arg)]
    if how == "chunk":
        return _pieces(n, "split", -(-n // arg))
    return [n // arg + (i < n % arg) for i in range(arg)]  # tensor_split


def _piece(x: np.ndarray, d: int, sizes: list[int], k: int) -> np.ndarray:
    k %= len(sizes)
    start = sum(sizes[:k])
    return x[(slice(None),) * d + (slice(start, start + sizes[k]),)]


def _one_of_pieces(how: str, low: int, high: Callable[[int], int]) -> Callable:
    """Args (arg, dim, k) for x.<how>(arg, dim)[k]."""

    def args(shape: Shape) -> st.SearchStrategy[tuple]:
        return _sized_dim(shape).flatmap(
            lambda d: st.integers(low, high(shape[d])).flatmap(
                lambda arg: st.tuples(
                    st.just(arg),
                    st.just(d),
                    st.integers(0, len(_pieces(shape[d], how, arg)) - 1),
                )
            )
        )

    return args


def _split_with_sizes_args(shape: Shape) -> st.SearchStrategy[tuple]:
    def sizes(n: int) -> st.SearchStrategy[list[int]]:
        return st.integers(0, n).map(lambda a: [a, n - a])

    return _sized_dim(shape).flatmap(
        lambda d: sizes(shape[d]).flatmap(
            lambda ss: st.tuples(st.just(ss), st.just(d), st.integers(0, len(ss) - 1))
        )
    )


SURFACE_VIEW_OPS: tuple[ViewOp, ...] = (
    ViewOp(
        "x.movedim({0}, {1})",
        lambda s, c: len(s) >= 1,
        lambda s: st.tuples(_dims(s), _dims(s)),
        lambda t, a: t.movedim(*a),
        lambda x, a: np.moveaxis(x, *a),
    ),
    ViewOp(
        "x.swapaxes({0}, {1})",
        lambda s, c: len(s) >= 1,
        lambda s: st.tuples(_dims(s), _dims(s)),
        lambda t, a: t.swapaxes(*a),
        lambda x, a: np.swapaxes(x, *a),
    ),
    ViewOp(
        "x.swapdims({0}, {1})",
        lambda s, c: len(s) >= 1,
        lambda s: st.tuples(_dims(s), _dims(s)),
        lambda t, a: t.swapdims(*a),
        lambda x, a: np.swapaxes(x, *a),
    ),
    ViewOp(
        "x.unflatten({0}, {1})",
        _has_sized,
        _unflatten_args,
        lambda t, a: t.unflatten(*a),
        lambda x, a: x.reshape(x.shape[: a[0]] + a[1] + x.shape[a[0] + 1 :]),
    ),
    ViewOp(
        "x.unfold({0}, {1}, {2})",
        _has_sized,
        _unfold_args,
        lambda t, a: t.unfold(*a),
        _unfold_np,
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
        lambda s: st.just(()),
        lambda t, a: t.mT,
        lambda x, a: np.swapaxes(x, -1, -2),
    ),
    ViewOp(
        "x.T",
        lambda s, c: len(s) == 2,
        lambda s: st.just(()),
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
        lambda s: _sized_dim(s).flatmap(lambda d: st.tuples(st.just(d), st.integers(0, s[d] - 1))),
        lambda t, a: t.unbind(a[0])[a[1]],
        lambda x, a: x[(slice(None),) * a[0] + (a[1],)],
        multi_output=True,
    ),
    ViewOp(
        "x.split({0}, {1})[{2}]",
        _has_sized,
        _one_of_pieces("split", 1, lambda n: n),
        lambda t, a: t.split(a[0], a[1])[a[2]],
        lambda x, a: _piece(x, a[1], _pieces(x.shape[a[1]], "split", a[0]), a[2]),
        multi_output=True,
    ),
    ViewOp(
        "x.split_with_sizes({0}, {1})[{2}]",
        _has_sized,
        _split_with_sizes_args,
        lambda t, a: t.split_with_sizes(a[0], a[1])[a[2]],
        lambda x, a: _piece(x, a[1], a[0], a[2]),
        multi_output=True,
    ),
    ViewOp(
        "x.chunk({0}, {1})[{2}]",
        _has_sized,
        _one_of_pieces("chunk", 1, lambda n: n + 1),
        lambda t, a: t.chunk(a[0], a[1])[a[2]],
        lambda x, a: _piece(x, a[1], _pieces(x.shape[a[1]], "chunk", a[0]), a[2]),
        multi_output=True,
    ),
    ViewOp(
        "x.tensor_split({0}, {1})[{2}]",
        _has_sized,
        _one_of_pieces("tensor_split", 1, lambda n: n + 1),
        lambda t, a: t.tensor_split(a[0], a[1])[a[2]],
        lambda x, a: _piece(x, a[1], _pieces(x.shape[a[1]], "tensor_split", a[0]), a[2]),
    ),
    ViewOp(
        "x.hsplit(1)[0]",
        lambda s, c: len(s) >= 1,
        lambda s: st.just(()),
        lambda t, a: t.hsplit(1)[0],
        lambda x, a: x[...],
    ),
    ViewOp(
        "x.vsplit(1)[0]",
        lambda s, c: len(s) >= 2,
        lambda s: st.just(()),
        lambda t, a: t.vsplit(1)[0],
        lambda x, a: x[...],
    ),
)


VIEW_OPS: tuple[ViewOp, ...] = (
    ViewOp(
        "x.transpose({0}, {1})",
        lambda s, c: len(s) >= 1,
        lambda s: st.tuples(_dims(s), _dims(s)),
        lambda t, a: t.transpose(*a),
        lambda x, a: np.swapaxes(x, *a),
    ),
    ViewOp(
        "x.t()",
        lambda s, c: len(s) <= 2,
        lambda s: st.just(()),
        lambda t, a: t.t(),
        lambda x, a: x.T,
    ),
    ViewOp(
        "x.permute{0}",
        lambda s, c: len(s) >= 1,
        lambda s: st.permutations(range(len(s))).map(lambda p: (tuple(p),)),
        lambda t, a: t.permute(*a[0]),
        lambda x, a: np.transpose(x, a[0]),
    ),
    ViewOp(
        "x.select({0}, {1})",
        lambda s, c: len(s) >= 1 and any(n > 0 for n in s),
        _select_args,
        lambda t, a: t.select(*a),
        lambda x, a: x[(slice(None),) * a[0] + (a[1],)],
    ),
    ViewOp(
        "x.narrow({0}, {1}, {2})",
        lambda s, c: len(s) >= 1,
        _narrow_args,
        lambda t, a: t.narrow(*a),
        lambda x, a: x[(slice(None),) * a[0] + (slice(a[1], a[1] + a[2]),)],
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
        lambda s: st.tuples(st.integers(0, len(s))),
        lambda t, a: t.unsqueeze(*a),
        lambda x, a: np.expand_dims(x, a[0]),
    ),
    ViewOp(
        "x.squeeze({0})",
        lambda s, c: len(s) >= 1,
        lambda s: st.tuples(_dims(s)),
        lambda t, a: t.squeeze(*a),
        lambda x, a: _squeeze_np(x, a[0]),
    ),
    ViewOp(
        "x.diagonal({0}, {1}, {2})",
        lambda s, c: len(s) >= 2,
        lambda s: st.tuples(st.integers(-2, 2), st.just(0), st.just(1)),
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
        lambda s: st.just((s + (1,),)),
        lambda t, a: t.view(a[0]),
        lambda x, a: x.reshape(a[0]),
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

    def __repr__(self) -> str:
        return self.op.template.format(*self.args)


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
