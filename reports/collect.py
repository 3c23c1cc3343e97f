"""From pytest's test reports, as the controller receives them, to Records.

Only reports that pytest counts in its summary line become records, under
the category pytest counts them in, so the report's counts and pytest's
agree: a crashed xdist worker's report included.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conformance import plugin as suite
from conformance.outcomes import UNFINISHED, TestOutcome
from reports.failures import crash_text, minimal_example, traceback_summary
from reports.model import Record


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


def record_of(report: pytest.TestReport, category: str, roots: list[Path]) -> Record:
    """The record of one counted report. `roots`: folders node IDs are relative to."""
    if suite.is_crash(report):
        outcome = suite.crash_outcome(report, roots)
        return Record(outcome, category, report.when, outcome.longrepr, crashed=True)
    outcome = suite.outcome_from_report(report)
    summary = ""
    if outcome.outcome in UNFINISHED:  # its input is known: keep the outcome as it is
        return Record(outcome, category, report.when, traceback_summary(report.longrepr))
    if report.failed:
        summary = traceback_summary(report.longrepr)
        if not outcome.example:
            example = minimal_example(crash_text(report.longrepr))
            outcome = dataclasses.replace(outcome, example=example)
    return Record(outcome, category, report.when, summary)
