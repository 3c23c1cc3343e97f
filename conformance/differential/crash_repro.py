"""A chain that crashed or hung torch, as a standalone script, made smaller
by running shorter chains in fresh processes.

A crash leaves no discrepancy to assert: the script runs the chain's steps
on torch, the ones the model says torch refuses inside `try`, and prints
"ok" at the end. On the build that crashed, the process dies (or hangs) at
the step that did it; on a sound build it prints "ok".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from conformance import children
from conformance.differential.functions import prelude
from conformance.differential.listing import step_lines, trace
from conformance.differential.minimize import _pool_indices, without
from strategies.programs import Program


def crash_script(program: Program, what: str) -> str:
    """torch code that runs `program`; `what` says how it failed (docstring)."""
    lines = [
        f'"""Repro: {what}',
        "",
        "Made by torch-conformance from the chain of operations that was running. It",
        "imports only torch and checks nothing: on a sound build it prints 'ok'; on",
        "the build that failed, the process dies or hangs before it does.",
        '"""',
        "import torch",
        "",
        # the custom Functions and hooked ops the chain calls, defined as it ran them
        *prelude(step.op for step in program.steps),
    ]
    for step, (name, names, error) in zip(program.steps, trace(program), strict=True):
        body = step_lines(step, name, names, None)
        if error is not None:
            body = ["try:", *("    " + line for line in body), "except RuntimeError:"]
            body.append(f"    pass  # torch refuses this step, as it must: {error.name}")
        lines += body
    lines.append("print('ok: the chain ran to its end')")
    return "\n".join(lines) + "\n"


def up_to(program: Program, step: int | None) -> Program:
    """The steps that ran: those after the one that crashed never did."""
    if step is None or step >= len(program.steps):
        return program
    return replace(program, steps=list(program.steps[: step + 1]))


def run_script(script: str, timeout: float) -> tuple[str, str]:
    """Run a script in a fresh interpreter: ("crashed", signal or status),
    ("hung", ""), or ("ok", "")."""
    done = children.run_script(script, timeout)
    if done is None:
        return "hung", ""
    if done.returncode < 0:
        return "crashed", f"signal {-done.returncode}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        return ("crashed", last) if _out_of_memory(last) else ("error", last)
    return "ok", ""


def _out_of_memory(text: str) -> bool:
    return "MemoryError" in text or "allocate memory" in text or "out of memory" in text


def minimize_crash(
    program: Program,
    what: str,
    fails: Callable[[str], bool],
    deadline: float,
) -> tuple[Program, int]:
    """The shortest chain found before `deadline` (time.monotonic) whose
    script still `fails`: chunks of steps deleted, each with every step that
    uses what it made, the last step kept. Returns it and the scripts run."""
    tried = 0
    chunk = max(1, (len(program.steps) - 1) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        changed = False
        start = len(program.steps) - 1 - chunk
        while start >= 0 and time.monotonic() < deadline:
            removed = set(range(start, start + chunk))
            candidate = without(program, removed)
            if _keeps_last(program, removed):
                tried += 1
                if fails(crash_script(candidate, what)):
                    program, changed = candidate, True
                    start = min(start, len(program.steps) - 1) - chunk
                    continue
            start -= chunk
        if not changed:
            chunk //= 2
    return program, tried


def _keeps_last(program: Program, removed: set[int]) -> bool:
    """Whether deleting `removed` (and what uses them) keeps the last step."""
    made, gone = _pool_indices(program), set()
    for number, step in enumerate(program.steps):
        if number in removed or any(t in gone for t in step.tensors):
            if number == len(program.steps) - 1:
                return False
            if made[number] is not None:
                gone.add(made[number])
    return True
