"""pytest plugin: write the run's JSON and HTML reports when the session ends.

`python -m conformance` loads it with `-p reports.pytest_plugin`. It collects
on the process that owns the session (the xdist controller, or the only
process); workers only add their options. The report is written even when
the run is interrupted, marked incomplete with the reason.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from conformance.selection import current
from reports.collect import collection_record, record_of
from reports.files import dumps, write_text
from reports.html import render_report
from reports.metadata import build_info, run_info
from reports.model import Record, build_report

DEFAULT_DIR = "conformance-report"
DEFAULT_NAME = "report"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("reports", "invariant reports")
    group.addoption(
        "--report-dir",
        default=DEFAULT_DIR,
        help=f"folder for the JSON and HTML reports (default: ./{DEFAULT_DIR})",
    )
    group.addoption(
        "--report-name",
        default=DEFAULT_NAME,
        help=f"file name without extension: writes NAME.json and NAME.html (default: "
        f"{DEFAULT_NAME}); one per build keeps a matrix's reports apart",
    )
    group.addoption("--no-report", action="store_true", help="write no report")


def report_paths(config: pytest.Config) -> tuple[Path, Path]:
    """Where this run's JSON and HTML go, as absolute paths."""
    folder = Path(config.getoption("report_dir"))
    if not folder.is_absolute():
        folder = config.invocation_params.dir / folder
    name = config.getoption("report_name")
    return folder / f"{name}.json", folder / f"{name}.html"


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: its controller reports
        return
    if config.getoption("no_report") or config.option.collectonly:
        return
    config.pluginmanager.register(ReportWriter(config), "conformance-report-writer")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ReportWriter:
    """Gathers the counted reports of one session and writes them at its end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.records: list[Record] = []
        self.collected: list[str] | None = None
        self.interrupted: str | None = None
        self.started = _now()
        self.clock = time.monotonic()
        self.roots = [config.rootpath, config.invocation_params.dir]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = [item.nodeid for item in session.items]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.collected is None:  # every worker collects the same tests
            self.collected = list(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # The same hook call the terminal reporter makes, so the categories,
        # and hence the counts, are the ones pytest prints.
        category = self.config.hook.pytest_report_teststatus(report=report, config=self.config)[0]
        if category and getattr(report, "count_towards_summary", True):
            self.records.append(record_of(report, category, self.roots))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
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
        reason = self._incomplete_reason(session, int(exitstatus))
        run = run_info(current(), self.config.getoption("invariants", None))
        run.update(
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
        json_path, html_path = report_paths(self.config)
        # A report that cannot be written must not turn the run's verdict
        # into pytest's internal error: say so and keep the exit status.
        try:
            write_text(json_path, dumps(report))  # first: the data outlives a broken page
            write_text(html_path, render_report(report))
        except Exception as error:  # noqa: BLE001 - any failure here is reported, not raised
            self._warn(
                f"report: could not write {html_path.parent}: {type(error).__name__}: {error}"
            )

    def _warn(self, message: str) -> None:
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.write_line(message, red=True)
