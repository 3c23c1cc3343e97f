"""No process the suite starts outlives the run, however the run ends
(conformance/children.py): a run stopped by Ctrl-C, SIGTERM or SIGKILL
while its workers sweep schemas in child processes leaves nothing behind,
and a worker that dies takes its sweep child with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

SWEEP_CHILD = "conformance.schema.isolated"


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _descendants(root: int) -> list[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = stat[1]
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        kids = [p for p, parent in parents.items() if parent == pid]
        found += kids
        frontier += kids
    return found


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def _sweeping_run() -> tuple[subprocess.Popen, list[int]]:
    """A run whose workers are sweeping every operator in child processes,
    and its processes once the first sweep child is there."""
    run = subprocess.Popen(
        [sys.executable, "-m", "conformance", "--invariants", "schema.*", "--schema", "all"]
        + ["--profile", "ci", "--workers", "2", "--no-report", "-q"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sweeping = _wait_for(
        lambda: any(SWEEP_CHILD in _cmdline(p) for p in _descendants(run.pid)), 180
    )
    if not sweeping:
        run.kill()
        pytest.fail("the run started no sweep child in 180 s")
    return run, _descendants(run.pid)


def _end(pids: list[int]) -> None:
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_run_leaves_no_process(how):
    run, processes = _sweeping_run()
    try:
        run.send_signal(how)
        run.wait(timeout=120)
        gone = _wait_for(lambda: not any(_alive(p) for p in processes), 30)
        left = [f"{p}: {_cmdline(p)[:120]}" for p in processes if _alive(p)]
        assert gone, f"after {how.name} these outlived the run: {left}"
    finally:
        _end([run.pid, *processes])


def test_a_worker_that_dies_takes_its_sweep_child_with_it():
    run, processes = _sweeping_run()
    try:
        child = next(p for p in processes if SWEEP_CHILD in _cmdline(p))
        worker = _stat(child)[1]
        os.kill(worker, signal.SIGKILL)
        assert _wait_for(lambda: not _alive(child), 15), "the sweep child outlived its worker"
    finally:
        run.kill()
        run.wait()
        _end(processes + _descendants(run.pid))


def _parent(folder: Path, body: str) -> tuple[subprocess.Popen, tuple[int, ...]]:
    """A Python process that runs `body` (this checkout importable; it prints
    the pids of what it started on one line), then waits: the process, and
    those pids. (The wait is for the script run as __main__ alone: a
    multiprocessing child imports the script too.)"""
    script = folder / "parent.py"
    script.write_text(
        f"import sys, time\nsys.path.insert(0, {str(ROOT)!r})\n{body}"
        "if __name__ == '__main__':\n    time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    return parent, tuple(int(n) for n in parent.stdout.readline().split())


def test_a_child_dies_with_its_parent_even_when_its_pipe_stays_open(tmp_path):
    """A parent killed outright runs no cleanup of its own; the kernel ends
    the child (busy, or waiting on a pipe another process keeps open)."""
    parent, (child, holder) = _parent(
        tmp_path,
        "import os, subprocess\n"
        "from conformance import children\n"
        "read, write = os.pipe()\n"
        "holder = subprocess.Popen(['sleep', '120'], pass_fds=(write,))\n"
        "child = subprocess.Popen(children.command('conformance.schema.isolated', module=True),\n"
        "                         stdin=read, env=dict(os.environ, PYTHONPATH=sys.path[0]))\n"
        "print(child.pid, holder.pid, flush=True)\n",
    )
    try:
        time.sleep(3)  # the child has set its death signal and waits for its job
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert _wait_for(lambda: not _alive(child), 10), "the child outlived its killed parent"
    finally:
        _end([child, holder])


def waits_as_a_program_child() -> None:
    """A differential child's start (isolation._run_program's), then a long wait."""
    from conformance.differential import isolation

    isolation._die_with_the_server()
    time.sleep(120)


def test_a_killed_worker_takes_its_fork_server_and_program_child_with_it(tmp_path):
    """A flagged differential program runs in a child of multiprocessing's
    fork server (conformance/differential/isolation.py): a worker killed
    outright leaves neither behind."""
    worker, (child, server) = _parent(
        tmp_path,
        "from multiprocessing import forkserver\n"
        "from conformance.differential import isolation\n"
        "from tests import test_children\n"
        "if __name__ == '__main__':\n"
        "    child = isolation._context().Process(target=test_children.waits_as_a_program_child)\n"
        "    child.start()\n"
        "    print(child.pid, forkserver._forkserver._forkserver_pid, flush=True)\n",
    )
    try:
        assert _wait_for(lambda: _stat(child) is not None and _stat(child)[1] == server, 10)
        time.sleep(1)  # the child has set its death signal
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        assert _wait_for(lambda: not _alive(server), 15), "the fork server outlived its worker"
        assert _wait_for(lambda: not _alive(child), 15), "the program child outlived its worker"
    finally:
        _end([child, server])
