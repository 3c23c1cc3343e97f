"""The differential's gradient tolerance for float gradients computed through
complex tensors (conformance/differential/tolerated.py, parts_atol)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from conformance.check import TOLERANCES, close
from conformance.differential.tolerated import parts_atol

REAL = [SimpleNamespace(dtype="float32")]
THROUGH_COMPLEX = [SimpleNamespace(dtype="float32"), SimpleNamespace(dtype="complex64")]

# ci seed 2: t0.grad of t0.view(...).clone() read as complex (view_as_complex),
# through add, mul, sin_: one complex element (4.5317e23, 2.0701e21) whose
# imaginary part torch and NumPy round 14 of its own ulps apart (1e-8 of |z|)
TORCH = np.array([-3.3546626194835703e24, 4.531707853652811e23, 2.0700795687208485e21])
MODEL = np.array([-3.354662331253194e24, 4.531707853652811e23, 2.070082946420569e21])


def test_a_gradient_through_complex_is_held_to_its_complex_numbers():
    rtol, atol = TOLERANCES["float32"]
    assert not close(TORCH, MODEL, "float32", (rtol, atol))  # held to its own ulps: apart
    atol += parts_atol("float32", MODEL, THROUGH_COMPLEX)
    assert close(TORCH, MODEL, "float32", (rtol, atol))


def test_a_gradient_of_real_tensors_only_gets_no_more():
    assert parts_atol("float32", MODEL, REAL) == 0.0
    assert parts_atol("int64", MODEL, THROUGH_COMPLEX) == 0.0


def test_the_absolute_part_is_a_few_ulps_of_the_largest_number():
    atol = parts_atol("float32", MODEL, THROUGH_COMPLEX)
    largest = 2 * 3.3546626194835703e24
    assert 0 < atol < 1e-5 * largest  # far below what a lost term would move
