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

Once an example of the run has hung, later examples get far less: a build
that hangs once usually hangs on many similar inputs (every test that
detaches a rank-3 tensor, say), and the run should end in the time of one
limit, not of one per test. The later limit is `AFTER_HANG_FACTOR` times the
median of the examples this process has finished, at least
`AFTER_HANG_FLOOR` seconds and at most the limit: examples of the default run
take tens of milliseconds. (The median, not the slowest: a process's first
backward imports sympy, seconds once.) An example is never stopped inside an
import: a half-imported module would break every later example.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import statistics
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_LIMIT = 60.0  # seconds per example: generous, every example of the default run takes < 1 s
GRACE = 5.0
AFTER_HANG_GRACE = 1.0  # once the run has seen a hang, a stuck process goes sooner
AFTER_HANG_FACTOR = 20.0
AFTER_HANG_FLOOR = 0.25
TYPICAL_AFTER = 5  # finished examples before their median sets the pace
PACE_SUFFIX = ".pace"  # a file per process in the run folder: its typical example
HUNG_MARK = "hung"  # a file in the run folder: some example of this run hung
HUNG_EXIT = 86  # the status a worker the watchdog ended exits with


IMPORT_RECHECK = 0.25  # seconds


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
        self._started = 0.0  # monotonic time the current example started
        self.durations: deque[float] = deque(maxlen=256)  # of the last finished examples
        self._by_test: dict[str, deque[float]] = {}  # the same, per test
        self._nodeid = ""
        self._shared_pace = False  # wrote this process's typical example to the folder
        self._deadline: float | None = None  # monotonic time the last stage acts at
        self._current_limit = 0.0  # seconds the running example may take
        self._paced = True  # the running example's limit follows the run's pace
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
            self._repace()
            deadline = self._deadline
            if deadline is not None and time.monotonic() > deadline:
                (self.folder / HUNG_MARK).touch()
                self._note_paced_limit()
                os.write(self._hang, f"Timeout: example {self._count} hung\n".encode())
                faulthandler.dump_traceback(file=self._hang, all_threads=True)
                os._exit(HUNG_EXIT)

    def _repace(self) -> None:
        """An example that started before the run's first hang keeps the
        generous limit; when another process's hang is seen, it gets the
        paced one too (both processes likely hang on the same kind of
        input, and the second should not add a whole limit to the run)."""
        with self._lock:
            started = self._started
            if not (self._armed and self._paced and started and self._current_limit == self.limit):
                return
            running = time.monotonic() - started
            if running < AFTER_HANG_FLOOR or not (self.folder / HUNG_MARK).exists():
                return
            paced = self._limit_now(self._nodeid)
            if not paced or paced >= self._current_limit:
                return
            self._current_limit = paced
            left = max(paced - running, 0.001)
            self._deadline = time.monotonic() + left + AFTER_HANG_GRACE
            if self._main:
                signal.setitimer(signal.ITIMER_REAL, left)

    def _alarm(self, signum: int, frame: Any) -> None:
        if self._finishing or not (self._started and self._armed):
            return  # the example finished as the alarm went off
        now = time.monotonic()
        early = self._started + self._current_limit - now
        if early > 0.001:  # meant for an example that has finished since
            signal.setitimer(signal.ITIMER_REAL, early)
            return
        if _importing(frame) and self.limit and now < self._started + self.limit:
            # Never stop an example inside an import (torch imports sympy on
            # the first backward of a process): a half-imported module breaks
            # every later example of the process. Look again shortly, up to
            # the full limit.
            self._deadline = now + IMPORT_RECHECK + AFTER_HANG_GRACE
            signal.setitimer(signal.ITIMER_REAL, IMPORT_RECHECK)
            return
        self._armed = False
        self._started = 0.0  # a hung example does not set the pace of later ones
        # stopped here; the watchdog still ends the process if unwinding sticks
        self._deadline = now + GRACE
        (self.folder / HUNG_MARK).touch()
        self._note_paced_limit()
        raise ExampleHung(self._current_limit)

    def _note_paced_limit(self) -> None:
        """Record what a later example of this test would be allowed (the
        run has now seen a hang): a replay of this one is judged by it, not
        by the generous limit it hung under."""
        paced = self._limit_now(self._nodeid)
        if paced:
            self.note(paced_limit=paced)

    def _limit_now(self, nodeid: str) -> float | None:
        if not self.limit:
            return None
        if not (self.folder / HUNG_MARK).exists():
            return self.limit
        typical = self._typical(nodeid)
        if typical is None:
            return self.limit
        return min(self.limit, max(AFTER_HANG_FLOOR, AFTER_HANG_FACTOR * typical))

    def _typical(self, nodeid: str) -> float | None:
        """Seconds a clean example of `nodeid` takes: the median of the
        test's own examples in this process (a compiled test's are slower
        than an eager one's), else of this process's, else of the other
        processes' of the run (a worker that replaced a dead one knows
        none); None when nothing is known yet."""
        mine = statistics.median(self.durations) if len(self.durations) >= TYPICAL_AFTER else None
        if mine is not None and not self._shared_pace:
            (self.folder / f"{self.files.example.stem}{PACE_SUFFIX}").write_text(f"{mine}")
            self._shared_pace = True
        own = self._by_test.get(nodeid, ())
        if len(own) >= TYPICAL_AFTER:
            return statistics.median(own)
        if mine is not None:
            return mine
        paces = []
        for path in self.folder.glob(f"*{PACE_SUFFIX}"):
            try:
                paces.append(float(path.read_text()))
            except (OSError, ValueError):
                continue
        return max(paces) if paces else None

    def start(self, nodeid: str, context: dict[str, Any] | None = None, paced: bool = True) -> None:
        """A new example of `nodeid` starts: forget the last one, arm the
        watchdog. `context`: what a replay of the example needs."""
        self._count += 1
        head = {"nodeid": nodeid, "example": self._count, "pid": os.getpid()}
        head |= {"context": context} if context else {}
        self._nodeid = nodeid
        limit = self._limit_now(nodeid) if paced else self.limit
        if limit:
            head["limit"] = limit
        os.ftruncate(self._example, 0)
        os.write(self._example, (json.dumps(head) + "\n").encode())
        with self._lock:  # the watchdog thread reads these together
            self._paced = paced
            self._current_limit = limit or 0.0
            self._started = time.monotonic()
            if limit:
                grace = GRACE if limit == self.limit else AFTER_HANG_GRACE
                self._deadline = self._started + limit + grace
                if self._main:
                    signal.setitimer(signal.ITIMER_REAL, limit)
                self._armed = True

    def restart(self) -> None:
        """The running example moved on to the next unit of its work: its
        limit starts again from now."""
        with self._lock:
            if not (self._armed and self._started and self._current_limit):
                return
            self._started = time.monotonic()
            grace = GRACE if self._current_limit == self.limit else AFTER_HANG_GRACE
            self._deadline = self._started + self._current_limit + grace
            if self._main:
                signal.setitimer(signal.ITIMER_REAL, self._current_limit)

    def unit_limit(self) -> float | None:
        """Seconds the running example's current unit may take, if limited."""
        return self._current_limit if self._armed and self._current_limit else None

    def note(self, **entry: Any) -> None:
        """Add to what the current example is known by (an input, a program)."""
        os.write(self._example, (json.dumps(entry, default=repr) + "\n").encode())

    def finish(self) -> None:
        self._finishing = True  # an alarm now would cut this method short
        with self._lock:
            if self._started:
                took = time.monotonic() - self._started
                self._started = 0.0
                self.durations.append(took)
                self._by_test.setdefault(self._nodeid, deque(maxlen=64)).append(took)
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
def example(
    nodeid: str, context: dict[str, Any] | None = None, paced: bool = True
) -> Iterator[None]:
    """Run one example under the recorder and the watchdog. `paced=False`:
    a whole test run as one example (no Hypothesis), which keeps the full
    limit after a hang: its length has nothing to do with an example's."""
    if not _RECORDER:
        yield
        return
    recorder = _RECORDER[0]
    recorder.start(nodeid, context, paced)
    try:
        yield
    finally:
        recorder.finish()


def read_evidence(files: Files) -> dict[str, Any]:
    """What a dead process left: the example it ran and how it ended.

    Returns {"nodeid", "example" (its number), "limit" (its time limit),
    "paced_limit" (after a hang: what a later example of its test gets),
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
    paced = [e["paced_limit"] for e in entries if "paced_limit" in e]
    entries = [e for e in entries if "paced_limit" not in e]
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
    if paced:
        head["paced_limit"] = paced[-1]
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
