"""How close torch's values must be to the reference model's: the one table.

A floating result may differ from the model's by a few units of its dtype's
epsilon (`rtol`), because torch's kernels and NumPy's call different libm
routines and round in different places; below the dtype's smallest normal
number (`atol`; its square root for complex dtypes) a kernel may flush to
zero. Each entry says what it rests on:
the largest difference measured between torch 2.13.0 (CPU, and CUDA on an
H200) and the model, over the ops and inputs the suite draws (docs/oracle.md,
"Tolerances", has the command and the figures). A float64 result computed in
float32 differs by up to 2**-24 relative, ten million float64 epsilons: the
float64 entry is far below that, so such a build fails on its values.

Two kinds of result need an absolute part that scales with their terms, not
with the result: a sum of terms (sum, mean, a matrix product) rounds each
partial sum, and cancellation leaves a residue of a few epsilons of the
terms' magnitude (`summed_atol`); a float read out of complex memory (`.imag`
of z / z) is exact to the complex number, not to its part (`part_atol`).
Gradients take the same absolute part for the products their formulas sum
(conformance.differential.tolerated.grad_tolerance).
"""

from __future__ import annotations

from dataclasses import dataclass

# Machine epsilon (2**(1 - precision)) and the smallest normal number.
EPS = {
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
    "float32": 2.0**-23,
    "float64": 2.0**-52,
    "complex64": 2.0**-23,
    "complex128": 2.0**-52,
}
SMALLEST_NORMAL = {
    "float16": 2.0**-14,
    "bfloat16": 2.0**-126,
    "float32": 2.0**-126,
    "float64": 2.0**-1022,
    "complex64": 2.0**-126,
    "complex128": 2.0**-1022,
}
# Below this a kernel may flush: the smallest normal number, and for complex
# dtypes its square root, since a complex product or quotient squares its
# parts (c*c + d*d) and a part below that underflows there. torch 2.4.1's
# complex64 division gives 0j where the model, in complex128, gives 7e-33.
FLUSH = SMALLEST_NORMAL | {"complex64": 2.0**-63, "complex128": 2.0**-511}


@dataclass(frozen=True)
class Tolerance:
    """A dtype's entry: `rtol` in epsilons of the dtype, and what it rests on."""

    epsilons: float
    rests_on: str


TABLE: dict[str, Tolerance] = {
    "float64": Tolerance(
        4,
        "at most 2 ulps measured (sigmoid, 3.65e-16 relative; exp, log, sin, cos, tanh, "
        "sqrt 1 ulp) on the CPU; 1.5 epsilons on CUDA",
    ),
    "float32": Tolerance(4, "at most 2 ulps measured (sigmoid; cos under inductor)"),
    "complex128": Tolerance(8, "2.6 epsilons of |z| measured on the CPU (div), 3.3 on CUDA (tanh)"),
    "complex64": Tolerance(8, "2.6 epsilons of |z| measured on the CPU, 3.5 on CUDA"),
    "float16": Tolerance(
        4, "at most 1 ulp measured: the model rounds once from float64, torch from float32"
    ),
    "bfloat16": Tolerance(4, "at most 1 ulp measured, as float16"),
}

# Epsilons of the terms' magnitude a sum of terms may be off by: 2.9 measured
# (sum, mean, sum_dim, mm, matmul on the CPU; 2.8 on CUDA).
SUMMED_EPSILONS = 8
# Epsilons of |z| a part of a complex number may be off by: z / z's imaginary
# part is -1.9e-17 in torch and 0 in NumPy (0.09 epsilons of |z| = 1).
PART_EPSILONS = 8


def tolerance(dtype: str) -> tuple[float, float]:
    """(rtol, atol) for comparing values of this dtype; integers and bool are exact."""
    entry = TABLE.get(dtype)
    if entry is None:
        return 0.0, 0.0
    return entry.epsilons * EPS[dtype], FLUSH[dtype]


def summed_atol(dtype: str, terms: float) -> float:
    """The absolute part for a sum of terms of magnitude up to `terms` (the
    op run on the magnitudes of its operands)."""
    return SUMMED_EPSILONS * EPS.get(dtype, 0.0) * terms


def part_atol(complex_dtype: str, magnitude: float) -> float:
    """The absolute part for a float part of complex numbers of magnitude up
    to `magnitude`."""
    return PART_EPSILONS * EPS.get(complex_dtype, 0.0) * magnitude


# A compiled program against eager, for a backend that does not run eager's
# kernels (inductor, a user's; aot_eager is compared bit for bit): it runs
# whole, without the differential's resync after each step, and may reorder
# floating-point operations (a fused or vectorized sum adds in another
# order). float64 and complex128: 2**-40 (4096 epsilons) where inductor was
# measured at 0.25 epsilons at most (tools/measure_compiled.py, seeds 0-4:
# 82 programs, 13,344 floating elements, docs/compile.md), a margin for
# reordered sums of the few hundred terms a program draws, and still 65,000
# times below what rounding a result through float32 moves it (2**-24), so
# such a backend fails on its values. The other dtypes keep the bounds the
# differential used before its table was measured (float32 and complex64:
# no difference measured; float16 and bfloat16: 0.6 epsilons measured, and
# inductor elides the downcasts between fused low-precision ops).
COMPILED: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-3),
    "bfloat16": (5e-2, 1e-2),
    "float32": (1e-4, 1e-6),
    "float64": (2.0**-40, 2.0**-40),
    "complex64": (1e-4, 1e-6),
    "complex128": (2.0**-40, 2.0**-40),
}


def compiled_tolerance(dtype: str) -> tuple[float, float]:
    """(rtol, atol) for a compiled program's values against eager's."""
    return COMPILED.get(dtype, (0.0, 0.0))
