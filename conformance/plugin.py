"""The suite's pytest plugin: options, markers, devices, profiles, verdicts.

Loaded by conformance/conftest.py, so `python -m conformance` and a plain
`pytest <path to conformance>` behave the same.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import Phase, settings

from conformance import (
    build,
    children,
    evidence,
    harness,
    known_failures,
    not_in_build,
    report_hooks,
    repro_check,
    watch,
)
from conformance.check import InvariantViolation
from conformance.compiled import targets as compile_targets
from conformance.failures import crash_text, minimal_example, traceback_summary
from conformance.internal import InternalError, internal_error_in, suite_fault
from conformance.invariants import INVARIANTS
from conformance.known_failures import KnownFailure
from conformance.nodeids import device_of, invariants_of
from conformance.outcomes import (
    CRASHED,
    HELD,
    HUNG,
    INTERNAL,
    UNFINISHED,
    VIOLATED,
    XFAILED,
    TestOutcome,
    overall,
    summary,
    table,
    tests_line,
    unfinished,
)
from conformance.report_records import Record, ReportCollector
from conformance.schema.summary import schema_summary
from conformance.selection import Selection, SelectionError, current, select, set_current
from strategies.devices import build_kind

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

# Every test's outcome, as the process that prints the summary sees it (the
# xdist controller, or the only process).
OUTCOMES: dict[str, TestOutcome] = {}
_CONFIG: list[pytest.Config] = []


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(report_hooks)


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
        "--known-failures",
        action="append",
        default=[],
        metavar="TOML",
        help="a known-failure list (repeatable); the shipped list is always read first",
    )
    group.addoption(
        "--no-known-failures",
        action="store_true",
        help="read no known-failure list, not even the shipped one",
    )
    group.addoption(
        "--strict-xfail",
        action="store_true",
        help="a listed invariant that unexpectedly holds is an error",
    )
    group.addoption(
        "--invariants",
        default=None,
        help="only the tests of these invariant IDs (comma-separated, globs allowed)",
    )
    group.addoption(
        "--timeout",
        default=watch.DEFAULT_LIMIT,
        type=float,
        metavar="SECONDS",
        help=f"an example running longer is reported hung (default {watch.DEFAULT_LIMIT:g}; "
        "0: no limit)",
    )
    group.addoption(
        "--schema",
        default=None,
        help="ATen operators the schema.* tests check: 'sample' (default; 'all' under the "
        "thorough profile), 'all', or comma-separated names and globs (aten::add*,neg.out)",
    )
    group.addoption(
        "--compile",
        default=None,
        metavar="BACKEND[,BACKEND...]",
        help="also run the compiled differential under these torch.compile backends "
        "(eager, aot_eager, inductor, any registered backend, or module:callable)",
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
    _check_schema_option(config.getoption("schema"))
    config.stash[_SELECTION] = selection
    try:
        compile_targets.set_targets(compile_targets.parse_targets(config.getoption("compile")))
    except compile_targets.TargetError as error:
        raise pytest.UsageError(str(error)) from None
    _CONFIG[:] = [config]
    _configure_run_folder(config)
    _terminate_on_signals()
    _configure_known_failures(config, selection)
    # Hypothesis's own plugin applies these in its pytest_configure, after ours.
    config.option.hypothesis_profile = selection.profile
    if selection.seed is not None:
        config.option.hypothesis_seed = str(selection.seed)
    # The report is gathered where pytest's summary is: on an xdist worker
    # its controller does it.
    if not hasattr(config, "workerinput") and not config.option.collectonly:
        collector = ReportCollector(config, record_of)
        config.pluginmanager.register(collector, "conformance-report-collector")


def known_failures_of(config: pytest.Config) -> list[KnownFailure]:
    """The run's known failures that apply to this build (operator entries included)."""
    return list(config.stash.get(_KNOWN, []))


def _check_schema_option(spec: str | None) -> None:
    if spec in (None, "all", "sample"):
        return
    from conformance.schema.operators import select as select_operators

    try:
        select_operators(spec, 0)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


_SELECTION = pytest.StashKey[Selection]()
_KNOWN = pytest.StashKey[list[KnownFailure]]()
_COVERING = pytest.StashKey[list[KnownFailure]]()


class KnownFailureWarning(UserWarning):
    """A known-failure entry that matches nothing, or unexpectedly holds."""


def _configure_known_failures(config: pytest.Config, selection: Selection) -> None:
    paths = [] if config.getoption("no_known_failures") else [known_failures.SHIPPED]
    paths += [Path(p) for p in config.getoption("known_failures")]
    try:
        entries = known_failures.load_all(paths)
    except known_failures.KnownFailuresError as error:
        raise pytest.UsageError(str(error)) from None
    active = [e for e in entries if e.applies_to_build(torch.__version__)]
    config.stash[_KNOWN] = active
    if hasattr(config, "workerinput"):
        children.watch_parent()  # a worker ends with its controller, however that ends
        return  # the controller warns, once
    for entry, why in known_failures.stale(
        entries, torch.__version__, selection.present, selection.dtypes
    ):
        config.issue_config_time_warning(
            KnownFailureWarning(
                f"known-failure entry {entry.label} ({entry.where}) matches nothing: {why}"
            ),
            stacklevel=2,
        )


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a CI system cancelling, a closed terminal): the run
    stops as for Ctrl-C, and the report is written, marked incomplete."""


def _terminate_on_signals() -> None:
    def stop(signum: int, frame) -> None:
        # once: a second signal while the report is written must not cut it short
        for number in _STOPPING_SIGNALS:
            signal.signal(number, signal.SIG_IGN)
        raise Terminated(f"terminated by {signal.Signals(signum).name}")

    for number in _STOPPING_SIGNALS:
        if signal.getsignal(number) in (signal.SIG_DFL, None):
            signal.signal(number, stop)


_STOPPING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)
_RUN_FOLDER = pytest.StashKey[Path]()


def _configure_run_folder(config: pytest.Config) -> None:
    """Where every process of the run leaves its flight recorder's files."""
    given = getattr(config, "workerinput", {}).get("conformance_run_folder")
    folder = Path(given) if given else Path(tempfile.mkdtemp(prefix="conformance-run-"))
    config.stash[_RUN_FOLDER] = folder


def _process_name(config: pytest.Config) -> str:
    return getattr(config, "workerinput", {}).get("workerid", "main")


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if _is_controller_of_workers(config):
        return  # the controller runs no test
    limit = config.getoption("timeout") or None
    name = _process_name(config)
    folder = config.stash[_RUN_FOLDER]
    (folder / f"{name}.pid").write_text(str(os.getpid()))
    watch.install(folder, name, limit)


def _is_controller_of_workers(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", 0))


def pytest_unconfigure(config: pytest.Config) -> None:
    watch.uninstall()
    if hasattr(config, "workerinput") or _RUN_FOLDER not in config.stash:
        return
    folder = config.stash[_RUN_FOLDER]
    _end_workers_left(folder)
    shutil.rmtree(folder, ignore_errors=True)


def _end_workers_left(folder: Path) -> None:
    """Kill any worker of ours still alive (one stuck in a hang when the run
    was stopped): the run leaves no process behind."""
    for pid_file in folder.glob("*.pid"):
        try:
            pid = int(pid_file.read_text())
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (OSError, ValueError):
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        if parent == os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids: list[str]) -> None:
    """Let xdist replace a crashed worker once per test: every crash uses up
    the test it ran, so this cannot loop, and a build that crashes on many
    inputs still gets every other test's result. (xdist's own default, 4 per
    worker, guards against workers that crash while collecting, which the
    limit still does until collection has finished.)"""
    config = node.config
    if getattr(config.option, "maxworkerrestart", None) is not None:
        return  # the user's --max-worker-restart
    dsession = config.pluginmanager.getplugin("dsession")
    if getattr(dsession, "_max_worker_restart", None) is not None:
        workers = config.option.numprocesses if isinstance(config.option.numprocesses, int) else 1
        dsession._max_worker_restart = len(ids) + 4 * max(workers, 1)


def known_failure_entries() -> list[KnownFailure]:
    """The run's known-failure entries for this build (none outside a run)."""
    return _CONFIG[0].stash.get(_KNOWN, []) if _CONFIG else []


def pytest_configure_node(node) -> None:  # xdist controller -> worker
    selection = node.config.stash[_SELECTION]
    node.workerinput["conformance_run_folder"] = str(node.config.stash[_RUN_FOLDER])
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
        *(
            [compile_targets.describe(compile_targets.current_targets())]
            if compile_targets.current_targets()
            else []
        ),
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target" in metafunc.fixturenames:
        _parametrize_targets(metafunc)
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


def _parametrize_targets(metafunc: pytest.Metafunc) -> None:
    """One test per --compile target; without any, one skipped test that says how."""
    chosen = compile_targets.current_targets()
    params = [
        pytest.param(t, id=t.name, marks=() if t.available else pytest.mark.skip(reason=t.reason))
        for t in chosen
    ] or [
        pytest.param(
            None,
            id="no-target",
            marks=pytest.mark.skip(
                reason="no compile target: run with --compile aot_eager (or another backend)"
            ),
        )
    ]
    metafunc.parametrize("target", params)


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
        target = item.callspec.params.get("target") if hasattr(item, "callspec") else None
        device = compile_targets.column(device, getattr(target, "name", None))
        item.user_properties.append(("invariants", list(ids)))
        item.user_properties.append(("device", device))
        _mark_known(config, item, ids, device)
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


_NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)


def _mark_known(config: pytest.Config, item: pytest.Item, ids: tuple, device: str) -> None:
    """A test whose every invariant is a known failure on its device is an
    expected failure, run without shrinking so that it stays fast."""
    known = config.stash.get(_KNOWN, [])
    covering = [e for e in known if any(e.covers(i, device) for i in ids)]
    item.stash[_COVERING] = covering
    whole = [e for e in covering if not e.narrowed]
    if not whole or not all(any(e.covers(i, device) for e in whole) for i in ids):
        return
    reason = "; ".join(
        e.xfail_reason(next((i for i in ids if e.covers(i, device)), None)) for e in whole
    )
    item.add_marker(
        pytest.mark.xfail(
            reason=reason, strict=config.getoption("strict_xfail"), raises=AssertionError
        )
    )
    wrapped = getattr(item, "obj", None)
    current = getattr(wrapped, "_hypothesis_internal_use_settings", None)
    if current is not None:
        wrapped._hypothesis_internal_use_settings = settings(current, phases=_NO_SHRINK)


def pytest_runtest_setup(item: pytest.Item) -> None:
    harness.reset_coverage()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Every example runs under the flight recorder and the watchdog: each
    Hypothesis example (through `inner_test`, Hypothesis's hook for
    wrapping them), or a plain test as one example."""
    hypothesis = getattr(getattr(item, "obj", None), "hypothesis", None)
    if hypothesis is None or not hasattr(hypothesis, "inner_test"):
        with watch.example(item.nodeid):
            yield
        return
    inner = hypothesis.inner_test
    context = _replay_context(item)
    params = getattr(getattr(item, "callspec", None), "params", {})
    device = params.get("device", "cpu")

    def each_example(*args, **kwargs):
        with watch.example(item.nodeid, context):
            try:
                return inner(*args, **kwargs)
            except Exception as error:
                cause = error.__cause__ if isinstance(error, InvariantViolation) else error
                if cause is not None and watch.out_of_memory(cause):
                    raise watch.ExampleCrashed(f"torch ran out of memory: {cause}") from error
                if (missing := build.missing_in(error, device)) is not None:
                    build.MISSING[missing.reason] += 1  # this example is skipped, and counted
                    harness.COVERAGE.lacking += 1
                    return None
                if suite_fault(error):
                    raise InternalError("running the test's example", error) from error
                raise

    hypothesis.inner_test = each_example
    try:
        yield
    finally:
        hypothesis.inner_test = inner


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
    _skipped_if_nothing_ran(item, report)
    if call.excinfo is not None and (problem := _problem(call.excinfo.value)) is not None:
        report.user_properties.append(("problem", problem))
        return
    if call.excinfo is not None:
        violations = _violations(call.excinfo.value)
        ids = list(dict.fromkeys(v.invariant for v in violations))
        report.user_properties.append(("violations", ids))
        _known_if_listed(item, report, violations)
        for v in violations:
            if v.repro:
                report.user_properties.append(("repro", v.repro))
                if v.repro_asserts and report.failed and _first_of_rule(v.invariant, item):
                    verdict, said = repro_check.reproduces(v.repro)
                    report.user_properties.append(("reproduced", [verdict, said]))
            if v.example:
                report.user_properties.append(("example", v.example))
            if v.repro or v.example:
                break


_REPRO_CHECKED: set[tuple[str, str]] = set()  # (rule, device) checked in this process


def _first_of_rule(invariant: str, item: pytest.Item) -> bool:
    """Whether this is the process's first violation of the rule on its
    device: its repro is checked in a fresh process (a known failure's is
    not); later ones (the differential's other shards) are the same class,
    and each check costs a torch import."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    key = (invariant, str(params.get("device", "cpu")))
    if key in _REPRO_CHECKED:
        return False
    _REPRO_CHECKED.add(key)
    return True


def _skipped_if_nothing_ran(item: pytest.Item, report: pytest.TestReport) -> None:
    """A test that passed only because every example it drew reached a kernel
    the build lacks checked nothing: skipped, with the kernels as its reason."""
    ran = harness.COVERAGE
    if not report.passed or not ran.examples or ran.lacking < ran.examples:
        return
    path, line, _ = item.location
    report.outcome = "skipped"
    report.longrepr = (path, (line or 0) + 1, "Skipped: " + "; ".join(build.MISSING))


def _replay_context(item: pytest.Item) -> dict:
    """What conformance.replay needs to run one example of this test again."""
    selection = item.config.stash[_SELECTION]
    params = dict(getattr(getattr(item, "callspec", None), "params", {}))
    target = params.get("target")
    return {
        "test": f"{item.module.__name__}::{item.obj.__name__}",
        "params": {k: v for k, v in params.items() if isinstance(v, str | int | float)},
        # a compile target travels by the name --compile gave it
        "target": target.name if isinstance(target, compile_targets.Target) else None,
        "selection": {
            "devices": item.config.getoption("devices"),
            "dtypes": item.config.getoption("dtypes"),
            "profile": selection.profile,
            "seed": selection.seed,
        },
    }


def replay_limit(found: dict) -> float | None:
    """The limit a replay of a hung example is judged by: the one it ran under."""
    return found.get("limit")


def _problem(error: BaseException) -> dict | None:
    """A test that did not finish in this process: it hung, torch ran out of
    memory, or the suite's own code raised. None for anything else."""
    found = watch.current_evidence()
    kept = {
        "entries": found.get("entries", []),
        "context": found.get("context"),
        "limit": replay_limit(found),
    }
    internal = internal_error_in(error)
    if internal is not None:
        return {"status": INTERNAL, "detail": str(internal), "traceback": internal.original, **kept}
    if isinstance(error, watch.ExampleHung):
        return {"status": HUNG, "detail": f"{error} (stopped in-process)", **kept}
    if isinstance(error, watch.ExampleCrashed):
        return {"status": CRASHED, "detail": str(error), **kept}
    return None


def _known_if_listed(
    item: pytest.Item, report: pytest.TestReport, violations: list[InvariantViolation]
) -> None:
    """Turn a failure into an xfail when every rule it broke is listed, each
    violation matched by its own message; the reason of each rule is kept."""
    if not report.failed or not violations or hasattr(report, "wasxfail"):
        return
    device = dict(item.user_properties).get("device", "cpu")
    dtypes = set(harness.LAST_EXAMPLE_DTYPES)
    ops = set(harness.LAST_EXAMPLE_OPS)
    whole = str(report.longrepr)  # (a violation raised alone: its text with the traceback)
    covering = item.stash.get(_COVERING, [])
    reasons: dict[str, str] = {}
    for v in violations:
        text = whole if len(violations) == 1 else str(v)
        entry = next(
            (e for e in covering if e.covers(v.invariant, device, dtypes, ops, text)), None
        )
        if entry is None:
            return
        reasons.setdefault(v.invariant, entry.xfail_reason(v.invariant))
    report.outcome = "skipped"
    report.wasxfail = "; ".join(dict.fromkeys(reasons.values()))
    report.user_properties.append(("known", reasons))


def _outcome_of(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.failed and str(report.longrepr).startswith("[XPASS(strict)]"):
        return "xpassed"  # the rule held; --strict-xfail makes that an error, not a violation
    if report.when != "call" and report.failed:
        return "error"
    return report.outcome


def _message(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail") and report.skipped:
        return str(report.wasxfail)  # the known-failure entries' reasons
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        text = crash.message if crash is not None else str(report.longrepr)
        return text.strip().splitlines()[0] if text.strip() else ""
    return ""


def outcome_from_report(report: pytest.TestReport) -> TestOutcome:
    """The report's outcome; the same object each time it is asked (the
    summary and the report share it, and a background minimizer updates it)."""
    cached = getattr(report, "_conformance_outcome", None)
    if cached is None:
        cached = _outcome(report)
        report._conformance_outcome = cached
    return cached


def _outcome(report: pytest.TestReport) -> TestOutcome:
    props = dict(report.user_properties)
    if "problem" in props:
        return _unfinished_outcome(report, props, dict(props["problem"]))
    return TestOutcome(
        nodeid=report.nodeid,
        invariants=tuple(props.get("invariants", ())),
        device=props.get("device", "cpu"),
        outcome=_outcome_of(report),
        violated=tuple(props.get("violations", ())),
        message=_message(report),
        longrepr=str(report.longrepr) if report.failed else "",
        coverage=props.get("coverage", {}),
        known=dict(props.get("known", {})),
        repro=props.get("repro", ""),
        reproduced=tuple(props.get("reproduced", ())),
        example=props.get("example", ""),
        duration=report.duration,
    )


_MINIMIZER = evidence.Minimizer()


def _unfinished_outcome(report: pytest.TestReport, props: dict, problem: dict) -> TestOutcome:
    """A test that crashed, hung or hit an internal error, with the example
    it was running: against the test, never a violation of its rules."""
    entries = problem.pop("entries", [])
    context = problem.pop("context", None)
    limit = problem.pop("limit", None)  # what a replay of the example is judged by
    if limit is None and _CONFIG:
        limit = _CONFIG[0].getoption("timeout")
    status = problem["status"]
    detail = problem.get("detail", "")
    first = next((line for line in detail.splitlines() if line.strip()), status)
    outcome = TestOutcome(
        nodeid=report.nodeid,
        invariants=tuple(props.get("invariants", ())),
        device=props.get("device", device_of(report.nodeid)),
        outcome=status,
        message=f"{status}: {first.strip()}",
        longrepr=str(report.longrepr or detail),
        coverage=props.get("coverage", {}),
        example=evidence.example_text(entries),
        duration=report.duration,
        problem=problem,
    )
    if status != INTERNAL:
        outcome.repro, program = evidence.repro_for(outcome, entries)
        if program is not None:
            _MINIMIZER.submit(outcome, program)
        elif context and evidence.choices_of(entries):
            problem["repro_note"] = "no repro: replaying the example did not finish in time"
            _MINIMIZER.submit_replay(outcome, context, entries, limit)
        elif (label := evidence.drawing(entries)) is not None:
            problem["repro_note"] = (
                f"no repro: it happened while the input {label!r} was drawn (the strategy "
                "builds its tensor with torch), before its choices were recorded"
            )
    return outcome


# xdist's `when` in the report of a test whose worker died under it
CRASH_PHASE = "???"


def is_crash(report: pytest.TestReport) -> bool:
    return report.when == CRASH_PHASE


def crash_outcome(report: pytest.TestReport, roots: list[Path]) -> TestOutcome:
    """A crashed xdist worker's report carries only the node ID: recover the
    test's invariants from its module (node IDs are relative to one of
    `roots`), and the example it ran from the files its process left. The
    test crashed (or hung, if the watchdog ended it): that is its status,
    and no rule it names is counted violated for it."""
    cached = getattr(report, "_conformance_outcome", None)
    if cached is not None:
        return cached
    invariants = invariants_of(report.nodeid, roots)
    text = str(report.longrepr or "the worker running this test crashed")
    found = _evidence_of(report)
    how = found.get("how", "killed")
    status = HUNG if how == "hang" else CRASHED
    detail = found.get("detail", "") or text
    if found and found.get("nodeid") != report.nodeid:
        found = {}  # the files speak of another test: say nothing rather than mislead
    problem = {"status": status, "detail": f"{text}\n{detail}", "how": how}
    if found.get("example"):
        problem["example_number"] = found["example"]
    if found.get("between_examples"):
        problem["note"] = "it happened after the last example had finished"
    report.user_properties = [
        ("invariants", list(invariants)),
        ("device", device_of(report.nodeid)),
        (
            "problem",
            {
                **problem,
                "entries": found.get("entries", []),
                "context": found.get("context"),
                "limit": replay_limit(found),
            },
        ),
    ]
    outcome = outcome_from_report(report)
    outcome.message = f"{status}: {_headline(how, detail, text)}"
    _known_if_listed_crash(report, outcome)
    return outcome


def _known_if_listed_crash(report: pytest.TestReport, outcome: TestOutcome) -> None:
    """A crash on the known-failure list stays a crash, with its input and
    repro, but counts as an expected failure: it does not fail the run."""
    if outcome.outcome != CRASHED:
        return
    detail = outcome.problem.get("detail", "")
    for entry in known_failure_entries():
        if entry.covers_crash(report.nodeid, outcome.example, detail):
            reason = entry.xfail_reason()
            outcome.problem["known"] = reason
            report.outcome = "skipped"
            report.wasxfail = reason
            return


def record_of(report: pytest.TestReport, category: str, roots: list[Path]) -> Record:
    """The report's record of one counted test report. `roots`: folders node
    IDs are relative to."""
    if is_crash(report):
        outcome = crash_outcome(report, roots)
        return Record(outcome, category, report.when, outcome.longrepr, crashed=True)
    outcome = outcome_from_report(report)
    frames = ""
    if outcome.outcome in UNFINISHED:  # its input is known: keep the outcome as it is
        return Record(outcome, category, report.when, traceback_summary(report.longrepr))
    if report.failed:
        frames = traceback_summary(report.longrepr)
        if not outcome.example:
            example = minimal_example(crash_text(report.longrepr))
            outcome = dataclasses.replace(outcome, example=example)
    return Record(outcome, category, report.when, frames)


def _context(found: dict) -> dict:
    return {"context": found["context"]} if found.get("context") else {}


def _headline(how: str, detail: str, text: str) -> str:
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    if how == "fatal" and lines:
        return lines[0]  # "Fatal Python error: Segmentation fault"
    if how == "hang":
        return "the example did not stop at the time limit; the watchdog ended the worker"
    return text.strip().splitlines()[0] if text.strip() else "the worker died"


def _evidence_of(report: pytest.TestReport) -> dict:
    node = getattr(report, "node", None)
    name = getattr(node, "workerinput", {}).get("workerid") if node is not None else None
    if not name or not _CONFIG or _RUN_FOLDER not in _CONFIG[0].stash:
        return {}
    return watch.read_evidence(watch.Files.of(_CONFIG[0].stash[_RUN_FOLDER], name))


def _roots(config: pytest.Config) -> list[Path]:
    return [config.rootpath, config.invocation_params.dir]


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem: str, report: pytest.TestReport, sched) -> None:
    """xdist, on the controller, before the crashed test's report is logged:
    a known crash becomes an xfail before pytest and its terminal count it."""
    if _CONFIG:
        crash_outcome(report, _roots(_CONFIG[0]))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if is_crash(report):
        OUTCOMES[report.nodeid] = crash_outcome(report, _roots(_CONFIG[0]))
        return
    if (
        report.when == "call"
        or (report.when == "setup" and not report.passed)
        or (report.when == "teardown" and report.failed)
    ):
        previous = OUTCOMES.get(report.nodeid)
        if previous is None or previous.outcome not in ("failed", "error", *UNFINISHED):
            OUTCOMES[report.nodeid] = outcome_from_report(report)


def _unexpectedly_holding(config: pytest.Config) -> list[KnownFailure]:
    """Listed entries whose invariant was tested on their device and held."""
    cells = table(OUTCOMES.values(), torch.__version__)
    holding = []
    for entry in config.stash.get(_KNOWN, []):
        if entry.operator is not None or entry.status is not None:
            continue  # an operator's (the schema sweep reports it) or a crash
        by_device = cells.get(entry.invariant, {})
        tested = [
            c
            for d, c in by_device.items()
            if entry.covers(entry.invariant, d) and c.status in (HELD, VIOLATED, XFAILED)
        ]  # an absent device's skipped cell says nothing either way
        if entry.ops is not None or entry.message is not None:
            continue  # one class of failures among others: holding says nothing
        if tested and all(c.status == HELD for c in tested):
            holding.append(entry)
    return holding


# How long the end of a run waits for crash repros still being minimized.
MINIMIZE_WAIT_SECONDS = 30.0


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return
    _MINIMIZER.wait(MINIMIZE_WAIT_SECONDS)
    # The suite's own error outweighs any verdict: the run's results are in doubt.
    if any(t.outcome == INTERNAL for t in OUTCOMES.values()):
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        return
    if not session.config.getoption("strict_xfail"):
        return
    if _unexpectedly_holding(session.config) and exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    cells = table(OUTCOMES.values(), torch.__version__)
    counts = summary(cells)
    write = terminalreporter.write_line
    terminalreporter.section("invariants")
    strict = config.getoption("strict_xfail")
    for entry in _unexpectedly_holding(config):
        verdict = "ERROR (--strict-xfail)" if strict else "warning"
        write(
            f"{verdict}: known failure {entry.label} unexpectedly holds ({entry.where})",
            red=strict,
            yellow=not strict,
        )
    for invariant, by_device in cells.items():
        if overall(by_device) != VIOLATED:
            continue
        for device, cell in by_device.items():
            if cell.status == VIOLATED:
                broken = [t for t in cell.tests if invariant in t.broken]
                first = next((t for t in broken if t.reproduced), broken[0])
                checked = f" ({repro_check.label(first.reproduced[0])})" if first.reproduced else ""
                write(f"VIOLATED {invariant} [{device}]{checked}: {first.message}", red=True)
    for invariant, by_device in cells.items():
        for device, cell in by_device.items():
            for reason in cell.known if cell.status == XFAILED else ():
                write(f"XFAILED {invariant} [{device}]: {reason}", yellow=True)
    by_status = unfinished(OUTCOMES.values())
    _write_unfinished(terminalreporter, by_status)
    parts = [f"{n} {status}" for status, n in counts.items() if n]
    line = "invariants: " + ", ".join(parts)
    unreproduced = sorted(
        {i for t in OUTCOMES.values() if t.reproduced[:1] == (repro_check.NO,) for i in t.broken}
    )
    if unreproduced:  # counted apart: the violation was seen, its repro passes
        line += f" ({len(unreproduced)} of them not reproduced in a fresh process)"
    tests = tests_line(by_status)
    write(f"{line}; {tests}" if tests else line, bold=True)
    for line in not_in_build.lines(not_in_build.tally(OUTCOMES.values())):
        write(line, yellow=True)
    for line in schema_summary(OUTCOMES.values()):
        write(line)
    differential = [t for t in OUTCOMES.values() if t.coverage.get("steps")]
    if differential:
        steps = sum(t.coverage["steps"] for t in differential)
        chains = sum(t.coverage.get("examples", 0) for t in differential)
        seconds = sum(t.duration for t in differential)
        write(
            f"differential: {chains} chains, {steps} steps checked in lockstep, "
            f"{seconds:.1f} s of test time: {steps / max(seconds, 1e-9):.0f} steps/s per worker"
        )


def _write_unfinished(terminalreporter, by_status: dict[str, list[TestOutcome]]) -> None:
    """One block per test that crashed or hung (the input it ran, its repro
    in the report), then the internal errors with their tracebacks."""
    write = terminalreporter.write_line
    for status in (CRASHED, HUNG):
        for test in by_status[status]:
            known = test.problem.get("known")
            head = f"{status.upper()} {test.nodeid}: {test.message.partition(': ')[2]}"
            write(head + (f" ({known})" if known else ""), red=not known, yellow=bool(known))
            for line in test.example.splitlines()[:12]:
                write(f"    {line}")
            if test.repro:
                write("    (a repro script is in the report)")
    if by_status[INTERNAL]:
        terminalreporter.section("internal error", red=True)
        for test in by_status[INTERNAL]:
            write(f"INTERNAL ERROR in {test.nodeid}: {test.problem.get('detail', '')}", red=True)
            write(test.problem.get("traceback", "").rstrip())
