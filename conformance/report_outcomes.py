"""Each test's outcome, from its pytest reports: a verdict on its rules, or a
test that did not finish (it crashed, hung, or hit the suite's own internal
error) with the example it ran; `record_of` turns a report into the report's
record, and the end of the session judges the run's exit status."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conformance import evidence, options, watch
from conformance.failures import crash_text, minimal_example, traceback_summary
from conformance.internal import internal_error_in
from conformance.marking import unexpectedly_holding
from conformance.nodeids import device_of, invariants_of
from conformance.outcomes import CRASHED, HUNG, INTERNAL, UNFINISHED, TestOutcome
from conformance.report_records import Record
from conformance.run_state import CONFIG, OUTCOMES, RUN_FOLDER, known_failure_entries
from conformance.run_state import roots as roots_of


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
    if limit is None and CONFIG:
        limit = options.example_limit(CONFIG[0])
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
        if program is not None and problem.get("known"):
            # the crash and its minimal repro are the known entry's finding: a run
            # that draws it again spends no time on it (each candidate imports torch)
            problem["repro_note"] = "the chain up to the step that crashed, not minimized"
        elif program is not None:
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


def replay_limit(found: dict) -> float | None:
    """The limit a replay of a hung example is judged by: the one it ran under."""
    return found.get("limit")


def problem_of(error: BaseException) -> dict | None:
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
    if isinstance(error, watch.CrashedInChild):  # its own entries: the child's steps
        return dict(error.problem)
    return None


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
    if not name or not CONFIG or RUN_FOLDER not in CONFIG[0].stash:
        return {}
    return watch.read_evidence(watch.Files.of(CONFIG[0].stash[RUN_FOLDER], name))


def known_crash_before_logged(report: pytest.TestReport) -> None:
    """xdist, on the controller, before the crashed test's report is logged:
    a known crash becomes an xfail before pytest and its terminal count it."""
    if CONFIG:
        crash_outcome(report, roots_of(CONFIG[0]))


def log(report: pytest.TestReport) -> None:
    """Keep the test's outcome in OUTCOMES, a failure over a later pass."""
    if is_crash(report):
        OUTCOMES[report.nodeid] = crash_outcome(report, roots_of(CONFIG[0]))
        return
    if (
        report.when == "call"
        or (report.when == "setup" and not report.passed)
        or (report.when == "teardown" and report.failed)
    ):
        previous = OUTCOMES.get(report.nodeid)
        if previous is None or previous.outcome not in ("failed", "error", *UNFINISHED):
            OUTCOMES[report.nodeid] = outcome_from_report(report)


# How long the end of a run waits for crash repros still being minimized.
MINIMIZE_WAIT_SECONDS = 30.0


def finish(session: pytest.Session, exitstatus: int) -> None:
    """Wait for the repros still being minimized, then judge the exit status."""
    if hasattr(session.config, "workerinput"):
        return
    _MINIMIZER.wait(MINIMIZE_WAIT_SECONDS)
    # The suite's own error outweighs any verdict: the run's results are in doubt.
    if any(t.outcome == INTERNAL for t in OUTCOMES.values()):
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        return
    if not session.config.getoption("strict_xfail"):
        return
    if unexpectedly_holding(session.config) and exitstatus == 0:
        session.exitstatus = 1
