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


def views(shape: Shape, contiguous: bool, writable: bool = False) -> st.SearchStrategy[DrawnView]:
    """A view op that applies to a tensor of `shape` (and `contiguous`-ness).

    `writable` leaves out views that read an element more than once.
    """
    ops = [
        op for op in VIEW_OPS if op.applies(shape, contiguous) and not (writable and op.overlapping)
    ]
    return st.sampled_from(ops).flatmap(
        lambda op: op.args(shape).map(lambda args: DrawnView(op, args))
    )
