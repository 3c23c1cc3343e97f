"""A search that goes on past known failures.

The differentials draw many programs per test, and on a build with a known
bug the bug is drawn often (torch 2.0's resize_ in nearly every shard). Were
the first one to end the test, the rest of the search would never run and a
new bug behind it would go unseen. So a violation that a known-failure entry
covers is kept aside and the search goes on; a violation no entry covers
fails the test at once; and at the end the first known one is raised, which
the plugin turns into an expected failure, with its entry's reason.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from conformance import harness
from conformance.check import InvariantViolation
from conformance.run_state import known_failure_entries

__all__ = ["SEEN", "KnownViolations", "is_known", "keep", "reports_known_at_the_end"]

# (violation, ops of the minimal program, dtypes) of this test, in order seen
SEEN: list[tuple[InvariantViolation, set[str], set[str]]] = []


class KnownViolations(AssertionError):
    """Several rules' known violations, seen by one test: the plugin reads
    each of them (`exceptions`, as of an exception group)."""

    def __init__(self, violations: list[InvariantViolation]) -> None:
        self.exceptions = tuple(violations)
        super().__init__("\n\n".join(str(v) for v in violations))


def reports_known_at_the_end(test: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps a Hypothesis test: the first known violation kept aside is
    raised once the search has ended."""

    @functools.wraps(test)
    def run_all(*args: Any, **kwargs: Any) -> None:
        SEEN.clear()
        test(*args, **kwargs)
        if not SEEN:
            return
        # the first of each rule, so that every rule seen broken shows xfailed,
        # none held; matched again against the union of what they used
        first = {v.invariant: v for v, _, _ in reversed(SEEN)}
        harness.LAST_EXAMPLE_OPS.clear()
        harness.LAST_EXAMPLE_DTYPES.clear()
        for _, ops, dtypes in SEEN:
            harness.LAST_EXAMPLE_OPS.update(ops)
            harness.LAST_EXAMPLE_DTYPES.update(dtypes)
        seen = [first[i] for i in dict.fromkeys(v.invariant for v, _, _ in SEEN)]
        if len(seen) == 1:
            raise seen[0]
        raise KnownViolations(seen)

    return run_all


def is_known(violation: InvariantViolation, column: str, ops: set[str], dtypes: set[str]) -> bool:
    """Whether a known-failure entry covers this violation (in report column
    `column`, by a minimal program of `ops`, over `dtypes`)."""
    text = str(violation)
    return any(
        e.covers(violation.invariant, column, dtypes, ops, text) for e in known_failure_entries()
    )


def keep(violation: InvariantViolation, column: str, ops: Iterable[str]) -> bool:
    """Keep a known violation aside (True), or leave it to be raised (False)."""
    ops, dtypes = set(ops), set(harness.LAST_EXAMPLE_DTYPES)
    if not is_known(violation, column, ops, dtypes):
        return False
    SEEN.append((violation, ops, dtypes))
    return True
