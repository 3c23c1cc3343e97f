"""check.close with one atol per element, where some elements are not finite."""

import numpy as np

from conformance.check import close


def test_a_per_element_atol_holds_each_finite_element_to_its_own_bound():
    expected = np.array([[1.0, np.nan], [np.inf, 4.0]])
    atol = np.array([[0.5, 0.0], [0.0, 1e-9]])
    assert close(np.array([[1.4, np.nan], [np.inf, 4.0]]), expected, "float64", (0.0, atol))
    assert not close(np.array([[1.6, np.nan], [np.inf, 4.0]]), expected, "float64", (0.0, atol))
    assert not close(np.array([[1.4, np.nan], [np.inf, 4.1]]), expected, "float64", (0.0, atol))


def test_elements_that_are_not_finite_must_match_exactly():
    expected = np.array([1.0, np.nan, np.inf])
    atol = np.full(3, 1e9)
    assert not close(np.array([1.0, 2.0, np.inf]), expected, "float32", (0.0, atol))
    assert not close(np.array([1.0, np.nan, -np.inf]), expected, "float32", (0.0, atol))
    assert not close(np.array([1.0, np.nan, 5.0]), expected, "float32", (0.0, atol))
