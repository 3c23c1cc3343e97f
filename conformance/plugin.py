"""The suite's pytest plugin: its hooks, each handing on to the module whose
job it is.

Loaded by conformance/conftest.py, so `python -m conformance` and a plain
`pytest <path to conformance>` behave the same. The work is done in:

- conformance.options: the command-line options, the selection they make
  (devices, dtypes, Hypothesis profile and seed), the header, what an xdist
  worker is handed;
- conformance.processes: the run folder, the watchdog, stopping on signals,
  xdist's worker restarts, ending workers left;
- conformance.marking: parametrizing by device and compile target,
  --invariants, known failures and rules that do not apply to this torch;
- conformance.runtest: each example under the watchdog, what a test's report
  carries;
- conformance.report_outcomes: each test's outcome (crashed, hung, internal
  error included), `record_of` for the report, the run's exit status;
- conformance.terminal: the summary in the terminal;
- conformance.hypothesis_adapter: every use of Hypothesis's internals;
- conformance.run_state: the state these share.
"""

from __future__ import annotations

import pytest

from conformance import (
    marking,
    options,
    processes,
    report_hooks,
    report_outcomes,
    runtest,
    terminal,
)
from conformance.report_outcomes import record_of
from conformance.report_records import ReportCollector
from conformance.run_state import CONFIG, OUTCOMES, known_failure_entries

__all__ = [
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_configure",
    "pytest_report_header",
    "pytest_generate_tests",
    "pytest_collection_modifyitems",
    "pytest_runtest_setup",
    "pytest_runtest_call",
    "pytest_sessionstart",
    "pytest_unconfigure",
    "pytest_xdist_node_collection_finished",
    "pytest_runtest_makereport",
    "pytest_runtest_logreport",
    "pytest_handlecrashitem",
    "pytest_terminal_summary",
    "pytest_configure_node",
    "pytest_sessionfinish",
    "OUTCOMES",
    "known_failure_entries",
]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(report_hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    options.add_markers(config)
    selection = options.configure_selection(config)
    CONFIG[:] = [config]
    processes.configure_run_folder(config)
    processes.terminate_on_signals()
    marking.configure_known_failures(config, selection)
    options.apply_hypothesis_options(config, selection)
    # The report is gathered where pytest's summary is: on an xdist worker
    # its controller does it.
    if not hasattr(config, "workerinput") and not config.option.collectonly:
        collector = ReportCollector(config, record_of)
        config.pluginmanager.register(collector, "conformance-report-collector")


def pytest_sessionstart(session: pytest.Session) -> None:
    processes.start_watch(session)


def pytest_unconfigure(config: pytest.Config) -> None:
    processes.end_run(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids: list[str]) -> None:
    processes.allow_worker_restarts(node, ids)


def pytest_configure_node(node) -> None:  # xdist controller -> worker
    options.hand_to_worker(node)


def pytest_report_header(config: pytest.Config) -> list[str]:
    return options.header(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marking.parametrize(metafunc)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    marking.select_and_mark(config, items)


def pytest_runtest_setup(item: pytest.Item) -> None:
    runtest.set_up(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    yield from runtest.call(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    yield from runtest.make_report(item, call)


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem: str, report: pytest.TestReport, sched) -> None:
    report_outcomes.known_crash_before_logged(report)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    report_outcomes.log(report)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    report_outcomes.finish(session, exitstatus)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    terminal.write_summary(terminalreporter, config)
