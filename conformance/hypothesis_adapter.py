"""Every use of Hypothesis's internals the suite makes (the plugin, and
conformance.replay), in one place: what a Hypothesis version change can
break is here."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from hypothesis import Phase, settings

_NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)


def run_without_shrinking(test: Any) -> None:
    """Make a Hypothesis test (a no-op for any other) skip its shrink phase."""
    current = getattr(test, "_hypothesis_internal_use_settings", None)
    if current is not None:
        test._hypothesis_internal_use_settings = settings(current, phases=_NO_SHRINK)


def inner_test_of(test: Any) -> Callable | None:
    """The function Hypothesis calls for each example of `test` (its hook for
    wrapping them), or None if `test` is no Hypothesis test."""
    hypothesis = getattr(test, "hypothesis", None)
    if hypothesis is None or not hasattr(hypothesis, "inner_test"):
        return None
    return hypothesis.inner_test


@contextmanager
def examples_run_by(test: Any, each_example: Callable) -> Iterator[None]:
    """Within the block, Hypothesis runs each example of `test` through
    `each_example` (which calls `inner_test_of(test)` itself)."""
    hypothesis = test.hypothesis
    inner = hypothesis.inner_test
    hypothesis.inner_test = each_example
    try:
        yield
    finally:
        hypothesis.inner_test = inner


def example_from_choices(test: Any, choices: Any) -> tuple[AbstractContextManager, Callable]:
    """One example of the Hypothesis test `test`, drawn again from its
    recorded choices: run it as `with context: run(**params)`."""
    from hypothesis.control import BuildContext
    from hypothesis.internal.conjecture.data import ConjectureData
    from hypothesis.strategies._internal.core import DataObject

    conjecture = ConjectureData.for_choices(choices)
    data = DataObject(conjecture)
    context = BuildContext(conjecture, is_final=True, wrapped_test=test)
    return context, functools.partial(test.hypothesis.inner_test, data=data)
