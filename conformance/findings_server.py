"""The repro server of conformance/findings.py, run as a script by its
`ReproRunner`: it imports torch once, then for each request (a JSON line on
stdin: code, name, timeout) forks a child that runs the repro with
its output in a file, and answers one JSON line: how the child ended
("exit" with its status, "signal" with its number, or "timeout") and what it
printed. Standard library and torch only: it runs on every release's
interpreter, outside the suite."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
import traceback

import torch

_warmed = False


def _warm() -> None:
    """Import and run Dynamo, AOTAutograd and a dispatch mode once (the first
    call under a mode imports Dynamo: seconds), so that each forked child
    starts from a warm process. Nothing that requires grad: a backward in
    this process would start the autograd engine's device threads, and a
    CUDA build's children then refuse every backward ("Unable to handle
    autograd's threading in combination with fork-based multiprocessing")."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    try:
        from torch.utils._python_dispatch import TorchDispatchMode

        class PassThrough(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                return func(*args, **(kwargs or {}))

        with PassThrough():
            torch.ones(2) + 1
    except Exception:  # pragma: no cover - a release without modes
        pass
    try:
        compiled = torch.compile(lambda x: x.sin() * 2, backend="aot_eager")
        compiled(torch.ones(2))
        torch._dynamo.reset()
    except Exception:  # a release without the backend: each repro says so itself
        pass


def _child(code: str, name: str, out_fd: int) -> None:
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    status = 0
    try:
        exec(compile(code, f"<repro {name}>", "exec"), {"__name__": "__main__"})
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _run(request: dict) -> dict:
    _warm()
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            _child(request["code"], request["name"], out.fileno())
        deadline = start + float(request["timeout"])
        while True:
            done, wait_status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.perf_counter() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                answer = {"status": "timeout", "code": -1}
                break
            time.sleep(0.005)
        seconds = time.perf_counter() - start
        out.seek(0)
        output = out.read().decode("utf-8", "replace")
    if done:
        if os.WIFSIGNALED(wait_status):
            number = os.WTERMSIG(wait_status)
            answer = {"status": "signal", "code": number}
            output += f"\nkilled by {signal.Signals(number).name}"
        else:
            answer = {"status": "exit", "code": os.WEXITSTATUS(wait_status)}
    return {**answer, "output": output[-20000:], "seconds": round(seconds, 3)}


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(_run(json.loads(line))) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
