"""From pytest's test reports to a verdict per invariant and device.

A test declares the invariants it checks (`@pytest.mark.invariant`); a failed
check names the one it broke. An invariant is violated on a device when a test
on that device broke it, or failed otherwise while checking it first; it holds
when its tests ran and none broke it; it is skipped when all its tests were
skipped, with their reasons; xfailed when it is on a known-failure list.

A test that did not finish (its process crashed, an example hung, or the
suite's own code raised) proves nothing either way: it has a status of its
own (crashed, hung, internal error), reported against the test and its input.
It marks the cell of the test's primary invariant only when the test is
focused on a few rules; a wide test (the differential names every rule)
never marks a rule for a crash or hang it did not attribute.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance.invariants import CATALOGUE
from conformance.results import (  # the statuses are the report's, too
    CRASHED,
    HELD,
    HUNG,
    INTERNAL,
    NOT_APPLICABLE,
    NOT_RUN,
    SKIPPED,
    UNFINISHED,
    VIOLATED,
    XFAILED,
)

# A test naming more invariants than this is wide: what it did not attribute
# counts against the test, never against the rules it names.
FOCUSED = 3
# Worst first: the order in which a cell, or an invariant over devices, takes
# its status from its tests. A new status goes where it ranks.
SEVERITY = (VIOLATED, INTERNAL, CRASHED, HUNG, XFAILED, HELD, SKIPPED, NOT_APPLICABLE, NOT_RUN)


@dataclass
class TestOutcome:
    nodeid: str
    invariants: tuple[str, ...]
    device: str
    outcome: str  # passed, failed, skipped, xfailed, xpassed, error; crashed, hung, internal error
    violated: tuple[str, ...] = ()
    message: str = ""  # skip reason, or the failure's first lines
    longrepr: str = ""
    coverage: dict[str, Any] = field(default_factory=dict)
    repro: str = ""
    # (verdict, what the process said last): the repro run in a fresh process
    # before the violation was shown (conformance/repro_check.py); () if not run
    reproduced: tuple[str, ...] = ()
    example: str = ""
    duration: float = 0.0
    # invariant -> the known-failure reason that made this test's violation of
    # it an xfail (a test that broke several listed rules has one per rule)
    known: dict[str, str] = field(default_factory=dict)
    # for a test that did not finish: what happened (signal, traceback), and
    # the example it was running when it did
    problem: dict[str, Any] = field(default_factory=dict)

    @property
    def broken(self) -> tuple[str, ...]:
        """The invariants this test shows violated."""
        if self.outcome not in ("failed", "error"):
            return ()
        if self.violated:
            return self.violated
        return self.invariants[:1]  # an unexpected error counts against the primary rule

    @property
    def unfinished_on(self) -> tuple[str, ...]:
        """The invariants whose cells show this test's crash, hang or internal
        error: its primary one, if it is a focused test."""
        if self.outcome not in UNFINISHED or len(self.invariants) > FOCUSED:
            return ()
        return () if self.problem.get("known") else self.invariants[:1]

    @property
    def known_crash_on(self) -> tuple[str, ...]:
        """For a crash on the known-failure list: the invariants whose cells
        show it as expected (xfailed), as `unfinished_on` would show it."""
        if not self.problem.get("known") or len(self.invariants) > FOCUSED:
            return ()
        return self.invariants[:1]


@dataclass
class Cell:
    """One invariant on one device."""

    status: str = NOT_RUN
    tests: list[TestOutcome] = field(default_factory=list)
    invariant: str = ""

    @property
    def examples(self) -> int:
        return sum(t.coverage.get("examples", 0) for t in self.tests)

    @property
    def dtypes(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for t in self.tests:
            for dtype, count in t.coverage.get("dtypes", {}).items():
                total[dtype] = total.get(dtype, 0) + count
        return dict(sorted(total.items()))

    @property
    def reasons(self) -> list[str]:
        return sorted({t.message for t in self.tests if t.outcome == "skipped" and t.message})

    @property
    def known(self) -> list[str]:
        """The known failures this cell's rule was xfailed by: each entry's
        reason, "known failure X, fixed in 2.1: ... (link)"."""
        found = {
            t.known.get(self.invariant, t.message)
            for t in self.tests
            if t.outcome == "xfailed"
            and t.message
            and (not t.violated or self.invariant in t.violated)
        }
        found |= {t.problem["known"] for t in self.tests if self.invariant in t.known_crash_on}
        return sorted(found)


def _cell_status(invariant: str, tests: list[TestOutcome]) -> str:
    if any(invariant in t.broken for t in tests):
        return VIOLATED
    for status in UNFINISHED:
        if any(t.outcome == status and invariant in t.unfinished_on for t in tests):
            return status
    # a test that checks many rules (the differential) and broke a listed one
    # is xfailed for that rule alone; the others held as far as it ran
    if any(t.outcome == "xfailed" and (not t.violated or invariant in t.violated) for t in tests):
        return XFAILED
    if any(invariant in t.known_crash_on for t in tests):
        return XFAILED
    if any(t.outcome in ("passed", "failed", "error", "xpassed", "xfailed") for t in tests):
        return HELD
    if any(t.outcome not in UNFINISHED for t in tests):
        return SKIPPED
    return NOT_RUN  # only wide tests that did not finish: nothing known either way


# What a rule outside the build's versions shows instead: a violation or a
# test that did not finish is still shown, as something to look at.
_NOT_CHECKED = (HELD, XFAILED, SKIPPED, NOT_RUN)


def table(
    outcomes: Iterable[TestOutcome], torch_version: str | None = None
) -> dict[str, dict[str, Cell]]:
    """invariant ID -> device -> Cell, for every invariant in the catalogue;
    with the build's `torch_version`, the cells of a rule whose `versions`
    leave it out are "not applicable"."""
    cells: dict[str, dict[str, Cell]] = {inv.id: {} for inv in CATALOGUE}
    for outcome in outcomes:
        for invariant in outcome.invariants:
            if invariant in cells:
                cell = cells[invariant].setdefault(outcome.device, Cell(invariant=invariant))
                cell.tests.append(outcome)
    for inv in CATALOGUE:
        applies = torch_version is None or inv.applies_to(torch_version)
        for cell in cells[inv.id].values():
            cell.status = _cell_status(inv.id, cell.tests)
            if not applies and cell.status in _NOT_CHECKED:
                cell.status = NOT_APPLICABLE
    return cells


def overall(by_device: dict[str, Cell]) -> str:
    """One status for an invariant across devices: the worst that happened."""
    statuses = {cell.status for cell in by_device.values()}
    return next((s for s in SEVERITY if s in statuses), NOT_RUN)


def summary(cells: dict[str, dict[str, Cell]]) -> dict[str, int]:
    counts = {HELD: 0, VIOLATED: 0, XFAILED: 0, SKIPPED: 0, NOT_APPLICABLE: 0, NOT_RUN: 0}
    counts |= dict.fromkeys(UNFINISHED, 0)
    for by_device in cells.values():
        counts[overall(by_device)] += 1
    return counts


def unfinished(outcomes: Iterable[TestOutcome]) -> dict[str, list[TestOutcome]]:
    """The tests that crashed, hung or raised an internal error, by status."""
    by_status: dict[str, list[TestOutcome]] = {status: [] for status in UNFINISHED}
    for outcome in outcomes:
        if outcome.outcome in by_status:
            by_status[outcome.outcome].append(outcome)
    return by_status


def tests_line(by_status: dict[str, list[TestOutcome]]) -> str:
    """ "tests: 1 crashed (test_detach.py::test_x[cpu]), 1 hung (...)", or "" when none."""
    parts = []
    for status, tests in by_status.items():
        if tests:
            names = ", ".join(
                t.nodeid + (" known" if t.problem.get("known") else "") for t in tests[:3]
            ) + (", ..." if len(tests) > 3 else "")
            parts.append(f"{len(tests)} {status} ({names})")
    return "tests: " + ", ".join(parts) if parts else ""


@dataclass
class Tally:
    """A run counted the one way the terminal and the report both show it."""

    cells: dict[str, dict[str, Cell]]  # table(): invariant -> device -> Cell
    counts: dict[str, int]  # summary(): invariants by their overall status
    unfinished: dict[str, list[TestOutcome]]  # unfinished(): the tests that did not finish

    @property
    def tests_line(self) -> str:
        return tests_line(self.unfinished)


def tally(outcomes: Iterable[TestOutcome], torch_version: str) -> Tally:
    """The run's cells on the build `torch_version`, their counts and its unfinished tests."""
    outcomes = list(outcomes)
    cells = table(outcomes, torch_version)
    return Tally(cells, summary(cells), unfinished(outcomes))
