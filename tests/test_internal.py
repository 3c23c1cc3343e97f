"""The suite's own errors told apart from torch's (conformance.internal):
what escapes a test's example is torch's when torch raised it, the suite's
otherwise."""

from __future__ import annotations

import torch
from hypothesis.errors import UnsatisfiedAssumption

from conformance.check import InvariantViolation
from conformance.internal import raised_inside_torch, suite_fault


def _raised(action) -> BaseException:
    try:
        action()
    except Exception as error:  # noqa: BLE001 - the error is what is tested
        return error
    raise AssertionError("nothing raised")


def test_an_error_of_the_suites_own_lines_is_its_fault():
    assert suite_fault(_raised(lambda: torch.float32.no_such_attribute))  # AttributeError
    assert suite_fault(_raised(lambda: {}["missing"]))  # KeyError
    # torch called with arguments it does not take, from the suite's line
    assert suite_fault(_raised(lambda: torch.ones(2).view(1, 2, 3, "x")))


def test_torchs_refusals_and_failed_checks_are_not_the_suites_fault():
    assert not suite_fault(_raised(lambda: torch.ones(2).view(3)))  # a RuntimeError
    assert not suite_fault(InvariantViolation("detach.shares_storage", "own storage"))
    assert not suite_fault(UnsatisfiedAssumption())


def test_an_error_torchs_python_code_raises_is_torchs():
    error = _raised(lambda: torch.autograd.grad(1.0, [torch.ones(1)]))
    assert not isinstance(error, RuntimeError)  # a TypeError or AttributeError, in torch's code
    assert raised_inside_torch(error) and not suite_fault(error)
