"""Lazily resolved views (docs/source/tensor_view.rst): `conj()` and
`torch._neg_view()` alias their input and set its conjugate / negative bit
instead of computing anything (oracle.bits); `resolve_conj()` and
`resolve_neg()` materialise the bit into new memory, or hand back the tensor
itself when it has no such bit. `H`, `mH` and `adjoint()` of a complex tensor
are transposing views with the conjugate bit set.

The Engine takes these as `_op_*` methods from ComplexViews."""

from __future__ import annotations

import numpy as np

from . import geometry as geo
from .dtypes import kind
from .tensor import OTensor


def identity(shape: tuple, strides: tuple, offset: int) -> tuple:
    """The geometry of conj() and _neg_view(): the same elements, the same memory."""
    return shape, strides, offset, lambda g, in_shape: g


class ComplexViews:
    """Engine methods for the lazily resolved views (mixed into oracle.Engine)."""

    def _op_bit_view(self, spec, ts: list, p: tuple) -> OTensor:
        """conj(), _neg_view(), and H/mH/adjoint: a view (spec.geom) with the bit
        flipped. conj() of a tensor that is not complex is that tensor itself, and
        H/mH/adjoint of one are plain transposes."""
        t = ts[0]
        bit = "neg" if spec.name == "neg_view" else "conj"
        flip = bit == "neg" or kind(t.dtype) == "complex"
        if spec.name == "conj" and not flip:
            return t
        edge = self._edge_once(t)
        edge()  # the node is recorded before the view is made
        shape, strides, offset, back = spec.geom(t.shape, t.strides, t.offset, *p)
        if flip:  # the gradient goes back through the same bit: conj(g), -g
            back = _through(back, bit)
        v = self._view_result(spec.name, t, (shape, strides, offset, back), edge())
        if flip:
            setattr(v, bit, not getattr(v, bit))
        return v

    def _op_resolve(self, spec, ts: list, p: tuple) -> OTensor:
        """resolve_conj() / resolve_neg(): t itself without the bit; else a copy in
        new memory (clone's layout and CloneBackward0), read through the bits."""
        t = ts[0]
        if not getattr(t, "conj" if spec.name == "resolve_conj" else "neg"):
            return t
        edges = [t.edge()] if self._needs_grad(ts) else None
        strides = geo.preserve_strides(t.shape, t.strides)
        out = self._result(spec, ts, p, t.values(), t.dtype, strides, edges, {})
        out.counter.value = int(t.inference)  # as clone: an inference tensor's is at 1
        return out


def _through(back, bit: str):
    if bit == "conj":
        return lambda g, in_shape: np.conj(back(g, in_shape))
    return lambda g, in_shape: np.negative(back(g, in_shape))
