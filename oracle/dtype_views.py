"""x.view(dtype): the same bytes read as another dtype. The model keeps a
storage's values in their compute dtype (float64 for float32...), so a tensor
whose dtype differs from its storage's (other than the exact pairs complex64 /
float32 and complex128 / float64, which oracle.storage.reinterpret reads) goes
through the storage's true bytes: NumPy's `ndarray.view`, with bfloat16 (no
NumPy dtype) as the high half of a float32's bits."""

from __future__ import annotations

import numpy as np

from .dtypes import compute_dtype, kind, round_to

# the dtypes' own element types (bfloat16: its bits, as uint16)
NARROW = {
    "float16": np.float16,
    "bfloat16": np.uint16,
    "float32": np.float32,
    "float64": np.float64,
    "complex64": np.complex64,
    "complex128": np.complex128,
    "uint8": np.uint8,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "bool": np.bool_,
}
ITEMSIZE = {d: np.dtype(t).itemsize for d, t in NARROW.items()}
_EXACT = ({"complex64", "float32"}, {"complex128", "float64"})


def through_bytes(dtype: str, storage_dtype: str | None) -> bool:
    """Whether a tensor of `dtype` reads a storage of `storage_dtype` byte by byte."""
    return not (storage_dtype in (None, dtype) or {dtype, storage_dtype} in _EXACT)


def to_bytes(values: np.ndarray, dtype: str) -> np.ndarray:
    """Values (in the compute dtype) as the bytes `dtype` stores them in."""
    values = np.ascontiguousarray(round_to(values, dtype))
    if dtype == "bfloat16":
        bits = values.astype(np.float32).view(np.uint32) >> np.uint32(16)
        return bits.astype(np.uint16).view(np.uint8)
    return values.astype(NARROW[dtype]).view(np.uint8)


def from_bytes(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Bytes read as `dtype`, in its compute dtype (a trailing part element dropped)."""
    raw = raw[: len(raw) // ITEMSIZE[dtype] * ITEMSIZE[dtype]]
    if dtype == "bfloat16":
        bits = raw.view(np.uint16).astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        return raw.view(NARROW[dtype]).astype(compute_dtype(dtype))


def _window(flat: np.ndarray, offset: int, shape: tuple, strides: tuple) -> np.ndarray:
    item = flat.itemsize
    byte_strides = tuple(s * item for s in strides)
    return np.lib.stride_tricks.as_strided(flat[offset:], shape, byte_strides)


def read(buf: np.ndarray, storage_dtype: str, offset: int, shape, strides, dtype: str):
    """The elements of a (shape, strides, offset) window of `dtype` over a storage."""
    flat = from_bytes(to_bytes(buf, storage_dtype), dtype)
    return _window(flat, offset, shape, strides).copy()


def write(buf: np.ndarray, storage_dtype: str, offset: int, shape, strides, dtype: str, values):
    """Store values (of `dtype`) into the window, then the storage's values from its bytes."""
    raw = to_bytes(buf, storage_dtype)
    size = len(raw) // ITEMSIZE[dtype] * ITEMSIZE[dtype]
    typed = raw[:size].view(NARROW[dtype])
    new = to_bytes(np.broadcast_to(values, shape), dtype).view(NARROW[dtype]).reshape(shape)
    _window(typed, offset, shape, strides)[...] = new
    buf[...] = from_bytes(raw, storage_dtype)


def geometry(shape: tuple, strides: tuple, offset: int, old: str, new: str) -> tuple:
    """x.view(dtype)'s (shape, strides, offset), with torch's checks in its order
    (aten/src/ATen/native/TensorConversions.cpp, view_dtype)."""
    from .errors import ErrorKind, OracleError

    a, b = ITEMSIZE[old], ITEMSIZE[new]
    if a == b:
        return shape, strides, offset
    what = f"to view {old} as {new} (different element sizes)"
    bad = ErrorKind.DTYPE_VIEW_LAYOUT
    if not shape:
        raise OracleError(bad, f"self.dim() cannot be 0 {what}")
    if a > b:  # smaller elements: the last dim grows
        r = a // b
        if strides[-1] != 1:
            raise OracleError(bad, f"self.stride(-1) must be 1 {what}")
        return (
            shape[:-1] + (shape[-1] * r,),
            tuple(s * r for s in strides[:-1]) + (1,),
            offset * r,
        )
    r = b // a
    if shape[-1] % r:
        raise OracleError(bad, f"self.size(-1) must be divisible by {r} {what}")
    if offset % r:
        raise OracleError(bad, f"self.storage_offset() must be divisible by {r} {what}")
    if strides[-1] != 1:
        raise OracleError(bad, f"self.stride(-1) must be 1 {what}")
    for i, s in enumerate(strides[:-1]):
        if s % r:
            raise OracleError(bad, f"self.stride({i}) must be divisible by {r} {what}")
    return shape[:-1] + (shape[-1] // r,), tuple(s // r for s in strides[:-1]) + (1,), offset // r


class DtypeViews:
    """The Engine method for x.view(dtype) (mixed into oracle.Engine)."""

    def _op_view_dtype(self, spec, ts: list, p: tuple):
        """An alias of x's memory as another dtype: x's version counter, no _base,
        never requires grad (measured on 2.13: detach()'s relation, not a view's)."""
        t, new = ts[0], p[0]
        if new != t.dtype and (t.conj or t.neg):
            raise TypeError("view(dtype) of a tensor with a conj/neg bit is not modelled")
        shape, strides, offset = geometry(t.shape, t.strides, t.offset, t.dtype, new)
        out = self._op_detach(spec, ts, ())
        out.shape, out.strides, out.offset, out.dtype = tuple(shape), tuple(strides), offset, new
        if new != t.dtype:
            t.storage.byte_viewed = True
            sdtype = t.storage.dtype or t.dtype
            if kind(sdtype) in ("float", "complex") and np.isnan(t.storage.buf).any():
                # a NaN's sign and payload bits: torch's (sqrt(-1) is +nan) are not NumPy's
                self.undefined = "x.view(dtype) of memory holding NaNs: their bits"
                self.bits_undefined = True
        return out

    def _written_under_dtype_view(self, spec, t) -> None:
        """A write into memory that some x.view(dtype) reads as another dtype. Where
        torch's last bit and NumPy's may differ (exp, division, even the sign of a
        negated zero), the other dtype's reading shows it magnified (the high half of
        a float32 is a float16); and the model keeps no NaN's payload bits (NumPy
        quiets them, bfloat16's rounding makes them canonical)."""
        floating = ("float", "complex")
        why = None
        if kind(t.dtype) in floating and not spec.exact_bits:
            why = f"{spec.name} into memory also read as another dtype: its last bits"
        elif kind(t.storage.dtype or t.dtype) in floating and np.isnan(t.storage.buf).any():
            why = f"{spec.name} left NaN bits in memory read as another dtype: payloads"
        elif kind(t.dtype) in floating and np.isnan(t.values()).any():
            why = f"{spec.name} wrote NaNs into memory read as another dtype: payloads"
        self.undefined = self.undefined or why
        self.bits_undefined = self.bits_undefined or why is not None
