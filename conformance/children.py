"""No process the suite starts outlives the process that started it.

However a run ends (it exits, raises, is interrupted, is sent SIGTERM, or
a pytest-xdist worker dies), nothing it started may go on running: a
schema sweep's child that keeps calling kernels after the run has ended
holds CPU and memory nobody is accounting for.

- Children the suite starts (the isolated schema sweep, repro scripts,
  replays of crashed examples) are started through `command()`, which asks
  the kernel to end them when their parent dies (Linux's
  `PR_SET_PDEATHSIG`, set in the child before it runs anything), and exits
  at once if the parent died before that.
- An xdist worker is started by execnet, not by us: `watch_parent()` gives
  it a thread that ends it when the controller is gone (its parent changes).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

# Runs in the child, before its real work: the death signal, then the
# script (-f PATH) or module (-m NAME) with its own arguments. The script sees
# itself as __main__ with sys.argv as usual, and imports nothing of ours.
_LAUNCH = """\
import ctypes, os, runpy, signal, sys
try:
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass
if os.getppid() != int(sys.argv[1]):
    os._exit(1)  # the parent died before the line above
kind, target, *rest = sys.argv[2:]
sys.argv = [target, *rest]
if kind == "-m":
    runpy.run_module(target, run_name="__main__", alter_sys=True)
else:
    runpy.run_path(target, run_name="__main__")
"""


def command(target: str, *args: str, module: bool = False) -> list[str]:
    """The command line that runs a script (or `module`) with `args` in a
    child that dies with this process."""
    kind = "-m" if module else "-f"
    return [sys.executable, "-c", _LAUNCH, str(os.getpid()), kind, target, *args]


def run_script(
    script: str,
    timeout: float,
    folder: str | Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str] | None:
    """Run `script` (a repro), written as repro.py in `folder` (without one, a
    fresh temporary folder), in a child that dies with this process, in `env`
    (without one, this process's), its output captured as text: the process
    that finished, or None if it did not finish in `timeout` seconds."""
    if folder is None:
        with tempfile.TemporaryDirectory(prefix="conformance-repro-") as fresh:
            return run_script(script, timeout, fresh, env)
    path = Path(folder) / "repro.py"
    path.write_text(script, encoding="utf-8")
    try:
        return subprocess.run(
            command(str(path)),
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None


PARENT_POLL = 1.0  # seconds


def watch_parent() -> None:
    """End this process (an xdist worker) when its parent is gone: it is
    then adopted by another, and its parent pid changes."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            threading.Event().wait(PARENT_POLL)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="conformance-parent-watch", daemon=True).start()
