"""The one tolerance table (oracle.tolerances): tight enough that a float64
result computed in float32 fails, wide enough for the libm differences
measured between torch's kernels and the model's. No torch here."""

from __future__ import annotations

import numpy as np
import pytest

from oracle import tolerance
from oracle.tolerances import EPS, TABLE, compiled_tolerance, part_atol, summed_atol
from strategies.dtypes import DTYPES


def _close(actual, expected, dtype: str, atol_extra: float = 0.0) -> bool:
    rtol, atol = tolerance(dtype)
    return bool(np.allclose(actual, expected, rtol=rtol, atol=atol + atol_extra))


def test_every_floating_dtype_has_an_entry_that_says_what_it_rests_on():
    floating = {d for d, info in DTYPES.items() if info.kind in ("float", "complex")}
    assert set(TABLE) == floating
    assert all(entry.rests_on for entry in TABLE.values())
    assert tolerance("int64") == (0.0, 0.0) and tolerance("bool") == (0.0, 0.0)


def test_a_float64_result_rounded_through_float32_fails():
    x = np.linspace(0.1, 3.0, 1000)
    exact = np.exp(x)
    rounded = exact.astype(np.float32).astype(np.float64)
    inexact = rounded != exact
    assert inexact.sum() > 900
    pairs = zip(rounded[inexact], exact[inexact], strict=True)
    assert not any(_close(r, e, "float64") for r, e in pairs)
    # while a float32 result a few ulps off holds
    off = np.nextafter(np.nextafter(np.float32(exact[5]), np.inf), np.inf)
    assert _close(np.float64(off), np.float64(np.float32(exact[5])), "float32")


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_two_ulps_hold_and_a_thousand_do_not(dtype):
    one = 1.5
    assert _close(one * (1 + 2 * EPS[dtype]), one, dtype)
    assert not _close(one * (1 + 1000 * EPS[dtype]), one, dtype)


def test_a_sum_is_compared_to_the_magnitude_of_its_terms():
    # 1e8 + 1 - 1e8 in float64: the residue of rounding is an ulp of 1e8, not of 1
    terms = 2e8 + 1
    assert not _close(1.0 + 1.49e-8, 1.0, "float64")
    assert _close(1.0 + 1.49e-8, 1.0, "float64", summed_atol("float64", terms))
    assert not _close(1.0 + 1e-3, 1.0, "float64", summed_atol("float64", terms))


def test_a_part_of_a_complex_number_is_compared_to_the_number():
    # z / z in torch: 1 - 1.9e-17j, in NumPy 1 + 0j; the imaginary part alone is 0 vs 1.9e-17
    assert not _close(-1.9e-17, 0.0, "float64")
    assert _close(-1.9e-17, 0.0, "float64", part_atol("complex128", 1.0))
    assert not _close(-1e-9, 0.0, "float64", part_atol("complex128", 1.0))


def _compiled_close(actual, expected, dtype: str) -> bool:
    rtol, atol = compiled_tolerance(dtype)
    return bool(np.allclose(actual, expected, rtol=rtol, atol=atol))


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_a_compiled_float64_result_rounded_through_float32_fails(dtype):
    x = np.linspace(0.1, 3.0, 1000) * (1 + 1j if dtype == "complex128" else 1)
    exact = np.exp(x)
    single = np.complex64 if dtype == "complex128" else np.float32
    rounded = exact.astype(single).astype(exact.dtype)
    inexact = rounded != exact
    assert inexact.sum() > 900
    pairs = zip(rounded[inexact], exact[inexact], strict=True)
    assert not any(_compiled_close(r, e, dtype) for r, e in pairs)
    # while a reordered sum of a few hundred terms (an epsilon of the terms
    # each) and what inductor was measured at (0.25 epsilons) hold
    terms = np.full(500, 0.1)
    assert _compiled_close(np.sum(terms[::-1]) + 500 * EPS[dtype], np.sum(terms), dtype)
    assert _compiled_close(exact[7] * (1 + EPS[dtype] / 4), exact[7], dtype)


def test_compiled_bounds_are_no_tighter_than_the_differentials():
    for dtype in TABLE:
        assert compiled_tolerance(dtype)[0] >= tolerance(dtype)[0]
    assert compiled_tolerance("int64") == (0.0, 0.0)


def test_a_complex_result_may_flush_where_its_parts_squared_underflow():
    # torch 2.4.1's complex64 division: 0j where the model gives 3.6e-33+6.1e-33j
    assert _close(np.complex64(0), np.complex128(3.6e-33 + 6.1e-33j), "complex64")
    assert not _close(np.complex64(0), np.complex128(1e-15 + 1e-15j), "complex64")
    assert not _close(0.0, 7e-33, "float32")  # a real float32 does not square its value
