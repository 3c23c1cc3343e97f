"""The suite's own errors, told apart from torch's.

An exception raised while the suite's machinery runs (drawing an input from
a strategy, running the reference model, comparing and attributing, writing
a minimal chain) is the suite's bug, never a rule torch broke: it is raised
again as an `InternalError`, the run exits 3 and the report shows it in its
"internal error" section with the original traceback.

The rule is by what was running, not by where the innermost frame is: torch
raises from C++, so the innermost Python frame of a torch error is the
suite's line that called it. Calls into torch keep their meaning (an error a
rule forbids is a violation); only the suite's own steps are wrapped here.

`InternalError` is a BaseException, like pytest's own outcomes: Hypothesis
does not shrink it (a minimal example of the suite's bug is not worth a
minute), and no `except Exception` on the way turns it into a torch outcome.
"""

from __future__ import annotations

import importlib.util
import os
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis.errors import Frozen, UnsatisfiedAssumption

# Hypothesis's control flow inside a draw: a rejected example, a draw after
# the example ended. Never the suite's bug.
_CONTROL_FLOW = (UnsatisfiedAssumption, Frozen)


class InternalError(BaseException):
    """An exception from the suite's own code, not from torch."""

    def __init__(self, where: str, error: BaseException) -> None:
        self.where = where  # what the suite was doing: "drawing 'source'", ...
        self.error = error
        self.original = "".join(traceback.format_exception(error))
        super().__init__(f"internal error while {where}: {type(error).__name__}: {error}")


@contextmanager
def suite_code(where: str) -> Iterator[None]:
    """Any exception inside is the suite's: raised again as an InternalError."""
    try:
        yield
    except _CONTROL_FLOW:
        raise
    except Exception as error:  # noqa: BLE001 - whatever the suite's code raised
        raise InternalError(where, error) from error


def internal_error_in(error: BaseException | None) -> InternalError | None:
    """The InternalError an exception is, or carries in a group or as a cause."""
    stack = [error] if error is not None else []
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, InternalError):
            return current
        stack.extend(getattr(current, "exceptions", ()))
        if current.__cause__ is not None:
            stack.append(current.__cause__)
    return None


def _torch_package() -> str | None:
    """Where torch's Python code lies, found without importing torch (this
    module must not: the reports read it)."""
    spec = importlib.util.find_spec("torch")
    origin = spec.origin if spec is not None else None
    return os.path.dirname(origin) + os.sep if origin else None


_TORCH = _torch_package()


def raised_inside_torch(error: BaseException) -> bool:
    """Whether the innermost frame that raised `error` is torch's own Python
    code (torch/autograd/grad_mode.py, torch/_dynamo/...)."""
    tb = error.__traceback__
    if tb is None or _TORCH is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_TORCH)


def suite_fault(error: BaseException) -> bool:
    """Whether an exception that escaped a test's example is the suite's bug
    rather than torch's answer. The rules speak of torch's errors as
    RuntimeErrors (the class every refusal of autograd, views and kernels
    has, NotImplementedError included), and torch's Python code may raise
    anything; an exception of another class from the suite's own lines (an
    AttributeError for an API this release lacks, a KeyError, a NumPy
    error, a TypeError from calling torch with arguments it does not take)
    breaks no rule of torch's."""
    if isinstance(error, (AssertionError, RuntimeError, *_CONTROL_FLOW)):
        return False  # a failed check, torch's refusal, Hypothesis's flow
    if not isinstance(error, Exception):
        return False  # pytest's outcomes, a hang, a crash, an InternalError
    return not raised_inside_torch(error)
