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
from .dtype_views import ITEMSIZE
from .dtypes import kind
from .errors import ErrorKind, OracleError
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


# ---- views that read memory as another dtype ----------------------------------------
def _as_real(g: np.ndarray, in_shape: tuple) -> np.ndarray:
    """view_as_real's gradient: the last dim's pairs as complex numbers."""
    g = np.asarray(g)
    return (g[..., 0] + 1j * g[..., 1]).reshape(in_shape)


def _as_complex(g: np.ndarray, in_shape: tuple) -> np.ndarray:
    """view_as_complex's gradient: each complex number as a (real, imag) pair."""
    g = np.asarray(g)
    return np.stack([np.real(g), np.imag(g)], axis=-1).reshape(in_shape)


def view_as_real(shape: tuple, strides: tuple, offset: int) -> tuple:
    """A complex tensor's memory as its (real, imag) pairs: a last dim of 2 and
    every stride doubled, in units of the real dtype."""
    return shape + (2,), tuple(2 * s for s in strides) + (1,), 2 * offset, _as_real


def real(shape: tuple, strides: tuple, offset: int) -> tuple:
    return shape, tuple(2 * s for s in strides), 2 * offset, lambda g, s: np.asarray(g) + 0j


def imag(shape: tuple, strides: tuple, offset: int) -> tuple:
    return shape, tuple(2 * s for s in strides), 2 * offset + 1, lambda g, s: 1j * np.asarray(g)


def view_as_complex(shape: tuple, strides: tuple, offset: int) -> tuple:
    """A real tensor's last dim of 2 read as complex numbers (torch's checks, in its
    order: a dim at all, a last dim of size 2 and stride 1, even strides and offset; the
    stride of a dim of size 1 is not checked, and halved rounding down: measured on 2.13)."""
    layout = ErrorKind.COMPLEX_LAYOUT
    if not shape:
        raise OracleError(layout, "Input tensor must have one or more dimensions")
    if shape[-1] != 2:
        raise OracleError(layout, "Tensor must have a last dimension of size 2")
    if strides[-1] != 1:
        raise OracleError(layout, "Tensor must have a last dimension with stride 1")
    if any(s % 2 for s, n in zip(strides[:-1], shape, strict=False) if n != 1):  # (measured)
        raise OracleError(layout, "Tensor must have a stride divisible by 2 for all but last")
    if offset % 2:
        raise OracleError(layout, "Tensor must have a storage_offset divisible by 2")
    return shape[:-1], tuple(s // 2 for s in strides[:-1]), offset // 2, _as_complex


def byte_overlap_status(a: OTensor, b: OTensor) -> str:
    """torch's get_overlap_status for two tensors of one storage read as different
    dtypes: it compares the byte ranges they span."""
    if not geo.numel(a.shape) or not geo.numel(b.shape):
        return "no"
    if not geo.is_dense(a.shape, a.strides) or not geo.is_dense(b.shape, b.strides):
        return "too_hard"
    ia, ib = ITEMSIZE[a.dtype], ITEMSIZE[b.dtype]
    sa, sb = a.offset * ia, b.offset * ib
    ea, eb = sa + geo.numel(a.shape) * ia, sb + geo.numel(b.shape) * ib
    if sa == sb and ea == eb:
        return "full" if tuple(a.strides) == tuple(b.strides) else "partial"
    return "partial" if sa < eb and sb < ea else "no"


REAL_DTYPE = {"complex64": "float32", "complex128": "float64"}
COMPLEX_DTYPE = {v: k for k, v in REAL_DTYPE.items()}


class ReinterpretingViews:
    """Engine methods for view_as_real, view_as_complex, real and imag."""

    def _op_reinterpret(self, spec, ts: list, p: tuple) -> OTensor:
        t, name = ts[0], spec.name
        complex_ = kind(t.dtype) == "complex"
        if name == "real" and not complex_:
            return t  # x.real of a real tensor is x
        if name == "imag" and not complex_:
            raise OracleError(ErrorKind.NOT_COMPLEX, "imag is not implemented for tensors")
        if name == "view_as_complex" and t.dtype not in COMPLEX_DTYPE:
            raise TypeError(f"view_as_complex of {t.dtype} is not modelled")  # (complex32)
        if name == "view_as_real" and t.conj:
            raise OracleError(ErrorKind.UNRESOLVED_CONJ, "view_as_real doesn't work on")
        edge = self._edge_once(t)
        edge()  # the node is recorded before the view is made
        geom = spec.geom(t.shape, t.strides, t.offset)
        dtype = COMPLEX_DTYPE[t.dtype] if name == "view_as_complex" else REAL_DTYPE[t.dtype]
        v = self._view_result(name, t, geom, edge())
        v.dtype = dtype
        if v._fn is not None:
            v._fn.out = (v.shape, dtype)
        if name in ("real", "imag"):  # the part read through the bits: -imag of a conj
            v.conj, v.neg = False, t.neg != (name == "imag" and t.conj)
        return v
