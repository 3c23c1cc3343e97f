"""Assertions that speak in invariant IDs.

A failed check raises `InvariantViolation`, an AssertionError that carries
the ID of the rule it broke, so pytest, Hypothesis's shrinking and the reports
all see which rule broke. Errors torch raises are matched by stable
substrings, never by whole messages or node names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import torch

from conformance.invariants import INVARIANTS
from oracle.dtypes import round_to
from oracle.errors import classify
from oracle.tolerances import TABLE as TOLERANCE_TABLE
from oracle.tolerances import tolerance
from strategies.dtypes import DTYPES
from strategies.tensors import DTYPE_NAMES, to_numpy


class InvariantViolation(AssertionError):
    """A rule of the catalogue does not hold."""

    def __init__(
        self,
        invariant: str,
        message: str,
        example: str = "",
        repro: str = "",
        repro_asserts: bool = True,
    ) -> None:
        if invariant not in INVARIANTS:
            raise KeyError(f"unknown invariant {invariant!r}")
        self.invariant = invariant
        self.example = example  # the minimal counterexample, as text
        self.repro = repro  # a standalone torch script that reproduces it
        # whether the script fails where the rule is broken (it ends in
        # assertions), so that running it tells whether it reproduces
        self.repro_asserts = repro_asserts
        super().__init__(f"[{invariant}] {message}")


def expect(invariant: str, condition: object, message: str) -> None:
    if not condition:
        raise InvariantViolation(invariant, message)


def error_class(error: BaseException) -> str | None:
    """The class of a torch error, or None for an error of no known class."""
    if not isinstance(error, RuntimeError):
        return None
    kind = classify(str(error))  # (the oracle's table: one list of classes and their messages)
    return None if kind is None else kind.name


def expect_raises(
    invariant: str, expected_class: str, action: Callable[[], object], what: str
) -> RuntimeError:
    """`action` must raise a RuntimeError of `expected_class`."""
    try:
        action()
    except RuntimeError as error:
        got = error_class(error)
        expect(
            invariant,
            got == expected_class,
            f"{what} raised an error of class {got}, expected {expected_class}: {error}",
        )
        return error
    raise InvariantViolation(invariant, f"{what} did not raise ({expected_class} expected)")


def expect_no_raise(invariant: str, action: Callable[[], object], what: str) -> object:
    """`action` must not raise; if it does, the invariant is violated."""
    try:
        return action()
    except RuntimeError as error:
        raise InvariantViolation(invariant, f"{what} raised: {error}") from error


@contextmanager
def attributed_to(invariant: str, what: str) -> Iterator[None]:
    """Any RuntimeError inside is reported as a violation of `invariant`."""
    try:
        yield
    except RuntimeError as error:
        raise InvariantViolation(invariant, f"{what} raised: {error}") from error


# (rtol, atol) per floating dtype: the one table, oracle.tolerances
TOLERANCES: dict[str, tuple[float, float]] = {d: tolerance(d) for d in TOLERANCE_TABLE}


def close(
    actual: np.ndarray,
    expected: np.ndarray,
    dtype: str,
    tolerance: tuple[float, float] | None = None,
) -> bool:
    """Equal for integers and bool; within (rtol, atol) for floating dtypes
    (atol: one number, or one per element)."""
    if actual.shape != np.shape(expected):
        return False
    # the common case, at a tenth of allclose's cost (np.array_equal, shapes known equal)
    if bool(np.asarray(actual == np.asarray(expected)).all()):
        return True
    if dtype not in TOLERANCES:
        return False
    rtol, atol = tolerance or TOLERANCES[dtype]
    if np.iscomplexobj(actual) or np.iscomplexobj(expected):
        # C++ and NumPy disagree on which of inf and nan complex arithmetic
        # gives once a part is not finite; only finiteness must agree there
        odd_a, odd_e = ~np.isfinite(actual), ~np.isfinite(expected)
        if not np.array_equal(odd_a, odd_e):
            return False
        actual, expected = actual[~odd_a], np.asarray(expected)[~odd_e]
        if np.ndim(atol):  # (one per element)
            atol = np.broadcast_to(atol, odd_a.shape)[~odd_a]
    elif np.ndim(atol):
        # NumPy 1.x's isclose drops the elements that are not finite from both
        # sides but not from a per-element atol, and then raises; they must
        # match exactly (nan with nan, inf with inf of its sign), the rest is
        # held to its own atol
        actual, expected = np.asarray(actual), np.asarray(expected)
        finite = np.isfinite(actual) & np.isfinite(expected)
        if not np.array_equal(actual[~finite], expected[~finite], equal_nan=True):
            return False
        atol = np.broadcast_to(atol, finite.shape)[finite]
        actual, expected = actual[finite], expected[finite]
    return bool(np.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True))


def expect_values(
    invariant: str,
    tensor: torch.Tensor,
    expected: np.ndarray,
    what: str,
    tolerance: tuple[float, float] | None = None,
) -> None:
    """`tensor` holds `expected` (within `tolerance`, by default its dtype's).
    Integer expectations wrap to the dtype's width, as torch's integer
    arithmetic does (uint8 10 * 4 * 7 holds 24)."""
    actual = to_numpy(tensor)
    dtype = DTYPE_NAMES[tensor.dtype]
    if DTYPES[dtype].kind == "int":
        expected = round_to(expected, dtype)
    expect(
        invariant,
        close(actual, np.asarray(expected), dtype, tolerance),
        f"{what}: holds {actual.tolist()!r}, expected {np.asarray(expected).tolist()!r}",
    )


def storage_id(tensor: torch.Tensor) -> int:
    """Identity of a tensor's storage (its StorageImpl), meaningful for empty tensors too."""
    return tensor.untyped_storage()._cdata


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return storage_id(a) == storage_id(b)


def version(tensor: torch.Tensor) -> int:
    return tensor._version


def writable_elements(tensor: torch.Tensor) -> bool:
    """A write to this tensor touches memory: it has elements."""
    return tensor.numel() > 0


def dense(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether elements of this geometry tile a block of memory exactly once,
    in some order of the dimensions (torch's "dense, non-overlapping")."""
    dims = sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: strides[d])
    expected = 1
    for d in dims:
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def dense_non_overlapping(tensor: torch.Tensor) -> bool:
    return dense(tuple(tensor.shape), tuple(tensor.stride()))
