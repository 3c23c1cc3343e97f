"""Running one test: every example under the flight recorder and the
watchdog, a kernel the build lacks counted rather than failed, and what the
test's report carries (coverage, the violations with their repro and
example, a problem that stopped it, a listed failure as an expected one)."""

from __future__ import annotations

import pytest

from conformance import build, harness, repro_check, watch
from conformance.check import InvariantViolation
from conformance.compiled import targets as compile_targets
from conformance.hypothesis_adapter import examples_run_by, inner_test_of
from conformance.internal import InternalError, suite_fault
from conformance.marking import known_if_listed
from conformance.report_outcomes import problem_of
from conformance.run_state import SELECTION


def set_up(item: pytest.Item) -> None:
    harness.reset_coverage()


def call(item: pytest.Item):
    """The body of a pytest_runtest_call hook wrapper: every example runs
    under the flight recorder and the watchdog: each Hypothesis example, or
    a plain test as one example."""
    test = getattr(item, "obj", None)
    inner = inner_test_of(test)
    if inner is None:
        with watch.example(item.nodeid):
            yield
        return
    context = replay_context(item)
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

    with examples_run_by(test, each_example):
        yield


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


def make_report(item: pytest.Item, call: pytest.CallInfo):
    """The body of a pytest_runtest_makereport hook wrapper."""
    outcome = yield
    report = outcome.get_result()
    if call.when != "call":
        return
    report.user_properties.append(("coverage", harness.COVERAGE.as_dict()))
    skipped_if_nothing_ran(item, report)
    if call.excinfo is not None and (problem := problem_of(call.excinfo.value)) is not None:
        report.user_properties.append(("problem", problem))
        if problem.get("known"):  # a listed crash: reported crashed, expected on this build
            report.outcome = "skipped"
            report.wasxfail = problem["known"]
        return
    if call.excinfo is not None:
        violations = _violations(call.excinfo.value)
        ids = list(dict.fromkeys(v.invariant for v in violations))
        report.user_properties.append(("violations", ids))
        known_if_listed(item, report, violations)
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


def skipped_if_nothing_ran(item: pytest.Item, report: pytest.TestReport) -> None:
    """A test that passed only because every example it drew reached a kernel
    the build lacks checked nothing: skipped, with the kernels as its reason."""
    ran = harness.COVERAGE
    if not report.passed or not ran.examples or ran.lacking < ran.examples:
        return
    path, line, _ = item.location
    report.outcome = "skipped"
    report.longrepr = (path, (line or 0) + 1, "Skipped: " + "; ".join(build.MISSING))


def replay_context(item: pytest.Item) -> dict:
    """What conformance.replay needs to run one example of this test again."""
    selection = item.config.stash[SELECTION]
    params = dict(getattr(getattr(item, "callspec", None), "params", {}))
    target = params.get("target")
    return {
        "test": f"{item.module.__name__}::{item.obj.__name__}",
        "params": {k: v for k, v in params.items() if isinstance(v, str | int | float)},
        # a compile target travels by the name --compile gave it
        "target": target.spec if isinstance(target, compile_targets.Target) else None,
        "selection": {
            "devices": item.config.getoption("devices"),
            "dtypes": item.config.getoption("dtypes"),
            "profile": selection.profile,
            "seed": selection.seed,
        },
    }
