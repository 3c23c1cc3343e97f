"""Parameters and source shapes for the writes at indexed positions
(oracle.index_ops): which rows, which mask, which permutation. Only valid
calls are drawn, with distinct indices where a repeated one would leave
torch's result unspecified (index_add_ alone adds repeated rows up)."""

from __future__ import annotations

import numpy as np

from conformance.differential.choices import SEEDS, ints, one_of, scalars

Shape = tuple[int, ...]


def _rows(draw, n: int, distinct: bool) -> list[int] | None:
    if n == 0:
        return None
    rng = np.random.default_rng(draw(SEEDS))
    count = draw(ints(1, n if distinct else n + 1))
    rows = rng.permutation(n)[:count] if distinct else rng.integers(0, n, count)
    if draw(ints(0, 3)) == 0:  # counted from the end
        rows = rows - n
    return [int(r) for r in rows]


def _dim(draw, shape: Shape) -> int | None:
    sized = tuple(d for d, n in enumerate(shape) if n > 0)
    return draw(one_of(sized)) if sized else None


def index_params(draw, op: str, t) -> tuple | None:
    shape = tuple(t.shape)
    if not shape or 0 in shape:
        return None
    if op in ("setitem_t", "index_put_"):
        rows = _rows(draw, shape[0], distinct=True)
        return None if rows is None else (rows,)
    if op == "masked_fill_":
        rng = np.random.default_rng(draw(SEEDS))
        return (rng.random(shape).round().astype(bool).tolist(), draw(scalars(t.dtype, False)))
    d = _dim(draw, shape)
    if d is None:
        return None
    if op == "scatter_":  # a permutation along d in every slice: each target written once
        rng = np.random.default_rng(draw(SEEDS))
        return (d, np.argsort(rng.random(shape), axis=d).tolist())
    rows = _rows(draw, shape[d], distinct=op != "index_add_")
    return (d, [r % shape[d] for r in rows])  # (dim-wise index ops take no negative index)


def source_shape(draw, op: str, shape: Shape, params: tuple) -> Shape:
    """The shape of the source tensor the write takes its values from."""
    if op in ("setitem_t", "index_put_"):
        full = (len(params[0]),) + shape[1:]
        return draw(one_of((full, full, shape[1:], ())))  # broadcast to the rows, or not
    if op == "scatter_":
        return shape
    d, rows = params
    return shape[:d] + (len(rows),) + shape[d + 1 :]


INDEX_WRITES = ("setitem_t", "index_put_", "masked_fill_", "index_add_", "index_copy_", "scatter_")
