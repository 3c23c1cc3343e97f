"""The suite's side of the report: from pytest's test reports, as the
controller receives them, to the report's data model (conformance.results).

Only reports that pytest counts in its summary line become records, under
the category pytest counts them in, so the report's counts and pytest's
agree: a crashed xdist worker's report included. Everything the HTML page and
the merge show is in the model, so a page can be rebuilt, and builds
compared, from its JSON alone.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import pytest

from conformance import argument_coverage, not_in_build
from conformance.failures import crash_text, traceback_summary
from conformance.invariants import CATALOGUE, Invariant
from conformance.outcomes import (
    UNFINISHED,
    Cell,
    TestOutcome,
    overall,
    tally,
)
from conformance.report_metadata import build_info, run_info
from conformance.results import (
    Build,
    Evidence,
    Report,
    Rule,
    Run,
    Summary,
    TestResult,
    Unfinished,
    Verdict,
)
from conformance.results import Cell as CellResult
from conformance.schema.summary import operator_table, summary_lines
from conformance.selection import current
from strategies.dtypes import DTYPES

# pytest's order in its summary line; other categories (from other plugins)
# follow in the order they appear.
_CATEGORY_ORDER = ("failed", "passed", "skipped", "xfailed", "xpassed", "error")
_FAILED = ("failed", "error", *UNFINISHED)
_T = TypeVar("_T")


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


def _cell(cell: Cell) -> CellResult:
    return CellResult(
        status=cell.status,
        examples=cell.examples,
        dtypes=_by_dtype(cell.dtypes),
        reasons=cell.reasons,
        known=cell.known,
        outcomes=dict(Counter(t.outcome for t in cell.tests)),
        tests=sorted({t.nodeid for t in cell.tests}),
    )


def _copied(cls: type[_T], *sources: object, **given: Any) -> _T:
    """A `cls` (a dataclass) with the fields `given`, each other field that of
    the same name of the first of `sources` that has one."""
    names = [f.name for f in dataclasses.fields(cls) if f.name not in given]
    found = {n: getattr(next(s for s in sources if hasattr(s, n)), n) for n in names}
    return cls(**found, **given)


def _failure(record: Record) -> Evidence:
    """A failed test's evidence: the record's category, phase, crash and
    traceback, the rest its outcome's."""
    t = record.outcome
    return _copied(Evidence, record, t, outcome=record.category, reproduced=list(t.reproduced))


def rule(inv: Invariant) -> Rule:
    """The report's copy of a catalogue entry."""
    return _copied(Rule, inv)


def _verdict(
    inv: Invariant, by_device: dict[str, Cell], records: list[Record], torch: str
) -> Verdict:
    dtypes: Counter[str] = Counter()
    for cell in by_device.values():
        dtypes.update(cell.dtypes)
    return Verdict(
        rule=rule(inv),
        applies=inv.applies_to(torch),
        status=overall(by_device),
        reasons=sorted({r for cell in by_device.values() for r in cell.reasons}),
        known=sorted({k for cell in by_device.values() for k in cell.known}),
        examples=sum(cell.examples for cell in by_device.values()),
        dtypes=_by_dtype(dict(dtypes)),
        devices={device: _cell(cell) for device, cell in sorted(by_device.items())},
        failures=[_failure(r) for r in records if inv.id in r.outcome.broken],
        unfinished=sorted({r.outcome.nodeid for r in records if inv.id in r.outcome.unfinished_on}),
    )


def _unfinished(record: Record) -> Unfinished:
    t = record.outcome
    problem = t.problem
    return Unfinished(
        nodeid=t.nodeid,
        status=t.outcome,
        device=t.device,
        invariants=list(t.invariants),
        message=t.message,
        detail=problem.get("detail", ""),
        example=t.example,
        repro=t.repro,
        repro_note=problem.get("repro_note", ""),
        known=problem.get("known", ""),
        minimized=problem.get("minimized", ""),
        traceback=problem.get("traceback", "") or record.traceback,
        when=record.when,
    )


def summary_line(status_counts: dict[str, int], torch: str, tests: str = "") -> str:
    """The run in one line: "51 invariants: 49 held, 1 violated, 1 skipped on torch 2.13.0",
    then the tests that did not finish: "; tests: 1 crashed (test_x[cpu])"."""
    total = sum(status_counts.values())
    parts = [f"{n} {status}" for status, n in status_counts.items() if n]
    line = f"{total} invariants: {', '.join(parts) or 'none'} on torch {torch}"
    return f"{line}; {tests}" if tests else line


def _test(record: Record) -> TestResult:
    t = record.outcome
    return TestResult(
        nodeid=t.nodeid,
        outcome=record.category,
        when=record.when,
        device=t.device,
        invariants=list(t.invariants),
        violated=list(t.broken),
        status=t.outcome,
        message=t.message,
        crashed=record.crashed,
        examples=t.coverage.get("examples", 0),
        dtypes=t.coverage.get("dtypes", {}),
        not_in_build=t.coverage.get("not_in_build", {}),
        duration_s=round(t.duration, 4),
    )


def build_report(
    records: Sequence[Record],
    *,
    build: Build,
    run: Run,
    complete: bool = True,
    incomplete_reason: str | None = None,
    exit_status: int | None = None,
    collected: Sequence[str] | None = None,
) -> Report:
    """The report of one run."""
    torch = build.torch
    records = list(records)
    outcomes = merged(records)
    counted = tally(outcomes.values(), torch)
    operators = operator_table(outcomes.values())
    seen = {r.outcome.nodeid for r in records}
    return Report(
        complete=complete,
        incomplete_reason=incomplete_reason,
        exit_status=exit_status,
        build=build,
        run=run,
        summary=Summary(
            text=summary_line(counted.counts, torch, counted.tests_line),
            invariants=sum(counted.counts.values()),
            statuses=counted.counts,
            tests={status: len(tests) for status, tests in counted.unfinished.items()},
        ),
        counts=counts(records),
        collected=None if collected is None else len(collected),
        not_run=[] if collected is None else [n for n in collected if n not in seen],
        invariants={
            inv.id: _verdict(inv, counted.cells.get(inv.id, {}), records, torch)
            for inv in CATALOGUE
        },
        not_in_build=not_in_build.tally(outcomes.values()),
        tests=[_test(r) for r in records],
        unfinished=[_unfinished(r) for r in records if r.outcome.outcome in UNFINISHED],
        operators={**operators, "summary": summary_lines(operators)},
        arguments=argument_coverage.tally(outcomes.values()),
    )


def collection_record(report: pytest.CollectReport, category: str) -> Record:
    """A module that failed to import (an error) or skipped itself whole."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (path, line, "Skipped: why")
        message = str(longrepr[2]).removeprefix("Skipped: ")
    else:
        message = crash_text(longrepr).strip().splitlines()[0] if longrepr else ""
    outcome = TestOutcome(
        nodeid=report.nodeid,
        invariants=(),
        device="",
        outcome="error" if report.failed else "skipped",
        message=message,
        longrepr=str(longrepr) if report.failed else "",
    )
    summary = traceback_summary(longrepr) if report.failed else ""
    return Record(outcome, category, "collect", summary)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ReportCollector:
    """Gathers the counted reports of one session and, at its end, hands the
    run's report to whoever implements `pytest_conformance_report` (the
    `reports` plugin writes it). Registered on the process that owns the
    session (the xdist controller, or the only process); it collects nothing
    when no plugin asks for the report."""

    def __init__(
        self,
        config: pytest.Config,
        record_of: Callable[[pytest.TestReport, str, list[Path]], Record],
    ) -> None:
        self.config = config
        # The suite's plugin turns a test's report into a record: passed in,
        # since that plugin is what registers this one.
        self.record_of = record_of
        self.wanted = False
        self.records: list[Record] = []
        self.collected: list[str] | None = None
        self.interrupted: str | None = None
        self.started = _now()
        self.clock = time.monotonic()
        self.roots = [config.rootpath, config.invocation_params.dir]

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Every plugin has been configured by now: the writer registers itself
        # only when a report was asked for (not with --no-report).
        self.wanted = bool(self.config.hook.pytest_conformance_report.get_hookimpls())

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.wanted:
            self.collected = [item.nodeid for item in session.items]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.wanted and self.collected is None:  # every worker collects the same tests
            self.collected = list(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.wanted:
            return
        # The same hook call the terminal reporter makes, so the categories,
        # and hence the counts, are the ones pytest prints.
        category = self.config.hook.pytest_report_teststatus(report=report, config=self.config)[0]
        if category and getattr(report, "count_towards_summary", True):
            self.records.append(self.record_of(report, category, self.roots))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if not self.wanted:
            return
        # pytest counts a module that fails to import as an error, and one
        # that skips itself as skipped, in the same summary line.
        category = "error" if report.failed else "skipped" if report.skipped else ""
        if category and getattr(report, "count_towards_summary", True):
            self.records.append(collection_record(report, category))

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo) -> None:
        # xdist stops a run (-x, too many crashed workers) with a
        # KeyboardInterrupt subclass whose message says why.
        message = str(excinfo.value).strip()
        self.interrupted = message or "interrupted by the user (KeyboardInterrupt)"

    def _incomplete_reason(self, session: pytest.Session, exitstatus: int) -> str | None:
        if self.interrupted:
            return self.interrupted
        for stop in (session.shouldfail, session.shouldstop):
            if stop:
                return str(stop) if isinstance(stop, str) else "the run was stopped early"
        if exitstatus == pytest.ExitCode.INTERNAL_ERROR:
            return "pytest hit an internal error"
        seen = {r.outcome.nodeid for r in self.records}
        missing = [n for n in self.collected or () if n not in seen]
        if missing:
            return f"{len(missing)} collected tests did not run"
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.wanted:
            return
        reason = self._incomplete_reason(session, int(exitstatus))
        run = dataclasses.replace(
            run_info(current(), self.config.getoption("invariants", None)),
            started=self.started,
            finished=_now(),
            duration_s=round(time.monotonic() - self.clock, 3),
            workers=getattr(self.config.option, "numprocesses", None),
            args=list(self.config.invocation_params.args),
        )
        report = build_report(
            self.records,
            build=build_info(),
            run=run,
            complete=reason is None,
            incomplete_reason=reason,
            # as the run ends: the suite may have changed it (an internal error is 3)
            exit_status=int(session.exitstatus),
            collected=self.collected,
        )
        self.config.hook.pytest_conformance_report(config=self.config, report=report)
