"""From pytest's test reports to a verdict per invariant and device.

A test declares the invariants it checks (`@pytest.mark.invariant`); a failed
check names the one it broke. An invariant is violated on a device when a test
on that device broke it, or failed otherwise while checking it first; it holds
when its tests ran and none broke it; it is skipped when all its tests were
skipped, with their reasons; xfailed when it is on a known-failure list.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance.invariants import CATALOGUE

HELD, VIOLATED, SKIPPED, XFAILED, NOT_RUN = "held", "violated", "skipped", "xfailed", "not run"


@dataclass
class TestOutcome:
    nodeid: str
    invariants: tuple[str, ...]
    device: str
    outcome: str  # passed, failed, skipped, xfailed, xpassed, error
    violated: tuple[str, ...] = ()
    message: str = ""  # skip reason, or the failure's first lines
    longrepr: str = ""
    coverage: dict[str, Any] = field(default_factory=dict)
    repro: str = ""
    example: str = ""
    duration: float = 0.0

    @property
    def broken(self) -> tuple[str, ...]:
        """The invariants this test shows violated."""
        if self.outcome not in ("failed", "error"):
            return ()
        if self.violated:
            return self.violated
        return self.invariants[:1]  # an unexpected error counts against the primary rule


@dataclass
class Cell:
    """One invariant on one device."""

    status: str = NOT_RUN
    tests: list[TestOutcome] = field(default_factory=list)

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


def _cell_status(invariant: str, tests: list[TestOutcome]) -> str:
    if any(invariant in t.broken for t in tests):
        return VIOLATED
    # an expected failure names the rules it broke, when it knows them: the
    # other rules its test checks held up to it
    if any(t.outcome == "xfailed" and (not t.violated or invariant in t.violated) for t in tests):
        return XFAILED
    if any(t.outcome in ("passed", "failed", "error", "xpassed", "xfailed") for t in tests):
        return HELD
    if tests:
        return SKIPPED
    return NOT_RUN


def table(outcomes: Iterable[TestOutcome]) -> dict[str, dict[str, Cell]]:
    """invariant ID -> device -> Cell, for every invariant in the catalogue."""
    cells: dict[str, dict[str, Cell]] = {inv.id: {} for inv in CATALOGUE}
    for outcome in outcomes:
        for invariant in outcome.invariants:
            if invariant in cells:
                cells[invariant].setdefault(outcome.device, Cell()).tests.append(outcome)
    for invariant, by_device in cells.items():
        for cell in by_device.values():
            cell.status = _cell_status(invariant, cell.tests)
    return cells


def overall(by_device: dict[str, Cell]) -> str:
    """One status for an invariant across devices: the worst that happened."""
    statuses = {cell.status for cell in by_device.values()}
    for status in (VIOLATED, XFAILED, HELD, SKIPPED):
        if status in statuses:
            return status
    return NOT_RUN


def summary(cells: dict[str, dict[str, Cell]]) -> dict[str, int]:
    counts = {HELD: 0, VIOLATED: 0, XFAILED: 0, SKIPPED: 0, NOT_RUN: 0}
    for by_device in cells.values():
        counts[overall(by_device)] += 1
    return counts
