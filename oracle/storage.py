"""Storage and version counters: the memory tensors are windows onto, read
through strided()."""

from __future__ import annotations

import numpy as np

from .geometry import Shape


class VersionCounter:
    """Shared by a tensor, its views and detach(); bumped by every in-place write."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class Storage:
    """A flat buffer in the compute dtype; tensors are strided windows onto it."""

    __slots__ = ("buf", "dtype", "byte_viewed")

    def __init__(self, buf: np.ndarray, dtype: str | None = None) -> None:
        self.buf = buf
        self.dtype = dtype  # the dtype whose bytes it holds (x.view(dtype) reads them)
        self.byte_viewed = False  # read as another dtype by some x.view(dtype)


def reinterpret(buf: np.ndarray, dtype: np.dtype | type | None) -> np.ndarray:
    """buf's memory read as another compute dtype (view_as_real, real, imag of a
    complex tensor, view_as_complex of a float one): complex128 is two float64."""
    if dtype is None or buf.dtype == dtype:
        return buf
    ratio = np.dtype(dtype).itemsize // buf.itemsize
    return (buf[: len(buf) // ratio * ratio] if ratio > 1 else buf).view(dtype)


def strided(
    storage: Storage, offset: int, shape: Shape, strides: Shape, dtype: type | None = None
) -> np.ndarray:
    buf = reinterpret(storage.buf, dtype)
    item = buf.itemsize
    byte_strides = tuple(s * item for s in strides)
    try:
        # the ndarray constructor: a tenth of as_strided's cost (the differential
        # reads every tensor it compares through here)
        return np.ndarray(shape, buf.dtype, buf, offset * item, byte_strides)
    except ValueError:  # one it refuses (an empty window past the end): unchecked, as before
        return np.lib.stride_tricks.as_strided(buf[offset:], shape, byte_strides)
