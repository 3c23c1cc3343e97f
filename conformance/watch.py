"""A flight recorder and a watchdog for every example a test runs.

Before each Hypothesis example (and each plain test) runs, the process
writes which test it is, then each input as it is drawn, to a file of its
own in the run's folder. A crash (segfault, abort, the kernel's
out-of-memory killer) leaves that file behind: the controller reads it and
reports the test with the example that crashed it. The writes are plain
`write` calls on an open descriptor: the kernel keeps them whatever happens
to the process afterwards.

Hangs. Hypothesis's `deadline` only judges an example after it returns, and
pytest-timeout limits a whole test (ours are long Hypothesis loops) and, to
stop a hang, either fails the whole test or kills the process, which with
`--workers 0` ends the run. So the suite keeps its own per-example watchdog,
in two stages:

1. at the limit, SIGALRM raises `ExampleHung` in the test's thread: the
   example ends, the test is reported hung with its input, and the process
   goes on (this works whenever the hang returns to Python or waits in a
   system call, as a Python loop or a sleep does);
2. if the process is still stuck `GRACE` seconds later (a kernel that
   never returns to Python), a watchdog thread writes every thread's
   traceback to the hang file (with faulthandler) and ends the process.
   xdist replaces the worker, and the controller reports the test hung from
   the files left behind. (With `--workers 0` that ends the run.) The
   thread needs the GIL, which torch's kernels release; only C code that
   spins holding it escapes. Arming faulthandler's own timer per example
   would need no GIL, but it starts and joins a thread each time: it made
   the differential twice as slow.

Every example gets the limit the user set (`--timeout`), whatever happened
before it: an example is reported hung only after it really ran that long.
(Earlier versions cut later examples to a multiple of the typical one once
a hang had been seen, so that a build hanging everywhere ended sooner; the
cut reported examples that were merely slow, on a machine busy with the
first hang, as hung: false alarms.) An example is never stopped inside an
import: a half-imported module would break every later example.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_LIMIT = 60.0  # seconds per example: generous, every example of the default run takes < 1 s
# A backend that generates code (inductor: C++ kernels, each a compiler run)
# spends most of an example compiling: its first program took 63.7 s on a
# 2-core machine, and a new one waited past 60 s for its kernels at a load of
# 10 (docs/speed.md). Unless --timeout says otherwise, a run with such a
# target gives every example this long.
CODEGEN_LIMIT = 300.0
GRACE = 5.0  # seconds past the limit before the watchdog ends a stuck process
HUNG_EXIT = 86  # the status a worker the watchdog ended exits with


IMPORT_RECHECK = 0.25  # seconds
IMPORT_ALLOWANCE = 30.0  # seconds past the limit an import may still finish in


def _importing(frame: Any) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


class ExampleHung(BaseException):
    """An example ran past the limit. A BaseException, so that neither
    Hypothesis (which would replay it to shrink) nor the suite's
    `except Exception` handlers catch it."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        super().__init__(f"the example ran longer than the {limit:g} s limit (--timeout)")


class ExampleCrashed(BaseException):
    """torch ran out of memory: the process survived, the example did not."""


class CrashedInChild(BaseException):
    """A child process running part of an example (a differential program
    that reaches a known crash pattern) died: `problem` is the report's
    account of it (status, detail, the entries its example is shown by, and
    `known`: the known-crash entry's reason, where one covers it)."""

    def __init__(self, problem: dict[str, Any]) -> None:
        self.problem = problem
        super().__init__(problem.get("detail", "a child process crashed"))


# torch's words when an allocation fails (CPU and CUDA allocators)
_OUT_OF_MEMORY = ("can't allocate memory", "out of memory", "CUDA out of memory")


def out_of_memory(error: BaseException) -> bool:
    if isinstance(error, MemoryError):
        return True
    text = str(error)
    return isinstance(error, RuntimeError) and any(s in text for s in _OUT_OF_MEMORY)


@dataclass
class Files:
    """What one process leaves behind in the run folder."""

    example: Path  # JSON lines: the test and example, then each input drawn
    fatal: Path  # faulthandler's report of a fatal signal (segfault, abort)
    hang: Path  # faulthandler's tracebacks when the watchdog ended the process

    @classmethod
    def of(cls, folder: Path, name: str) -> Files:
        return cls(folder / f"{name}.example", folder / f"{name}.fatal", folder / f"{name}.hang")


class Recorder:
    """One process's recorder and watchdog."""

    def __init__(self, folder: Path, name: str, limit: float | None) -> None:
        self.folder = folder
        self.files = Files.of(folder, name)
        self.limit = limit
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        # O_APPEND: after a truncation, every write lands at the new end
        self._example = os.open(self.files.example, flags | os.O_APPEND, 0o644)
        self._fatal = os.open(self.files.fatal, flags, 0o644)
        self._hang = os.open(self.files.hang, flags, 0o644)
        self._count = 0
        self._armed = False
        self._started = 0.0  # monotonic time the current example (or unit) started
        self._deadline: float | None = None  # monotonic time the watchdog acts at
        self._finishing = False
        self._lock = threading.Lock()
        self._main = threading.current_thread() is threading.main_thread()
        faulthandler.enable(file=self._fatal, all_threads=True)
        self._stop = threading.Event()
        if limit:
            if self._main:
                signal.signal(signal.SIGALRM, self._alarm)
            threading.Thread(target=self._watch, name="conformance-watchdog", daemon=True).start()

    def _watch(self) -> None:
        while not self._stop.wait(0.25):
            deadline = self._deadline
            if deadline is not None and time.monotonic() > deadline:
                os.write(self._hang, f"Timeout: example {self._count} hung\n".encode())
                faulthandler.dump_traceback(file=self._hang, all_threads=True)
                os._exit(HUNG_EXIT)

    def _alarm(self, signum: int, frame: Any) -> None:
        if self._finishing or not (self._started and self._armed and self.limit):
            return  # the example finished as the alarm went off
        now = time.monotonic()
        early = self._started + self.limit - now
        if early > 0.001:  # meant for an example (or unit) that has finished since
            signal.setitimer(signal.ITIMER_REAL, early)
            return
        if _importing(frame) and now < self._started + self.limit + IMPORT_ALLOWANCE:
            # Never stop an example inside an import (torch imports sympy on
            # the first backward of a process): a half-imported module breaks
            # every later example of the process. Look again shortly.
            self._deadline = now + IMPORT_RECHECK + GRACE
            signal.setitimer(signal.ITIMER_REAL, IMPORT_RECHECK)
            return
        self._armed = False
        self._started = 0.0
        # stopped here; the watchdog still ends the process if unwinding sticks
        self._deadline = now + GRACE
        raise ExampleHung(self.limit)

    def start(self, nodeid: str, context: dict[str, Any] | None = None) -> None:
        """A new example of `nodeid` starts: forget the last one, arm the
        watchdog. `context`: what a replay of the example needs."""
        self._count += 1
        head = {"nodeid": nodeid, "example": self._count, "pid": os.getpid()}
        head |= {"context": context} if context else {}
        if self.limit:
            head["limit"] = self.limit
        os.ftruncate(self._example, 0)
        os.write(self._example, (json.dumps(head) + "\n").encode())
        self._arm()

    def _arm(self) -> None:
        with self._lock:  # the watchdog thread reads these together
            self._started = time.monotonic()
            if self.limit:
                self._deadline = self._started + self.limit + GRACE
                if self._main:
                    signal.setitimer(signal.ITIMER_REAL, self.limit)
                self._armed = True

    def restart(self) -> None:
        """The running example moved on to the next unit of its work: its
        limit starts again from now."""
        if self._armed and self._started:
            self._arm()

    def unit_limit(self) -> float | None:
        """Seconds the running example's current unit may take, if limited."""
        return self.limit if self._armed and self.limit else None

    def note(self, **entry: Any) -> None:
        """Add to what the current example is known by (an input, a program)."""
        os.write(self._example, (json.dumps(entry, default=repr) + "\n").encode())

    def finish(self) -> None:
        self._finishing = True  # an alarm now would cut this method short
        with self._lock:
            self._started = 0.0
            if self._armed and self._main:
                signal.setitimer(signal.ITIMER_REAL, 0)
            self._deadline = None
            self._armed = False
        self._finishing = False
        self.note(finished=True)  # kept for the report; a crash now is not this example's

    def close(self) -> None:
        self._stop.set()
        self.finish()
        faulthandler.disable()
        for fd in (self._example, self._fatal, self._hang):
            os.close(fd)


_RECORDER: list[Recorder] = []


def install(folder: Path, name: str, limit: float | None) -> Recorder:
    uninstall()
    recorder = Recorder(folder, name, limit)
    _RECORDER.append(recorder)
    return recorder


def uninstall() -> None:
    while _RECORDER:
        _RECORDER.pop().close()


def next_unit() -> None:
    """A plain test made of many units of work (the schema sweep, one
    operator each) starts the next one: the limit is per unit, as it is per
    Hypothesis example."""
    if _RECORDER:
        _RECORDER[0].restart()


def unit_limit() -> float | None:
    """The seconds the running unit may take (None outside a run or unlimited):
    a child process given its own hang limit keeps it below this one."""
    return _RECORDER[0].unit_limit() if _RECORDER else None


def note(**entry: Any) -> None:
    """Record something about the running example (no-op outside a run)."""
    if _RECORDER:
        _RECORDER[0].note(**entry)


@contextmanager
def example(nodeid: str, context: dict[str, Any] | None = None) -> Iterator[None]:
    """Run one example (or a whole plain test) under the recorder and the watchdog."""
    if not _RECORDER:
        yield
        return
    recorder = _RECORDER[0]
    recorder.start(nodeid, context)
    try:
        yield
    finally:
        recorder.finish()


def read_evidence(files: Files) -> dict[str, Any]:
    """What a dead process left: the example it ran and how it ended.

    Returns {"nodeid", "example" (its number), "limit" (its time limit),
    "entries" (what `note` recorded), "between_examples", "how":
    "fatal"|"hang"|"killed", "detail"}; {} when it never started an example."""
    lines = _read(files.example).splitlines()
    if not lines:
        return {}
    try:
        head = json.loads(lines[0])
    except json.JSONDecodeError:
        return {}
    entries = []
    for line in lines[1:]:
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a line cut short by the crash
    between = bool(entries) and entries[-1].get("finished", False)
    entries = [e for e in entries if "finished" not in e]
    hang, fatal = _read(files.hang), _read(files.fatal)
    if hang.strip():
        how, detail = "hang", hang
    elif fatal.strip():
        how, detail = "fatal", fatal
    else:
        how = "killed"
        detail = (
            "the process ended without a Python traceback: killed by a signal it cannot "
            "catch (SIGKILL, for example from the kernel's out-of-memory killer) or exited"
        )
    return {
        **head,
        "entries": entries,
        "between_examples": between,
        "how": how,
        "detail": detail.strip(),
    }


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def current_evidence() -> dict[str, Any]:
    """What this process recorded of the example that ran last."""
    return read_evidence(_RECORDER[0].files) if _RECORDER else {}
