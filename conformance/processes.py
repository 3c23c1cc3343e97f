"""The run's processes: the folder where each leaves its flight recorder's
files, the watchdog each test process runs under, stopping on SIGTERM or
SIGHUP, xdist's replacing of crashed workers, and ending any worker left."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from conformance import options, watch
from conformance.run_state import RUN_FOLDER


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a CI system cancelling, a closed terminal): the run
    stops as for Ctrl-C, and the report is written, marked incomplete."""


def terminate_on_signals() -> None:
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


def configure_run_folder(config: pytest.Config) -> None:
    """Where every process of the run leaves its flight recorder's files."""
    given = getattr(config, "workerinput", {}).get("conformance_run_folder")
    folder = Path(given) if given else Path(tempfile.mkdtemp(prefix="conformance-run-"))
    config.stash[RUN_FOLDER] = folder


def _process_name(config: pytest.Config) -> str:
    return getattr(config, "workerinput", {}).get("workerid", "main")


def start_watch(session: pytest.Session) -> None:
    """A process that runs tests records its pid and installs the watchdog."""
    config = session.config
    if _is_controller_of_workers(config):
        return  # the controller runs no test
    limit = options.example_limit(config) or None
    name = _process_name(config)
    folder = config.stash[RUN_FOLDER]
    (folder / f"{name}.pid").write_text(str(os.getpid()))
    watch.install(folder, name, limit)


def _is_controller_of_workers(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", 0))


def end_run(config: pytest.Config) -> None:
    watch.uninstall()
    if hasattr(config, "workerinput") or RUN_FOLDER not in config.stash:
        return
    folder = config.stash[RUN_FOLDER]
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


def allow_worker_restarts(node, ids: list[str]) -> None:
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
