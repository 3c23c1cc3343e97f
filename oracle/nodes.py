"""Graph nodes and saved tensors: a grad_fn, what it saved, and the nodes
that lay a view's gradient out in its base's memory (AsStridedBackward0,
CopySlices). oracle.graph runs them backward."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from . import dtype_views
from .bits import apply_bits, between
from .dtype_views import through_bytes
from .dtypes import compute_dtype, op_values, round_to
from .errors import ErrorKind, OracleError
from .geometry import Shape, has_internal_overlap, is_dense
from .storage import strided

if TYPE_CHECKING:
    from .tensor import OTensor

_seq = itertools.count()
Meta = tuple[Shape, str]  # (shape, dtype) of the tensor a node produced: its input metadata


class Saved:
    """A SavedVariable: the version at save time, and what to read back at backward.

    torch keeps an input as the tensor object itself (a later `.data =` on it is seen),
    an output as a shallow copy fixed at save time; copy=True is a private clone.
    by_ctx: saved by a custom Function's ctx.save_for_backward, whose ctx.saved_tensors
    unpacks with the Function's node, so torch never refuses an input detached in
    place (a built-in node unpacks its inputs without it: SavedVariable::unpack).
    """

    def __init__(
        self, t: OTensor, copy: bool = False, output: bool = False, by_ctx: bool = False
    ) -> None:
        self.copy = t.values() if copy else None
        self.by_ctx = by_ctx
        self.tensor, self.was_leaf = (None if output else t), t._fn is None
        self.geom, self.dtype = (t.storage, t.offset, t.shape, t.strides), t.dtype
        self.bits = (t.conj, t.neg)
        self.counter, self.version, self.released = t.counter, t.counter.value, False

    def unpack(self) -> np.ndarray:
        if self.released:
            raise OracleError(ErrorKind.BACKWARD_TWICE)
        if self.copy is not None:
            return op_values(self.copy, self.dtype)
        # torch reads a saved input's grad_fn first (which may regenerate it, or raise)
        detached = self.tensor is not None and self.tensor.grad_fn() is None
        if detached and not self.was_leaf and not self.by_ctx:
            raise OracleError(ErrorKind.SAVED_TENSOR_DETACHED)
        if self.counter.value != self.version:
            raise OracleError(
                ErrorKind.SAVED_TENSOR_MODIFIED,
                f"is at version {self.counter.value}; expected {self.version}",
            )
        if self.tensor is not None:
            return op_values(self.tensor.values(), self.tensor.dtype)
        return op_values(self.memory(), self.dtype)

    def memory(self) -> np.ndarray:
        """The saved geometry's elements as its memory holds them now, read in the
        saved dtype (a real or imag view of complex memory, a view through bytes)."""
        storage = self.geom[0]
        if through_bytes(self.dtype, storage.dtype):  # x.view(dtype): through its bytes
            window = dtype_views.read(storage.buf, storage.dtype, *self.geom[1:], self.dtype)
        else:
            window = strided(*self.geom, compute_dtype(self.dtype))
        return apply_bits(window, *self.bits)


class Node:
    """A grad_fn: backward(g, saved values, needs) gives one gradient per edge.
    An edge is a Node, an Accumulator (a leaf's AccumulateGrad) or None."""

    def __init__(
        self,
        name: str,
        edges: list,
        backward: Callable,
        out: Meta | None,
        saved: dict[str, Saved] | None = None,
        inner: Node | None = None,
    ) -> None:
        self.seq, self.name, self.edges, self.backward = next(_seq), name, edges, backward
        self.out, self.saved, self.inner, self.released = out, saved or {}, inner, False

    # |g|, |saved| -> the terms a formula that cancels sums (OpSpec.grad_terms),
    # and those of its last backward: a gradient's tolerance reads them
    terms_of: Callable | None = None
    terms: np.ndarray | None = None

    def apply(self, g: np.ndarray) -> list:
        values = {k: s.unpack() for k, s in self.saved.items()}
        g0, g = g, op_values(g, self.out[1]) if self.out else g
        if self.terms_of is not None and values:
            self.terms = self.terms_of(np.abs(g), np.abs(next(iter(values.values()))))
        try:
            with np.errstate(all="ignore"):
                out = self.backward(g, values, [e is not None for e in self.edges])
            return [g0 if x is g else x for x in out]  # (a gradient passed on unchanged)
        except ValueError as e:  # a saved input whose `.data =` changed its shape
            raise OracleError(ErrorKind.NOT_BROADCASTABLE, str(e)) from None

    def release(self) -> None:
        self.released = True
        for s in self.saved.values():
            s.released = True
        if self.inner is not None:
            self.inner.release()

    def __repr__(self) -> str:
        return f"<{self.name} #{self.seq}>"


def sum_to(g: np.ndarray, shape: Shape) -> np.ndarray:
    """Reduce a broadcast gradient back to `shape`."""
    if g.shape == tuple(shape):
        return g
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def flat_index(offset: int, shape: Shape, strides: Shape) -> np.ndarray:
    """The storage index of every element of a geometry."""
    idx = np.full(shape, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides, strict=True)):
        idx += (np.arange(n) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
    return idx


def shares_elements(offset: int, shape: Shape, strides: Shape) -> bool:
    """Two elements of a geometry are one place in memory (expanded, or unfold,
    as_strided)."""
    if has_internal_overlap(shape, strides):
        return True
    if is_dense(shape, strides):
        return False
    mine = flat_index(offset, shape, strides)
    return np.unique(mine).size < mine.size


def _buffer(dtype: type, *indices: np.ndarray) -> np.ndarray:
    return np.zeros(max((int(i.max()) + 1 for i in indices if i.size), default=0), dtype)


def _pair(vt: type, bt: type, vidx: np.ndarray, bidx: np.ndarray) -> tuple:
    """Zeroed memory that covers a view and its base of another dtype (view_as_real,
    real, imag, view_as_complex), as the view's and the base's arrays over it."""
    vt, bt = np.dtype(vt), np.dtype(bt)
    spans = [(int(i.max()) + 1) * t.itemsize for i, t in ((vidx, vt), (bidx, bt)) if i.size]
    unit = max(vt.itemsize, bt.itemsize)
    raw = np.zeros(-(-max(spans, default=0) // unit) * unit, np.uint8)
    return raw.view(vt), raw.view(bt)


def as_strided_node(view: OTensor, base: OTensor) -> Node:
    """AsStridedBackward0: a view's grad_fn regenerated after its base was rewritten."""
    vidx = flat_index(view.offset, view.shape, view.strides)
    bidx = flat_index(base.offset, base.shape, base.strides)
    through = between(view, base)  # a conj view's gradient reaches the base conjugated
    vt, bt = compute_dtype(view.dtype), compute_dtype(base.dtype)

    def backward(g: np.ndarray, _: dict, needs: list) -> list:
        if vt is not bt:  # a view of another dtype: the gradient laid out in shared memory
            vbuf, bbuf = _pair(vt, bt, vidx, bidx)
            np.add.at(vbuf, vidx, through(g))
            return [bbuf[bidx]]
        buf = _buffer(g.dtype, vidx, bidx)
        np.add.at(buf, vidx, through(g))
        return [buf[bidx]]

    return Node("AsStridedBackward0", [base.edge()], backward, (view.shape, view.dtype))


def copy_slices(base: OTensor, view: OTensor, inner: Node) -> Node:
    """CopySlices: the base's grad_fn after an in-place op (`inner`) on one of its views.
    The gradient is laid out in the base's memory; the view's part goes through inner."""
    vidx = flat_index(view.offset, view.shape, view.strides)
    bidx = flat_index(base.offset, base.shape, base.strides)
    vshape, vdtype = view.shape, view.dtype
    overlaps = has_internal_overlap(view.shape, view.strides)
    through = between(view, base)  # the view's part of the gradient, as the view reads it
    vt, bt = compute_dtype(view.dtype), compute_dtype(base.dtype)

    def backward(g: np.ndarray, _: dict, needs: list) -> list:
        if inner.released:  # torch drops CopySlices' fn on release, saved tensors or not
            raise OracleError(ErrorKind.BACKWARD_TWICE)
        if vt is not bt:  # a view of another dtype: its part read from the shared memory
            vbuf, buf = _pair(vt, bt, vidx, bidx)
            buf[bidx] = g
            res = inner.apply(through(vbuf[vidx]))
        else:
            vbuf = buf = _buffer(g.dtype, vidx, bidx)
            buf[bidx] = g
            res = inner.apply(through(buf[vidx]))
        if res[0] is None:
            return [None] + res[1:]
        if overlaps:  # copying the gradient back through an expanded view
            raise OracleError(ErrorKind.OVERLAPPING_WRITE)
        if vt is bt:
            vbuf = buf = buf.astype(np.result_type(buf, res[0]))
        vbuf[vidx] = through(round_to(np.broadcast_to(res[0], vshape), vdtype))
        return [buf[bidx]] + res[1:]

    edges = [base.edge()] + inner.edges[1:]
    return Node("CopySlices", edges, backward, (base.shape, base.dtype), inner=inner)
