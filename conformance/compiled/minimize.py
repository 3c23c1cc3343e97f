"""Smaller programs that fail the same way: fewer later calls, fewer steps,
fewer and smaller inputs, static shapes. A candidate is kept when eager and
the compiled calls still differ under the same invariant. The later calls a
failure needs are kept, in their order (compile.recompile needs at least
one); a later call's difference its inputs show alone, compiled afresh, is
minimized as that fresh program (Divergence.afresh)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from conformance.compiled.compare import Divergence, diverges
from conformance.compiled.program import CompiledProgram, CStep
from conformance.compiled.targets import Target
from strategies.programs import Leaf

MAX_ATTEMPTS = 60  # each is a compilation: a bound on the time a failure costs


def check(program: CompiledProgram, target: Target) -> Divergence | None:
    try:
        return diverges(program, target)
    except Exception:  # noqa: BLE001 - a candidate the harness cannot run is no smaller failure
        return None


def _without(program: CompiledProgram, dropped: CStep) -> CompiledProgram | None:
    """The program less one step and every later step that uses what it made."""
    gone = {dropped.out} if dropped.out is not None else set()
    parts = []
    for part in (program.args, program.body, program.tail):
        kept = []
        for step in part:
            if step is dropped or gone.intersection(step.ins):
                if step.out is not None:
                    gone.add(step.out)
                continue
            kept.append(step)
        parts.append(tuple(kept))
    used = {i for s in (*parts[1], *parts[2]) for i in s.ins}
    if not any(s.out in used for s in parts[0]) and parts[0]:
        return None  # nothing left that reads an input
    tokens = {s.out for s in parts[0]}
    calls = []
    for call in program.calls:  # each call's inputs, less those of the steps gone
        args = tuple(s for s in call.args if s.out not in gone and not gone.intersection(s.ins))
        if tokens <= {s.out for s in args}:
            calls.append(replace(call, args=args))
    return replace(program, args=parts[0], body=parts[1], tail=parts[2], calls=tuple(calls))


def _smaller_leaf(step: CStep) -> list[CStep]:
    """The same leaf with one side cut to 1 or halved, or with plain values."""
    leaf = step.leaf
    out = []
    values = leaf.values
    for d, n in enumerate(values.shape):
        if n <= 1:
            continue
        for keep in sorted({1, n // 2} - {0, n}):
            cut = np.take(values, range(keep), axis=d)
            out.append(
                replace(
                    step,
                    leaf=Leaf(cut, leaf.dtype, leaf.device, leaf.requires_grad, leaf.inference),
                )
            )
    return out


def minimize(
    program: CompiledProgram,
    target: Target,
    first: Divergence,
    same: Callable[[Divergence], bool] | None = None,
    attempts_left: int = MAX_ATTEMPTS,
    keep: Callable[[CompiledProgram], bool] | None = None,
) -> tuple[CompiledProgram, Divergence]:
    if first.afresh:  # no recompile's: the later call's inputs alone fail
        alone = program.alone(first.call)
        fresh = check(alone, target)
        if fresh is not None and fresh.invariant == first.invariant:
            program, first = alone, fresh
    same = same or (lambda d: d.invariant == first.invariant)
    best, found, attempts = program, first, 0

    def fails(candidate: CompiledProgram | None) -> bool:
        nonlocal best, found, attempts
        if candidate is None or attempts >= attempts_left:
            return False
        attempts += 1
        d = check(candidate, target)
        # keep: what else a smaller program must do (a planted backend's: agree on
        # the backend it wraps, so that the repro does not end in that one's bugs)
        if d is not None and same(d) and (keep is None or keep(candidate)):
            best, found = candidate, d
            return True
        return False

    if best.dynamic:
        fails(replace(best, dynamic=False))
    for k in reversed(range(len(best.calls))):  # later calls the failure does not need
        if k < len(best.calls):
            fails(replace(best, calls=best.calls[:k] + best.calls[k + 1 :]))
    changed = True
    while changed and attempts < attempts_left:
        changed = False
        for step in reversed((*best.tail, *best.body, *best.args)):
            if fails(_without(best, step)):
                changed = True
                break
    for k, step in enumerate(best.args):
        if step.op != "leaf" or best.calls:  # a later call's inputs are sized as the first's
            continue
        for smaller in _smaller_leaf(step):
            args = best.args[:k] + (smaller,) + best.args[k + 1 :]
            if fails(replace(best, args=args)):
                break
    return best, found
