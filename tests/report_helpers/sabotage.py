"""Kills or stalls one chosen test of a suite run, for the report tests.

Loaded with `-p tests.report_helpers.sabotage` (the suite runs from the
project root, so `tests` is importable, in xdist workers too). It does
nothing unless one of these environment variables names a test:

- REPORT_HELPER_CRASH: the process running that test exits at once, as if
  torch had crashed it (under xdist, the worker dies mid-test).
- REPORT_HELPER_STALL: that test writes the file REPORT_HELPER_MARK names and
  then waits, so the caller can interrupt the run at a known point.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

CRASH = "REPORT_HELPER_CRASH"
STALL = "REPORT_HELPER_STALL"
MARK = "REPORT_HELPER_MARK"
STALL_SECONDS = 120


def _chosen(variable: str, item: pytest.Item) -> bool:
    wanted = os.environ.get(variable)
    return bool(wanted) and wanted in item.nodeid


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    if _chosen(CRASH, item):
        os._exit(1)
    if _chosen(STALL, item):
        Path(os.environ[MARK]).write_text(item.nodeid, encoding="utf-8")
        time.sleep(STALL_SECONDS)


def default_signals() -> None:
    """For a child process (Popen's preexec_fn): the stopping signals back
    to their defaults. A shell runs a background job with SIGINT ignored and
    nohup ignores SIGHUP; the child inherits that, and the suite rightly
    leaves an ignored signal ignored, so the tests that send these signals
    would wait for nothing."""
    import signal

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


def interrupt_stalled_run(
    suite_args: list[str], stalled: str, mark: Path, send, root: Path, wait: float = 60
) -> tuple[int, str, int]:
    """Run `python -m conformance *suite_args` in a session of its own with
    `stalled` (a test ID) stalling; once that test has started, call
    `send(pid)` to signal the run. Returns (exit status, output, pid)."""
    import signal
    import subprocess
    import sys

    unset = ("HYPOTHESIS_PROFILE", "CONFORMANCE_PLANT")  # as the tests' run_suite does
    environment = {k: v for k, v in os.environ.items() if k not in unset}
    environment.update({STALL: stalled, MARK: str(mark)})
    # Its own session and process group, so that a signal sent to the group
    # reaches the workers too, as a Ctrl-C in a terminal does.
    process = subprocess.Popen(
        [sys.executable, "-m", "conformance", *suite_args],
        cwd=root,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=default_signals,
    )
    try:
        deadline = time.monotonic() + 120
        while not mark.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mark.exists(), "the stalled test never started"
        send(process.pid)
        stdout, _ = process.communicate(timeout=wait)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    return process.returncode, stdout, process.pid
