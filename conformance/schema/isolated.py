"""The sweep in a child process that may die: `--schema all` calls internal
operators that trust their arguments, and some crash the process (SIGSEGV,
SIGFPE) or hang on drawn ones. The child reports each operator as it
starts and each verdict as it ends, one JSON line each; when it dies or
stays silent too long, the operator it was running is recorded as not
covered (crashed or hung, with the signal) and a new child goes on with the
rest.

`python -m conformance.schema.isolated` is the child: it reads its job as
one JSON document on stdin.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from conformance import children, watch
from conformance.schema.summary import merge_verdicts

ROOT = Path(__file__).resolve().parents[2]
HANG_SECONDS = 120.0  # one operator's calls, at most
_MARK = "@@schema-sweep "


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"crashed the process ({name}) on drawn arguments"
    return f"the process running it exited with status {code}"


def sweep_isolated(job: dict[str, Any], hang_seconds: float = HANG_SECONDS) -> dict[str, Any]:
    """Run `job` (device, dtypes, attempts, run_seed, known, ops) in child
    processes; returns {"ops": {op: verdict}, "seconds", "driven",
    "dtypes"} as the in-process sweep does."""
    remaining = list(job["ops"])
    verdicts: dict[str, dict[str, Any]] = {}
    dtypes: dict[str, int] = {}
    seconds, driven = 0.0, 0
    while remaining:
        done, running, spent = _one_child({**job, "ops": remaining}, hang_seconds, verdicts, dtypes)
        seconds += spent
        driven += len(done)
        remaining = [op for op in remaining if op not in done]
        if running is not None:
            code, why = running[1], running[2]
            verdicts[running[0]] = {
                "status": "not covered",
                "annotated": _annotated(running[0]),
                "checked": 0,
                "raised": 0,
                "reason": why or _describe_exit(code),
            }
            driven += 1
            remaining = [op for op in remaining if op != running[0]]
    return {"ops": verdicts, "seconds": seconds, "driven": driven, "dtypes": dtypes}


def _annotated(name: str) -> bool:
    from conformance.schema.operators import by_name  # torch: the parent has it already
    from conformance.schema.signature import Signature

    return Signature.of(by_name()[name]._schema).annotated


def _merge(verdicts: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> None:
    for op, verdict in new.items():
        verdicts[op] = verdict if op not in verdicts else merge_verdicts(verdicts[op], verdict)


def _one_child(job, hang_seconds, verdicts, dtypes):
    """One child: the operators it finished, the one it died on (name,
    exit code, reason) or None, and the seconds it spent."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    child = subprocess.Popen(
        children.command("conformance.schema.isolated", module=True),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    child.stdin.write(json.dumps(job))
    child.stdin.close()
    selector = selectors.DefaultSelector()
    selector.register(child.stdout, selectors.EVENT_READ)
    # an operator hangs here, judged by this limit, before the run's
    # watchdog (a limit per operator: watch.next_unit) would end the whole test
    limit = watch.unit_limit()
    if limit:
        hang_seconds = min(hang_seconds, max(0.8 * limit, limit - watch.GRACE))
    try:
        return _read_child(child, selector, hang_seconds, verdicts, dtypes)
    finally:  # however this process leaves (an exception, Ctrl-C), the child goes too
        if child.poll() is None:
            child.kill()
            child.wait()


def _read_child(child, selector, hang_seconds, verdicts, dtypes):
    done: set[str] = set()
    current: str | None = None
    spent = 0.0
    while True:
        ready = selector.select(timeout=hang_seconds)
        if not ready:
            child.kill()
            child.wait()
            why = f"hung: no result in {hang_seconds:.0f} s"
            return done, (current, child.returncode, why) if current else None, spent
        line = child.stdout.readline()
        if not line:
            break
        if not line.startswith(_MARK):
            continue  # an operator's own printing (aten::_print, std::cout)
        message = json.loads(line[len(_MARK) :])
        if "start" in message:
            current = message["start"]
            watch.next_unit()
        else:
            _merge(verdicts, message["ops"])
            for dtype, n in message["dtypes"].items():
                dtypes[dtype] = dtypes.get(dtype, 0) + n
            spent += message["seconds"]
            done.add(message["done"])
            current = None
    code = child.wait()
    if current is not None:
        return done, (current, code, ""), spent
    return done, None, spent


def _child() -> None:
    from conformance.schema.operators import by_name
    from conformance.schema.sweep import Sweep

    job = json.loads(sys.stdin.read())
    table = by_name()
    known = {(k[0], k[1]): why for k, why in job["known"]}
    for name in job["ops"]:
        print(_MARK + json.dumps({"start": name}), flush=True)
        sweep = Sweep(
            job["device"],
            tuple(job["dtypes"]),
            attempts=job["attempts"],
            run_seed=job["run_seed"],
            known=known,
        )
        sweep.check(table[name])
        report = {
            "done": name,
            "ops": {n: r.as_dict() for n, r in sweep.results.items()},
            "seconds": sweep.seconds,
            "dtypes": dict(sweep.dtype_counts),
        }
        print(_MARK + json.dumps(report), flush=True)


if __name__ == "__main__":
    _child()
