"""The report as data: from the run's test outcomes to the JSON document.

Everything the HTML page and the merge show is in this document, so a page
can be rebuilt, and builds compared, from the JSON files alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from conformance import not_in_build
from conformance.invariants import CATALOGUE
from conformance.outcomes import (
    NOT_RUN,
    UNFINISHED,
    Cell,
    TestOutcome,
    overall,
    summary,
    table,
    tests_line,
    unfinished,
)
from conformance.schema.summary import operator_table, summary_lines
from reports import FORMAT, SCHEMA_VERSION
from strategies.dtypes import DTYPES

# pytest's order in its summary line; other categories (from other plugins)
# follow in the order they appear.
_CATEGORY_ORDER = ("failed", "passed", "skipped", "xfailed", "xpassed", "error")
_FAILED = ("failed", "error", *UNFINISHED)


@dataclass
class Record:
    """One report that pytest counted in its summary line."""

    outcome: TestOutcome
    category: str  # pytest's: passed, failed, error, skipped, xfailed, xpassed, ...
    when: str  # setup, call, teardown; "???" for a crashed worker
    traceback: str = ""
    crashed: bool = False


def counts(records: Iterable[Record]) -> dict[str, int]:
    tally = Counter(r.category for r in records)
    ordered = {c: tally.pop(c) for c in _CATEGORY_ORDER if c in tally}
    return {**ordered, **dict(tally)}


def merged(records: Iterable[Record]) -> dict[str, TestOutcome]:
    """One outcome per test: a failure in any phase outweighs a pass."""
    by_node: dict[str, TestOutcome] = {}
    for record in records:
        previous = by_node.get(record.outcome.nodeid)
        if previous is None or previous.outcome not in _FAILED:
            by_node[record.outcome.nodeid] = record.outcome
    return by_node


def _by_dtype(counts: dict[str, int]) -> dict[str, int]:
    """Counts in the catalogue's dtype order (float16, bfloat16, float32...)."""
    order = {name: i for i, name in enumerate(DTYPES)}
    return dict(sorted(counts.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))


def _cell(cell: Cell) -> dict[str, Any]:
    return {
        "status": cell.status,
        "examples": cell.examples,
        "dtypes": _by_dtype(cell.dtypes),
        "reasons": cell.reasons,
        "known": cell.known,
        "outcomes": dict(Counter(t.outcome for t in cell.tests)),
        "tests": sorted({t.nodeid for t in cell.tests}),
    }


def _failure(record: Record) -> dict[str, Any]:
    t = record.outcome
    return {
        "nodeid": t.nodeid,
        "device": t.device,
        "outcome": record.category,
        "when": record.when,
        "crashed": record.crashed,
        "message": t.message,
        "example": t.example,
        "repro": t.repro,
        # [verdict, what the process said]: its repro, run in a fresh process
        "reproduced": list(t.reproduced),
        "traceback": record.traceback,
    }


def _invariant(inv, by_device: dict[str, Cell], records: list[Record], torch: str) -> dict:
    failures = [_failure(r) for r in records if inv.id in r.outcome.broken]
    dtypes: Counter[str] = Counter()
    for cell in by_device.values():
        dtypes.update(cell.dtypes)
    return {
        "id": inv.id,
        "family": inv.family,
        "statement": inv.statement,
        "quote": inv.quote,
        "source": inv.source,
        "versions": inv.versions,
        "applies": inv.applies_to(torch),
        "status": overall(by_device),
        "reasons": sorted({r for cell in by_device.values() for r in cell.reasons}),
        "known": sorted({k for cell in by_device.values() for k in cell.known}),
        "examples": sum(cell.examples for cell in by_device.values()),
        "dtypes": _by_dtype(dict(dtypes)),
        "devices": {device: _cell(cell) for device, cell in sorted(by_device.items())},
        "failures": failures,
        # focused tests of this rule that crashed, hung or hit an internal error
        "unfinished": sorted(
            {r.outcome.nodeid for r in records if inv.id in r.outcome.unfinished_on}
        ),
    }


def _unfinished(record: Record) -> dict[str, Any]:
    """A test that crashed, hung or hit an internal error: what it ran, a
    repro, and what happened."""
    t = record.outcome
    problem = t.problem
    return {
        "nodeid": t.nodeid,
        "status": t.outcome,
        "device": t.device,
        "invariants": list(t.invariants),
        "message": t.message,
        "detail": problem.get("detail", ""),
        "example": t.example,
        "repro": t.repro,
        "repro_note": problem.get("repro_note", ""),
        "known": problem.get("known", ""),  # a crash on the known-failure list
        "minimized": problem.get("minimized", ""),
        "traceback": problem.get("traceback", "") or record.traceback,
        "when": record.when,
    }


def summary_line(status_counts: dict[str, int], torch: str, tests: str = "") -> str:
    """The run in one line: "51 invariants: 49 held, 1 violated, 1 skipped on torch 2.13.0",
    then the tests that did not finish: "; tests: 1 crashed (test_x[cpu])"."""
    total = sum(status_counts.values())
    parts = [f"{n} {status}" for status, n in status_counts.items() if n]
    line = f"{total} invariants: {', '.join(parts) or 'none'} on torch {torch}"
    return f"{line}; {tests}" if tests else line


def _test(record: Record) -> dict[str, Any]:
    t = record.outcome
    return {
        "nodeid": t.nodeid,
        "outcome": record.category,
        "when": record.when,
        "device": t.device,
        "invariants": list(t.invariants),
        "violated": list(t.broken),
        "status": t.outcome,
        "message": t.message,
        "crashed": record.crashed,
        "examples": t.coverage.get("examples", 0),
        "dtypes": t.coverage.get("dtypes", {}),
        "not_in_build": t.coverage.get("not_in_build", {}),
        "duration_s": round(t.duration, 4),
    }


def build_report(
    records: Sequence[Record],
    *,
    build: dict[str, Any],
    run: dict[str, Any],
    complete: bool = True,
    incomplete_reason: str | None = None,
    exit_status: int | None = None,
    collected: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The JSON document of one run."""
    torch = build["torch"]
    records = list(records)
    outcomes = merged(records)
    cells = table(outcomes.values(), torch)
    operators = operator_table(outcomes.values())
    status_counts = summary(cells)
    by_status = unfinished(outcomes.values())
    seen = {r.outcome.nodeid for r in records}
    unfinished_records = [r for r in records if r.outcome.outcome in UNFINISHED]
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "complete": complete,
        "incomplete_reason": incomplete_reason,
        "exit_status": exit_status,
        "build": build,
        "run": run,
        "summary": {
            "text": summary_line(status_counts, torch, tests_line(by_status)),
            "invariants": sum(status_counts.values()),
            **status_counts,
            "tests": {status: len(tests) for status, tests in by_status.items()},
        },
        "counts": counts(records),
        "collected": None if collected is None else len(collected),
        "not_run": [] if collected is None else [n for n in collected if n not in seen],
        "invariants": {
            inv.id: _invariant(inv, cells.get(inv.id, {}), records, torch) for inv in CATALOGUE
        },
        # combinations skipped because the build lacks a kernel, never violations
        "not_in_build": not_in_build.tally(merged(records).values()),
        "tests": [_test(r) for r in records],
        # tests that crashed, hung or hit an internal error, each with its input and repro
        "unfinished": [_unfinished(r) for r in unfinished_records],
        "operators": {**operators, "summary": summary_lines(operators)},
    }


def status_of(report: dict[str, Any], invariant: str, device: str) -> str:
    """A cell's status, "not run" where the report has none."""
    entry = report["invariants"].get(invariant, {})
    return entry.get("devices", {}).get(device, {}).get("status", NOT_RUN)
