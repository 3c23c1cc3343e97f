"""What a property test uses to draw its inputs: labelled draws of tensors
on the test's device from the run's dtypes, counted for the report."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.selection import current
from strategies.dtypes import DTYPES, elements
from strategies.tensors import TensorCase, tensor_cases


@dataclass
class Coverage:
    """Examples run by the current test, and the dtypes they exercised."""

    examples: int = 0
    dtypes: Counter = field(default_factory=Counter)
    steps: int = 0  # steps the differential checked in lockstep

    def as_dict(self) -> dict[str, Any]:
        out = {"examples": self.examples, "dtypes": dict(sorted(self.dtypes.items()))}
        return out | ({"steps": self.steps} if self.steps else {})


COVERAGE = Coverage()


def reset_coverage() -> None:
    global COVERAGE
    COVERAGE = Coverage()


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

    def grad_dtypes(self) -> tuple[str, ...]:
        return self.dtypes(("float", "complex"))

    def tensor(self, label: str, *, dtypes: tuple[str, ...] | None = None, **kwargs) -> TensorCase:
        """A labelled TensorCase; see strategies.tensors.tensor_cases for kwargs."""
        case = self.data.draw(
            tensor_cases(self.device, dtypes or self.dtypes(), **kwargs), label=label
        )
        self.record(case.dtype)
        return case

    def draw(self, strategy: st.SearchStrategy, label: str) -> Any:
        return self.data.draw(strategy, label=label)

    def record(self, dtype: str) -> None:
        LAST_EXAMPLE_DTYPES.add(dtype)
        if dtype not in self._dtypes:
            self._dtypes.add(dtype)
            COVERAGE.dtypes[dtype] += 1

    def gradient(self, case: TensorCase, label: str = "gradient") -> np.ndarray:
        """Values for a gradient of the case's shape and dtype."""
        strategy = hnp.arrays(
            DTYPES[case.dtype].compute_dtype, case.shape, elements=elements(case.dtype)
        )
        return self.draw(strategy, label)

    def other_device(self, label: str = "other device") -> str:
        """A present device, possibly this one: for cross-device copies."""
        return self.draw(st.sampled_from(current().present), label)
