"""Dtypes by name, with the kind each belongs to and values that cannot overflow.

Names are torch's (`"float32"`, `"bfloat16"`); this module does not import
torch, so the oracle's tests can use it. Values are drawn so that they are
exact in every dtype of their kind (small dyadic rationals for floats, small
integers for integers): a value means the same thing in float16 and float64,
and sums and products of a few of them neither overflow nor lose bits that
matter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


@dataclass(frozen=True)
class DtypeInfo:
    name: str
    kind: str  # "float", "complex", "int" or "bool"
    bits: int

    @property
    def can_require_grad(self) -> bool:
        return self.kind in ("float", "complex")

    @property
    def compute_dtype(self) -> np.dtype:
        """The NumPy dtype that holds this dtype's values without loss."""
        return np.dtype(_COMPUTE[self.kind])


_COMPUTE = {"float": "float64", "complex": "complex128", "int": "int64", "bool": "bool"}

DTYPES: dict[str, DtypeInfo] = {
    info.name: info
    for info in (
        DtypeInfo("float16", "float", 16),
        DtypeInfo("bfloat16", "float", 16),
        DtypeInfo("float32", "float", 32),
        DtypeInfo("float64", "float", 64),
        DtypeInfo("complex64", "complex", 64),
        DtypeInfo("complex128", "complex", 128),
        DtypeInfo("uint8", "int", 8),
        DtypeInfo("int8", "int", 8),
        DtypeInfo("int16", "int", 16),
        DtypeInfo("int32", "int", 32),
        DtypeInfo("int64", "int", 64),
        DtypeInfo("bool", "bool", 8),
    )
}

# The largest finite value of the floating dtypes (of each part, for complex).
LARGEST_FINITE: dict[str, float] = {
    "bfloat16": 3.3895313892515355e38,
    "float16": 65504.0,
    "float32": 3.4028234663852886e38,
    "complex64": 3.4028234663852886e38,
    "float64": 1.7976931348623157e308,
    "complex128": 1.7976931348623157e308,
}

GRAD_DTYPES = tuple(name for name, info in DTYPES.items() if info.can_require_grad)
NO_GRAD_DTYPES = tuple(name for name, info in DTYPES.items() if not info.can_require_grad)

# Shorthands accepted wherever a list of dtypes is given.
DTYPE_GROUPS: dict[str, tuple[str, ...]] = {
    "all": tuple(DTYPES),
    "floating": tuple(n for n, i in DTYPES.items() if i.kind == "float"),
    "complex": tuple(n for n, i in DTYPES.items() if i.kind == "complex"),
    "integral": tuple(n for n, i in DTYPES.items() if i.kind == "int"),
    "grad": GRAD_DTYPES,
}


def parse_dtypes(spec: str) -> tuple[str, ...]:
    """`"float32,integral"` -> the dtype names, in catalogue order.

    Raises ValueError naming the first unknown entry.
    """
    wanted: set[str] = set()
    for raw in spec.split(","):
        name = raw.strip().lower().removeprefix("torch.")
        if not name:
            continue
        if name in DTYPE_GROUPS:
            wanted.update(DTYPE_GROUPS[name])
        elif name in DTYPES:
            wanted.add(name)
        else:
            known = ", ".join([*DTYPES, *DTYPE_GROUPS])
            raise ValueError(f"unknown dtype {raw.strip()!r} (known: {known})")
    if not wanted:
        raise ValueError("no dtype selected")
    return tuple(name for name in DTYPES if name in wanted)


# Strategies are built once per argument and reused: Hypothesis validates
# (and analyses the filters of) every new strategy object on its first draw,
# which cost a property test more than drawing from it.


@cache
def _dyadic(low: int = -6, high: int = 3) -> st.SearchStrategy[float]:
    """k * 2**e with |k| < 16 (four significant bits, exact in bfloat16 and
    up) and low <= e <= high, k and e uniform. One draw from a table of every
    (k, e) instead of two draws and a call: arrays draw this per element.
    The table starts with the simplest values, where shrinking goes: 0, then
    small exponents and small k."""
    pairs = sorted(
        ((k, e) for k in range(-15, 16) for e in range(low, high + 1)),
        key=lambda p: (p[0] != 0, abs(p[1]), abs(p[0]), p[0] < 0),
    )
    return st.sampled_from([float(k) * 2.0**e for k, e in pairs])


@cache
def elements(dtype: str) -> st.SearchStrategy:
    """Scalar values for `dtype`, as Python numbers of its compute kind."""
    info = DTYPES[dtype]
    if info.kind == "float":
        return _dyadic()
    if info.kind == "complex":
        return st.builds(complex, _dyadic(), _dyadic())
    if info.kind == "bool":
        return st.booleans()
    return st.integers(0, 15) if dtype == "uint8" else st.integers(-8, 8)


@cache
def nonzero_elements(dtype: str) -> st.SearchStrategy:
    """Like `elements`, never zero: for divisors and values that must differ."""
    return elements(dtype).filter(lambda v: v != 0)


@cache
def small_elements(dtype: str) -> st.SearchStrategy:
    """Values of magnitude below 8, for formulas that blow up on large inputs."""
    info = DTYPES[dtype]
    small = _dyadic(-4, -1)
    if info.kind == "float":
        return small
    if info.kind == "complex":
        return st.builds(complex, small, small)
    return elements(dtype)


@cache
def nonzero_small_elements(dtype: str) -> st.SearchStrategy:
    return small_elements(dtype).filter(lambda v: v != 0)


@lru_cache(maxsize=4096)
def arrays(
    dtype: str, shape: tuple[int, ...], values: Callable[[str], st.SearchStrategy] = elements
) -> st.SearchStrategy[np.ndarray]:
    """Arrays of `shape` in `dtype`'s compute dtype, each element drawn from
    `values(dtype)`."""
    # fill=nothing: every element drawn on its own. Hypothesis would otherwise
    # fill most of an array with one repeated value, which hides a gradient
    # sent to the wrong element.
    return hnp.arrays(DTYPES[dtype].compute_dtype, shape, elements=values(dtype), fill=st.nothing())


def seeded_values(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Small values for `dtype` made from one drawn seed instead of one draw
    per element: long chains need many tensors, and per-element draws would
    dominate their cost. Seed 0, where shrinking ends, gives all ones."""
    info = DTYPES[dtype]
    if seed == 0:
        one = 1 + 1j if info.kind == "complex" else 1
        return np.full(shape, one, dtype=info.compute_dtype)
    rng = np.random.default_rng(seed)
    if info.kind == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if info.kind == "int":
        low, high = (0, 16) if dtype == "uint8" else (-8, 9)
        return rng.integers(low, high, shape).astype(np.int64)

    def dyadic(low=-15):
        return rng.integers(low, 16, shape) * 2.0 ** rng.integers(-4, 0, shape)

    if info.kind == "complex":
        # no exact-zero parts: which zero (+0 or -0) complex arithmetic gives
        # is not specified, and its sign decides the branch of sqrt and log
        parts = [np.where(p == 0, 0.5, p) for p in (dyadic(), dyadic())]
        return parts[0] + 1j * parts[1]
    return dyadic()
