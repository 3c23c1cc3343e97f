"""A NumPy reference model of PyTorch's eager autograd, aliasing and version counters."""

from .dtypes import DTYPES, tolerance
from .engine import Engine
from .errors import ErrorKind, OracleError, classify
from .ops import OPS, OpSpec
from .tensor import OTensor, Storage, VersionCounter

__all__ = [
    "DTYPES",
    "OPS",
    "Engine",
    "ErrorKind",
    "OTensor",
    "OpSpec",
    "OracleError",
    "Storage",
    "VersionCounter",
    "classify",
    "tolerance",
]
