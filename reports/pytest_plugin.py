"""pytest plugin: write the run's JSON and HTML reports when the session ends.

`python -m conformance` loads it with `-p reports.pytest_plugin`. The suite
gathers the run on the process that owns the session (the xdist controller,
or the only process) and hands its report, the data model of
`conformance.results`, to `pytest_conformance_report`; this plugin writes it.
Workers only add its options. The report is written even when the run is
interrupted, marked incomplete with the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.results import Report
from reports.files import dumps, write_text
from reports.html import render_report

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


class ReportWriter:
    """Writes the report the suite hands on at the end of the session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    # optional: the hook is the suite's, declared when its plugin loads
    @pytest.hookimpl(optionalhook=True)
    def pytest_conformance_report(self, config: pytest.Config, report: Report) -> None:
        document = report.to_json()
        json_path, html_path = report_paths(self.config)
        # A report that cannot be written must not turn the run's verdict
        # into pytest's internal error: say so and keep the exit status.
        try:
            write_text(json_path, dumps(document))  # first: the data outlives a broken page
            write_text(html_path, render_report(document))
        except Exception as error:  # noqa: BLE001 - any failure here is reported, not raised
            self._warn(
                f"report: could not write {html_path.parent}: {type(error).__name__}: {error}"
            )

    def _warn(self, message: str) -> None:
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.write_line(message, red=True)
