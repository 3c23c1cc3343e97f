"""A search that goes on past known failures.

The differentials draw many programs per test, and on a build with a known
bug the bug is drawn often (torch 2.0's resize_ in nearly every shard). Were
the first one to end the test, the rest of the search would never run and a
new bug behind it would go unseen. So a violation that a known-failure entry
covers is kept aside and the search goes on; a violation no entry covers
fails the test at once; and at the end the first known one is raised, which
the plugin turns into an expected failure, with its entry's reason.

A known crash met in a child process (conformance/differential/isolation.py)
is kept aside the same way: the search goes on with the next program, and
at the end the test is reported crashed, as that known crash.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from conformance import harness, watch
from conformance.check import InvariantViolation
from conformance.run_state import known_failure_entries

__all__ = [
    "CRASHES",
    "SEEN",
    "KnownViolations",
    "is_known",
    "keep",
    "keep_crash",
    "reports_known_at_the_end",
]

# (violation, ops of the minimal program, dtypes) of this test, in order seen
SEEN: list[tuple[InvariantViolation, set[str], set[str]]] = []
# known crashes of this test met in child processes: each one's problem (see
# watch.CrashedInChild), in order seen
CRASHES: list[dict[str, Any]] = []


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
        CRASHES.clear()
        test(*args, **kwargs)
        if CRASHES:
            # a crash is what a reader must see first; the known violations seen
            # beside it are listed in its note
            problem = dict(CRASHES[0])
            rules = sorted({v.invariant for v, _, _ in SEEN})
            problem["note"] = (
                f"the test's search went on past it: {len(CRASHES)} program(s) crashed this "
                "way, each in a child process"
                + (f"; known violations also seen: {', '.join(rules)}" if rules else "")
            )
            problem["detail"] += f"\n{problem['note']}"
            raise watch.CrashedInChild(problem)
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


def keep_crash(problem: dict[str, Any]) -> None:
    """Keep a known crash aside (its problem carries the entry's `known`)."""
    CRASHES.append(problem)


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
