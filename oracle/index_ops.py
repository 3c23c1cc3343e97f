"""In-place writes at indexed positions: advanced-indexing setitem (index_put_),
index_put_, masked_fill_, index_add_, index_copy_ and scatter_.

Each is (forward, backward): forward(self, source, params) gives self's new
values; backward(g, params, source shape) gives (gradient to self's old values,
gradient to the source). None of them saves self; index_add_ and index_copy_
save the source when it requires grad (their formulas `expand_as(source)`, in
tools/autograd/derivatives.yaml), so a later write to it makes backward raise;
every one saves its indices, so a second backward without retain_graph raises.
Indices are Python lists (the torch call wraps them in a LongTensor) and, where
a repeated index would leave torch's result unspecified, they are distinct.
"""

from __future__ import annotations

import numpy as np

from .nodes import sum_to


def _rows(index: list, dim: int, ndim: int) -> tuple:
    return (slice(None),) * dim + (np.asarray(index, dtype=np.int64),)


# index_put_((index,), values) and x[index] = values: rows of dim 0
def put_fwd(x: np.ndarray, v: np.ndarray, p: tuple) -> np.ndarray:
    out = x.copy()
    out[np.asarray(p[0], dtype=np.int64)] = v
    return out


def put_bwd(g: np.ndarray, p: tuple, src_shape: tuple) -> tuple:
    rows = np.asarray(p[0], dtype=np.int64)
    to_self = g.copy()
    to_self[rows] = 0
    return to_self, sum_to(g[rows], src_shape)


# masked_fill_(mask, value)
def mask_fwd(x: np.ndarray, v: None, p: tuple) -> np.ndarray:
    return np.where(np.asarray(p[0], dtype=bool), p[1], x)


def mask_bwd(g: np.ndarray, p: tuple, src_shape: tuple) -> tuple:
    return np.where(np.asarray(p[0], dtype=bool), 0, g), None


# index_add_(dim, index, source): repeated indices add up
def add_fwd(x: np.ndarray, v: np.ndarray, p: tuple) -> np.ndarray:
    out = np.moveaxis(x.copy(), p[0], 0)
    np.add.at(out, np.asarray(p[1], dtype=np.int64), np.moveaxis(v, p[0], 0))
    return np.moveaxis(out, 0, p[0])


def add_bwd(g: np.ndarray, p: tuple, src_shape: tuple) -> tuple:
    return g, g[_rows(p[1], p[0], g.ndim)]


# index_copy_(dim, index, source)
def copy_fwd(x: np.ndarray, v: np.ndarray, p: tuple) -> np.ndarray:
    out = x.copy()
    out[_rows(p[1], p[0], x.ndim)] = v
    return out


def copy_bwd(g: np.ndarray, p: tuple, src_shape: tuple) -> tuple:
    key = _rows(p[1], p[0], g.ndim)
    to_self = g.copy()
    to_self[key] = 0
    return to_self, g[key]


# scatter_(dim, index, src): index and src have self's shape here
def scatter_fwd(x: np.ndarray, v: np.ndarray, p: tuple) -> np.ndarray:
    out = x.copy()
    np.put_along_axis(out, np.asarray(p[1], dtype=np.int64).reshape(x.shape), v, p[0])
    return out


def scatter_bwd(g: np.ndarray, p: tuple, src_shape: tuple) -> tuple:
    index = np.asarray(p[1], dtype=np.int64).reshape(g.shape)
    to_self = g.copy()
    np.put_along_axis(to_self, index, 0, p[0])
    return to_self, np.take_along_axis(g, index, p[0])


ROWS = {
    # name: (torch call, params, forward, backward, arity, dtype kinds).
    # masked_fill_, index_add_, index_copy_ and scatter_ take their mask or
    # index on self's device (on CUDA a CPU one is refused); x[idx] and
    # index_put_ take a CPU index on any device.
    "setitem_t": (
        "{t0}[torch.tensor({p0}, dtype=torch.long)] = {t1}",
        ("index",),
        put_fwd,
        put_bwd,
        2,
    ),
    "index_put_": (
        "{t0}.index_put_((torch.tensor({p0}, dtype=torch.long),), {t1})",
        ("index",),
        put_fwd,
        put_bwd,
        2,
    ),
    "masked_fill_": (
        "{t0}.masked_fill_(torch.tensor({p0}, dtype=torch.bool, device={t0}.device), {p1})",
        ("mask", "value"),
        mask_fwd,
        mask_bwd,
        1,
    ),
    "index_add_": (
        "{t0}.index_add_({p0}, torch.tensor({p1}, dtype=torch.long, device={t0}.device), {t1})",
        ("dim", "index"),
        add_fwd,
        add_bwd,
        2,
    ),
    "index_copy_": (
        "{t0}.index_copy_({p0}, torch.tensor({p1}, dtype=torch.long, device={t0}.device), {t1})",
        ("dim", "index"),
        copy_fwd,
        copy_bwd,
        2,
    ),
    "scatter_": (
        "{t0}.scatter_({p0}, torch.tensor({p1}, dtype=torch.long, device={t0}.device), {t1})",
        ("dim", "index"),
        scatter_fwd,
        scatter_bwd,
        2,
    ),
}
