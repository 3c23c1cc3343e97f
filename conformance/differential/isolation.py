"""A differential program that reaches a known crash pattern
(crash_patterns.py), run with the full lockstep check in a child process.

Where the child dies by a signal, what it left (the step it was running,
faulthandler's report) is matched against the known-crash entries: one that
covers it keeps the crash aside (known_search.keep_crash) and the test goes
on with its next program; none does, and the test is reported crashed at
once, as a crash of the worker would be. Where the child survives (a build
with the fix), its lockstep verdict counts like any other program's: a
discrepancy is run again in this process, which the child has shown to
survive it, for the run that minimizing and attributing need.

Only flagged programs pay for a child (a Python with torch starting: about
two seconds); the others run in the worker as before.

`python -m conformance.differential.isolation FOLDER NODEID` is the child:
it reads the pickled program on stdin, records each step in FOLDER with the
flight recorder (conformance.watch), and prints its verdict.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from conformance import children, evidence, watch
from conformance.known_search import keep_crash
from conformance.outcomes import CRASHED
from conformance.run_state import known_failure_entries
from strategies.programs import Program

ROOT = Path(__file__).resolve().parents[2]
HANG_SECONDS = 120.0  # a flagged program, a torch import included, at most
_MARK = "@@differential-child "
_NAME = "child"  # the flight recorder's files in the child's folder


@dataclass
class ChildVerdict:
    """What running a program in a child came to."""

    crashed: bool  # it died, and a known-crash entry covers it (kept aside)
    steps_checked: int = 0  # steps compared, when it survived
    found: bool = False  # it survived and reported a discrepancy


def current_nodeid() -> str:
    """The running test's node ID, as pytest names it (its own variable)."""
    return os.environ.get("PYTEST_CURRENT_TEST", "").rpartition(" (")[0]


def packed(program: Program) -> str:
    plain = dataclasses.replace(program, render=None)  # a closure: the listing redraws it
    return base64.b64encode(pickle.dumps(plain, protocol=pickle.HIGHEST_PROTOCOL)).decode()


def run_in_child(program: Program, nodeid: str | None = None) -> ChildVerdict:
    """Run `program` in lockstep in a child process. Raises
    watch.CrashedInChild for a crash no known-crash entry covers, and
    watch.ExampleHung if the child outlives the example's limit."""
    nodeid = current_nodeid() if nodeid is None else nodeid
    with tempfile.TemporaryDirectory(prefix="conformance-child-") as folder:
        code, said, hang = _child(program, nodeid, Path(folder))
        left = watch.read_evidence(watch.Files.of(Path(folder), _NAME))
    if hang is not None:
        raise watch.ExampleHung(hang)
    if code == 0 and said is not None:
        return ChildVerdict(False, said["steps_checked"], said["found"])
    if code >= 0:
        # not a crash (the suite's own error, say): the program runs here, where
        # an error is reported as any other
        return ChildVerdict(False, found=True)
    problem = _problem(program, nodeid, code, left)
    if problem.get("known"):
        keep_crash(problem)
        return ChildVerdict(True)
    raise watch.CrashedInChild(problem)


def _child(program: Program, nodeid: str, folder: Path) -> tuple[int, dict | None, float | None]:
    """The child's exit status, its verdict (None if it printed none) and,
    if it hung, the limit it ran past."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    limit = HANG_SECONDS
    unit = watch.unit_limit()
    if unit:  # below the run's own watchdog, which would end the whole worker
        limit = min(limit, max(0.8 * unit, unit - watch.GRACE))
    command = children.command(
        "conformance.differential.isolation", str(folder), nodeid, module=True
    )
    try:
        done = subprocess.run(
            command,
            input=packed(program),
            capture_output=True,
            text=True,
            env=env,
            timeout=limit,
        )
    except subprocess.TimeoutExpired:
        return -1, None, limit
    said = None
    for line in done.stdout.splitlines():
        if line.startswith(_MARK):
            said = json.loads(line[len(_MARK) :])
    return done.returncode, said, None


def _problem(program: Program, nodeid: str, code: int, left: dict) -> dict:
    """The report's account of the crash, the known entry's reason with it
    where one covers it."""
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    fatal = left.get("detail", "") if left.get("how") == "fatal" else ""
    detail = (fatal or f"killed by {name}") + (
        f"\n(in the child process that ran this program alone: {name})"
    )
    # the program as the worker would have recorded it, then the steps the child began
    entries = [{"drawing": "program"}, {"draw": "program", "program": packed(program)}]
    entries += [e for e in left.get("entries", []) if "step" in e]
    problem = {"status": CRASHED, "detail": detail, "how": "fatal", "entries": entries}
    problem |= {"context": None, "limit": None}
    example = evidence.example_text(entries)
    for entry in known_failure_entries():
        if entry.covers_crash(nodeid, example, detail):
            problem["known"] = entry.xfail_reason()
            break
    return problem


def _main(folder: str, nodeid: str) -> None:
    from conformance.differential.lockstep import execute  # (torch: the child's only)

    program = pickle.loads(base64.b64decode(sys.stdin.read()))
    recorder = watch.install(Path(folder), _NAME, None)  # each step, and a fatal signal
    recorder.start(nodeid)
    run, found = execute(program)
    recorder.finish()
    verdict = {"steps_checked": run.steps_checked, "found": found is not None}
    print(_MARK + json.dumps(verdict), flush=True)


if __name__ == "__main__":
    _main(*sys.argv[1:3])
