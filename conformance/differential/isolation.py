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

The children are forked from multiprocessing's fork server, which imports
torch and the lockstep check once per worker, when the first flagged program
comes: each later child starts in milliseconds, where a fresh Python with
torch took about two seconds a program. The server starts from a clean
interpreter (not a fork of the worker, with its threads and its flight
recorder), ends when the worker does, and each child dies with it.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import multiprocessing
import os
import pickle
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing import forkserver
from multiprocessing.context import BaseContext
from pathlib import Path

from conformance import evidence, watch
from conformance.known_search import keep_crash
from conformance.outcomes import CRASHED
from conformance.run_state import known_failure_entries
from strategies.programs import Program

ROOT = Path(__file__).resolve().parents[2]
HANG_SECONDS = 120.0  # a flagged program, a torch import included, at most
_NAME = "child"  # the flight recorder's files in the child's folder
_VERDICT = "verdict.json"  # the child's verdict, in its folder, when it survives
_LOCKSTEP = "conformance.differential.lockstep"  # torch and the check: the server's imports


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
        code, hang = _child(program, nodeid, Path(folder))
        said_path = Path(folder) / _VERDICT
        said = json.loads(said_path.read_text()) if said_path.exists() else None
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


def _child(program: Program, nodeid: str, folder: Path) -> tuple[int, float | None]:
    """The child's exit status (minus the signal that ended it) and, if it
    hung, the limit it ran past."""
    limit = HANG_SECONDS
    unit = watch.unit_limit()
    if unit:  # below the run's own watchdog, which would end the whole worker
        limit = min(limit, max(0.8 * unit, unit - watch.GRACE))
    child = _context().Process(
        target=_run_program, args=(packed(program), str(folder), nodeid), daemon=True
    )
    child.start()
    child.join(limit)
    if child.exitcode is None:
        child.kill()
        child.join()
        return -1, limit
    return child.exitcode, None


def _context() -> BaseContext:
    """The fork server's context, its server started with torch imported (a
    spawning one where the platform has no fork server)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([_LOCKSTEP, __name__])
    with _importable_from_here():
        forkserver.ensure_running()  # no-op once started
    return context


@contextlib.contextmanager
def _importable_from_here() -> Iterator[None]:
    """The fork server imports its preloads before it knows this process's
    sys.path (Python 3.11 passes it none): it gets this checkout on its
    PYTHONPATH while it starts."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), before]))
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


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


def _run_program(program: str, folder: str, nodeid: str) -> None:
    """The child: run the program in lockstep, each step in the flight
    recorder's files in `folder`, and leave the verdict there."""
    _die_with_the_server()
    with open(os.path.join(folder, "output"), "wb") as output:
        os.dup2(output.fileno(), 1)  # what torch or a traceback prints stays in the folder
        os.dup2(output.fileno(), 2)
    from conformance.differential.lockstep import execute  # (torch: preloaded by the server)

    recorder = watch.install(Path(folder), _NAME, None)  # each step, and a fatal signal
    recorder.start(nodeid)
    run, found = execute(pickle.loads(base64.b64decode(program)))
    recorder.finish()
    verdict = {"steps_checked": run.steps_checked, "found": found is not None}
    (Path(folder) / _VERDICT).write_text(json.dumps(verdict))


def _die_with_the_server() -> None:
    """Linux ends this child when the fork server (its parent) ends, as it
    does when the worker does; elsewhere the worker's kill on a hang does.
    The server ends once no process holds its "alive" pipe: each child is
    handed one end of it (to start children of its own), which it lets go."""
    alive = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_alive_fd", None)
    if alive is not None:
        with contextlib.suppress(OSError):
            os.close(alive)
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:
        os._exit(1)  # the server ended before the line above
