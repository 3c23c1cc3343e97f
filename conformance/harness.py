"""What a property test uses to draw its inputs: labelled draws of tensors
on the test's device from the run's dtypes, counted for the report."""

from __future__ import annotations

import base64
import dataclasses
import pickle
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import build, watch
from conformance.internal import suite_code
from conformance.selection import current
from strategies import argspace
from strategies.dtypes import DTYPES, arrays
from strategies.programs import Program
from strategies.tensors import TensorCase, tensor_cases


@dataclass
class Coverage:
    """Examples run by the current test, and the dtypes they exercised."""

    examples: int = 0
    dtypes: Counter = field(default_factory=Counter)
    steps: int = 0  # steps the differential checked in lockstep
    operators: dict[str, Any] = field(default_factory=dict)  # the schema sweep's verdicts
    lacking: int = 0  # examples skipped whole: a kernel they reached is not in this build

    def as_dict(self) -> dict[str, Any]:
        out = {"examples": self.examples, "dtypes": dict(sorted(self.dtypes.items()))}
        # combinations skipped for a kernel the build lacks, by reason
        missing = {"not_in_build": dict(sorted(build.MISSING.items()))} if build.MISSING else {}
        out |= {"operators": self.operators} if self.operators else {}
        # the argument classes the test drew, per op (strategies.argspace)
        out |= {"args": argspace.drawn()} if argspace.DRAWN else {}
        return out | ({"steps": self.steps} if self.steps else {}) | missing


COVERAGE = Coverage()


def reset_coverage() -> None:
    global COVERAGE
    COVERAGE = Coverage()
    build.reset_missing()
    argspace.DRAWN.clear()


# dtypes of the example run last: after a failure, Hypothesis's final replay
# of the minimal example, so known failures narrowed to a dtype can match it
LAST_EXAMPLE_DTYPES: set[str] = set()
# ops of the example that failed last (a compiled program's), so known
# failures narrowed to ops can match it
LAST_EXAMPLE_OPS: set[str] = set()


class Example:
    """One Hypothesis example of a test on one device."""

    def __init__(self, data: st.DataObject, device: str) -> None:
        self.data = data
        self.device = device
        self._dtypes: set[str] = set()
        COVERAGE.examples += 1
        LAST_EXAMPLE_DTYPES.clear()
        LAST_EXAMPLE_OPS.clear()

    def dtypes(self, kinds: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """The run's dtypes on this device, narrowed to some kinds."""
        chosen = current().dtypes_on(self.device)
        if kinds is not None:
            chosen = tuple(d for d in chosen if DTYPES[d].kind in kinds)
        if not chosen:
            pytest.skip(f"no selected dtype on {self.device} is {' or '.join(kinds or ())}")
        return chosen

    def has_kernel(
        self, op: str, call: Callable[..., object], dtypes: tuple[str, ...], backward: bool = False
    ) -> bool:
        """Whether this build has the kernels of `call` (named `op`) for
        operands of `dtypes` on this device (and its backward, with
        `backward`); a missing one is counted as a skipped combination."""
        operands = [((2,), dtype) for dtype in dtypes]
        return build.lacks(op, call, operands, self.device, backward=backward) is None

    def grad_dtypes(self) -> tuple[str, ...]:
        return self.dtypes(("float", "complex"))

    def tensor(self, label: str, *, dtypes: tuple[str, ...] | None = None, **kwargs) -> TensorCase:
        """A labelled TensorCase; see strategies.tensors.tensor_cases for kwargs."""
        case = self.draw(tensor_cases(self.device, dtypes or self.dtypes(), **kwargs), label)
        self.record(case.dtype)
        return case

    def draw(self, strategy: st.SearchStrategy, label: str) -> Any:
        """A labelled draw. An exception from the strategy is the suite's
        (an InternalError); what was drawn is recorded before the test uses
        it, so that a crash or hang that follows leaves it behind."""
        watch.note(drawing=label)  # a crash inside the draw (building a tensor) says so
        with suite_code(f"drawing {label!r}"):
            value = self.data.draw(strategy, label=label)
            if isinstance(value, Program):  # rendered only if it crashes
                watch.note(draw=label, program=_packed(value))
            elif isinstance(value, TensorCase):
                watch.note(draw=label, value=repr(value), choices=self._choices())
            else:
                watch.note(draw=label, value=repr(value), choices=self._choices())
        return value

    def _choices(self) -> str:
        """The Hypothesis choices drawn so far: conformance.replay runs the
        example again from them, up to the point where it crashed."""
        made = getattr(getattr(self.data, "conjecture_data", None), "choices", ())
        return base64.b64encode(pickle.dumps(tuple(made))).decode()

    def record(self, dtype: str) -> None:
        LAST_EXAMPLE_DTYPES.add(dtype)
        if dtype not in self._dtypes:
            self._dtypes.add(dtype)
            COVERAGE.dtypes[dtype] += 1

    def gradient(self, case: TensorCase, label: str = "gradient") -> np.ndarray:
        """Values for a gradient of the case's shape and dtype."""
        return self.draw(arrays(case.dtype, case.shape), label)

    def other_device(self, label: str = "other device") -> str:
        """A present device, possibly this one: for cross-device copies."""
        return self.draw(st.sampled_from(current().present), label)


def rule_test(*invariants: str) -> Callable[[Callable[[Example], None]], Callable[..., None]]:
    """A property test of the catalogue's `invariants`: `check(ex)` runs on
    each Example Hypothesis draws on each device of the run (`ex.device`;
    `ex.data` for draws of its own). The same as

        @pytest.mark.invariant(*invariants)
        @given(data=st.data())
        def test_...(device, data):
            ex = Example(data, device)
    """

    def decorate(check: Callable[[Example], None]) -> Callable[..., None]:
        def test(device: str, data: st.DataObject) -> None:
            check(Example(data, device))

        # pytest and Hypothesis (its example database's key) know it by the check's name
        for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
            setattr(test, attribute, getattr(check, attribute))
        return pytest.mark.invariant(*invariants)(given(data=st.data())(test))

    return decorate


def _name(label: str) -> str:
    """A Python name for a labelled input: "write through source" -> write_through_source."""
    name = "".join(c if c.isalnum() else "_" for c in label).strip("_") or "x"
    return name if name[0].isalpha() else f"x_{name}"


def _packed(program: Program) -> str:
    plain = dataclasses.replace(program, render=None)  # a closure: the listing redraws it
    return base64.b64encode(pickle.dumps(plain, protocol=pickle.HIGHEST_PROTOCOL)).decode()


def unpacked(text: str) -> Program:
    return pickle.loads(base64.b64decode(text))
