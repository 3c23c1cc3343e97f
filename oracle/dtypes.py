"""Dtypes: kinds, compute dtypes, rounding to the declared dtype."""

from __future__ import annotations

import numpy as np

DTYPES = (
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "bool",
)
KIND = {
    d: "bool"
    if d == "bool"
    else "complex"
    if d.startswith("complex")
    else "float"
    if "float" in d
    else "int"
    for d in DTYPES
}
COMPUTE = {"float": np.float64, "complex": np.complex128, "int": np.int64, "bool": np.bool_}
_NARROW = {
    d: getattr(np, d)
    for d in ("float16", "float32", "complex64", "uint8", "int8", "int16", "int32")
}
REAL_OF = {"complex64": "float32", "complex128": "float64"}


def kind(dtype: str) -> str:
    return KIND[dtype]


def compute_dtype(dtype: str) -> type:
    return COMPUTE[KIND[dtype]]


def differentiable(dtype: str) -> bool:
    return KIND[dtype] in ("float", "complex")


# uint64 constants, never Python ints: NumPy 1.x casts a 0-d uint64 array with
# a Python int to float64 (value-based casting), and shifts of floats fail
_U16, _ONE, _HALF_ULP = np.uint64(16), np.uint64(1), np.uint64(0x7FFF)


def _bfloat16(a: np.ndarray) -> np.ndarray:
    bits = np.atleast_1d(a.astype(np.float32)).view(np.uint32).astype(np.uint64)
    rounded = ((bits + _HALF_ULP + ((bits >> _U16) & _ONE)) >> _U16 << _U16).astype(np.uint32)
    rounded = rounded.reshape(np.shape(a))
    out = rounded.view(np.float32).astype(np.float64)
    return np.where(np.isnan(a), np.nan, out)


def round_to(values: object, dtype: str) -> np.ndarray:
    """Cast values (any numpy kind) to dtype, returned in its compute dtype."""
    a = np.asarray(values)
    k = KIND[dtype]
    with np.errstate(all="ignore"):
        if k == "bool":
            return a != 0
        if k != "complex" and a.dtype.kind == "c":
            a = a.real
        if k == "int":
            if a.dtype.kind == "f":
                a = np.trunc(np.nan_to_num(a, nan=0.0))
            a = a.astype(np.int64)
            return a.astype(_NARROW[dtype]).astype(np.int64) if dtype in _NARROW else a
        a = a.astype(COMPUTE[k])
        if dtype == "bfloat16":
            return _bfloat16(a)
        return a.astype(_NARROW[dtype]).astype(COMPUTE[k]) if dtype in _NARROW else a


def op_values(values: np.ndarray, dtype: str) -> np.ndarray:
    """Values as an op on `dtype` computes with them: in the compute dtype, except
    complex64, whose intermediate overflows (sigmoid, products) only match torch's
    when the arithmetic itself is done in complex64."""
    return values.astype(np.complex64) if dtype == "complex64" else values
