"""The suite's pytest plugin: options, markers, devices, profiles, verdicts.

Loaded by conformance/conftest.py, so `python -m conformance` and a plain
`pytest <path to conformance>` behave the same.
"""

from __future__ import annotations

import fnmatch

import pytest
import torch

from conformance import harness
from conformance.check import InvariantViolation
from conformance.invariants import INVARIANTS
from conformance.nodeids import device_of, invariants_of
from conformance.outcomes import VIOLATED, TestOutcome, overall, summary, table
from conformance.selection import Selection, SelectionError, current, select, set_current
from strategies.devices import build_kind

__all__ = [
    "pytest_addoption",
    "pytest_configure",
    "pytest_report_header",
    "pytest_generate_tests",
    "pytest_collection_modifyitems",
    "pytest_runtest_setup",
    "pytest_runtest_makereport",
    "pytest_runtest_logreport",
    "pytest_terminal_summary",
    "pytest_configure_node",
    "OUTCOMES",
]

# Every test's outcome, as the process that prints the summary sees it (the
# xdist controller, or the only process).
OUTCOMES: dict[str, TestOutcome] = {}
_CONFIG: list[pytest.Config] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "torch conformance")
    group.addoption(
        "--devices",
        default=None,
        help="comma-separated devices to run on (cpu, cuda, cuda:N, mps); "
        "default: every known device, the absent ones reported as skipped",
    )
    group.addoption(
        "--dtypes",
        default=None,
        help="comma-separated dtypes or groups (floating, complex, integral, grad, all)",
    )
    group.addoption("--profile", default=None, help="Hypothesis profile: dev, ci, thorough")
    group.addoption("--seed", default=None, help="Hypothesis seed (ci defaults to 0)")
    group.addoption(
        "--invariants",
        default=None,
        help="only the tests of these invariant IDs (comma-separated, globs allowed)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "invariant(*ids): the catalogue IDs a test checks")
    config.addinivalue_line(
        "markers", "seed: an example from the articles the project started from"
    )
    # A worker takes the selection its controller made, so that every process
    # runs the same profile and seed.
    given = getattr(config, "workerinput", {}).get("conformance_selection")
    try:
        selection = (
            select(**given)
            if given
            else select(
                config.getoption("devices"),
                config.getoption("dtypes"),
                config.getoption("profile"),
                config.getoption("seed"),
            )
        )
    except SelectionError as error:
        raise pytest.UsageError(str(error)) from None
    set_current(selection)
    config.stash[_SELECTION] = selection
    _CONFIG[:] = [config]
    # Hypothesis's own plugin applies these in its pytest_configure, after ours.
    config.option.hypothesis_profile = selection.profile
    if selection.seed is not None:
        config.option.hypothesis_seed = str(selection.seed)


_SELECTION = pytest.StashKey[Selection]()


def pytest_configure_node(node) -> None:  # xdist controller -> worker
    selection = node.config.stash[_SELECTION]
    node.workerinput["conformance_selection"] = {
        "devices": node.config.getoption("devices"),
        "dtypes": node.config.getoption("dtypes"),
        "profile": selection.profile,
        "seed": selection.seed,
    }


def pytest_report_header(config: pytest.Config) -> list[str]:
    selection = config.stash[_SELECTION]
    git = (torch.version.git_version or "unknown")[:12]
    debug = ", debug build" if getattr(torch.version, "debug", False) else ""
    return [
        f"torch {torch.__version__} (git {git}), build: {build_kind()}{debug}",
        *selection.describe(),
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" not in metafunc.fixturenames:
        return
    selection = current()
    params = [
        pytest.param(
            d.name, id=d.name, marks=() if d.present else pytest.mark.skip(reason=d.reason)
        )
        for d in selection.devices
    ]
    metafunc.parametrize("device", params)


def _declared(item: pytest.Item) -> tuple[str, ...]:
    ids: list[str] = []
    for mark in item.iter_markers("invariant"):
        ids.extend(mark.args)
    return tuple(ids)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = config.getoption("invariants")
    patterns = [p.strip() for p in wanted.split(",") if p.strip()] if wanted else []
    keep, drop = [], []
    for item in items:
        ids = _declared(item)
        if not ids:
            raise pytest.UsageError(f"{item.nodeid} declares no invariant (@pytest.mark.invariant)")
        unknown = [i for i in ids if i not in INVARIANTS]
        if unknown:
            raise pytest.UsageError(f"{item.nodeid} names unknown invariants {unknown}")
        if patterns and not any(fnmatch.fnmatchcase(i, p) for i in ids for p in patterns):
            drop.append(item)
            continue
        device = item.callspec.params.get("device", "cpu") if hasattr(item, "callspec") else "cpu"
        item.user_properties.append(("invariants", list(ids)))
        item.user_properties.append(("device", device))
        not_applying = [
            INVARIANTS[i] for i in ids if not INVARIANTS[i].applies_to(torch.__version__)
        ]
        if len(not_applying) == len(ids):
            ranges = ", ".join(f"{inv.id} applies to torch {inv.versions}" for inv in not_applying)
            item.add_marker(pytest.mark.skip(reason=f"{ranges}; this is {torch.__version__}"))
        keep.append(item)
    if patterns and not keep:
        raise pytest.UsageError(f"--invariants {wanted!r} matches no test")
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_setup(item: pytest.Item) -> None:
    harness.reset_coverage()


def _violations(error: BaseException | None) -> list[InvariantViolation]:
    """The violations an exception (or a group of them) carries."""
    found: list[InvariantViolation] = []
    stack = [error] if error is not None else []
    while stack:
        current_error = stack.pop()
        if isinstance(current_error, InvariantViolation):
            found.append(current_error)
            continue
        stack.extend(getattr(current_error, "exceptions", ()))
        if current_error.__cause__ is not None:
            stack.append(current_error.__cause__)
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call":
        return
    report.user_properties.append(("coverage", harness.COVERAGE.as_dict()))
    if call.excinfo is not None:
        violations = _violations(call.excinfo.value)
        ids = list(dict.fromkeys(v.invariant for v in violations))
        report.user_properties.append(("violations", ids))
        for v in violations:
            if v.repro:
                report.user_properties.append(("repro", v.repro))
            if v.example:
                report.user_properties.append(("example", v.example))
            if v.repro or v.example:
                break


def _outcome_of(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.when != "call" and report.failed:
        return "error"
    return report.outcome


def _message(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        text = crash.message if crash is not None else str(report.longrepr)
        return text.strip().splitlines()[0] if text.strip() else ""
    return ""


def outcome_from_report(report: pytest.TestReport) -> TestOutcome:
    props = dict(report.user_properties)
    return TestOutcome(
        nodeid=report.nodeid,
        invariants=tuple(props.get("invariants", ())),
        device=props.get("device", "cpu"),
        outcome=_outcome_of(report),
        violated=tuple(props.get("violations", ())),
        message=_message(report),
        longrepr=str(report.longrepr) if report.failed else "",
        coverage=props.get("coverage", {}),
        repro=props.get("repro", ""),
        example=props.get("example", ""),
        duration=report.duration,
    )


def _crash_outcome(report: pytest.TestReport, config: pytest.Config) -> TestOutcome:
    """A crashed xdist worker's report carries only the node ID: recover the
    test's invariants from its module, and count the crash against them."""
    roots = [config.rootpath, config.invocation_params.dir]
    invariants = invariants_of(report.nodeid, roots)
    return TestOutcome(
        nodeid=report.nodeid,
        invariants=invariants,
        device=device_of(report.nodeid),
        outcome="failed",
        violated=invariants,
        message=_message(report) or "the worker running this test crashed",
        longrepr=str(report.longrepr),
    )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "???":  # xdist: the worker crashed inside this test
        OUTCOMES[report.nodeid] = _crash_outcome(report, _CONFIG[0])
        return
    if (
        report.when == "call"
        or (report.when == "setup" and not report.passed)
        or (report.when == "teardown" and report.failed)
    ):
        previous = OUTCOMES.get(report.nodeid)
        if previous is None or previous.outcome not in ("failed", "error"):
            OUTCOMES[report.nodeid] = outcome_from_report(report)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    cells = table(OUTCOMES.values())
    counts = summary(cells)
    write = terminalreporter.write_line
    terminalreporter.section("invariants")
    for invariant, by_device in cells.items():
        if overall(by_device) != VIOLATED:
            continue
        for device, cell in by_device.items():
            if cell.status == VIOLATED:
                first = next(t for t in cell.tests if invariant in t.broken)
                write(f"VIOLATED {invariant} [{device}]: {first.message}", red=True)
    parts = [f"{n} {status}" for status, n in counts.items() if n]
    write("invariants: " + ", ".join(parts), bold=True)
