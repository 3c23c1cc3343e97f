"""A NumPy reference model of PyTorch's eager autograd, aliasing and version counters."""

from .dtypes import DTYPES
from .engine import Engine
from .errors import ErrorKind, OracleError, classify
from .ops import OPS, OpSpec
from .releases import NEWEST, Release
from .storage import Storage, VersionCounter
from .tensor import OTensor
from .tolerances import tolerance

__all__ = [
    "DTYPES",
    "NEWEST",
    "OPS",
    "Engine",
    "ErrorKind",
    "OTensor",
    "OpSpec",
    "OracleError",
    "Release",
    "Storage",
    "VersionCounter",
    "classify",
    "tolerance",
]
