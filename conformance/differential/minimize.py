"""Shrink a failing program to a minimal chain, by deleting steps.

Hypothesis can shrink programs too, but only through the choices that drew
them, and every attempt regenerates the program against the oracle. Deleting
steps directly is cheaper by orders of magnitude, so failures are minimized
here, the same way every time: a step that made a tensor takes every later
step that uses it along when it goes, and a deletion is kept only if the
shorter program still breaks the same rule. Leaf values are then made as
plain as the failure allows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from conformance.differential.lockstep import execute
from conformance.differential.run import Discrepancy, Run
from strategies.programs import Program, Step

# A failing build may fail in many chains of the differential at once; each
# minimization is bounded so that such a run stays within twice a clean one.
MINIMIZE_SECONDS = 10.0


def _pool_indices(program: Program) -> list[int | None]:
    """For each step, the pool index of the tensor it made (None if none),
    as the oracle's run of the program assigns them."""
    from conformance.differential.listing import trace

    out, count = [], 0
    for name, _, _ in trace(program):
        out.append(count if name is not None else None)
        count += name is not None
    return out


def without(program: Program, removed: set[int]) -> Program:
    """The program without the steps in `removed` and every step that uses a
    tensor one of them made, with later pool indices renumbered."""
    made = _pool_indices(program)
    gone_tensors: set[int] = set()
    keep: list[Step] = []
    renumber: dict[int, int] = {}
    for number, step in enumerate(program.steps):
        uses_gone = any(t in gone_tensors for t in step.tensors)
        if number in removed or uses_gone:
            if made[number] is not None:
                gone_tensors.add(made[number])
            continue
        if made[number] is not None:
            renumber[made[number]] = len(renumber)
        keep.append(replace(step, tensors=tuple(renumber[t] for t in step.tensors)))
    return replace(program, steps=keep)


def well_formed(program: Program) -> bool:
    """Whether every step uses tensors that earlier steps made (`without`
    renumbers by the uncut chain's tensors, which a cut can change)."""
    from conformance.differential.listing import MalformedProgram, trace

    try:
        trace(program)
    except MalformedProgram:
        return False
    return True


def _plain_values(step: Step) -> Step:
    # only the values: a leaf made under inference_mode stays one
    return replace(step, leaf=replace(step.leaf, values=np.ones_like(step.leaf.values)))


def same_failure(first: Discrepancy) -> Callable[[Run, Discrepancy], bool]:
    """Fails the way `first` did: the same kind of difference, and for a raise
    the same expected and actual error classes."""

    def same(run: Run, found: Discrepancy) -> bool:
        if found.kind != first.kind:
            return False
        return found.kind != "raise" or (found.expected, found.actual) == (
            first.expected,
            first.actual,
        )

    return same


def minimize(
    program: Program,
    first: tuple[Run, Discrepancy],
    same_failure: Callable[[Run, Discrepancy], bool],
    budget: int = 400,
    seconds: float = MINIMIZE_SECONDS,
) -> tuple[Program, Run, Discrepancy, bool]:
    """The smallest program found that still fails the way `same_failure`
    says, with its run and discrepancy, and whether the failure came back
    when the program was run again. When it did not (torch's behaviour here
    depends on state outside the program), the program is returned whole.
    At most `budget` tries and about `seconds`: the program found by then is
    returned, still failing the same way, if not the shortest."""
    run, found = execute(program, exhaustive=True)
    if found is None or not same_failure(run, found):
        return program, *first, False
    tries = 0
    stop_at = time.monotonic() + seconds

    def fails(candidate: Program):
        nonlocal tries
        tries += 1
        if time.monotonic() > stop_at:
            tries = max(tries, budget)  # out of time: this and later tries are not made
            return None
        if not candidate.steps or not well_formed(candidate):
            return None
        r, d = execute(candidate, exhaustive=True)
        return (r, d) if d is not None and same_failure(r, d) else None

    # the steps after the failing one never ran
    shorter = replace(program, steps=program.steps[: found.step + 1])
    if (result := fails(shorter)) is not None:
        program, (run, found) = shorter, result
    chunk = max(1, len(program.steps) // 2)
    while chunk >= 1 and tries < budget:
        changed = False
        start = len(program.steps) - chunk
        while start >= 0 and tries < budget:
            candidate = without(program, set(range(start, start + chunk)))
            result = fails(candidate) if len(candidate.steps) < len(program.steps) else None
            if result is not None:
                program, (run, found) = candidate, result
                changed = True
                start = min(start, len(program.steps)) - chunk
            else:
                start -= chunk
        if not changed:
            chunk //= 2
    for number, step in enumerate(program.steps):
        if tries >= budget:
            break
        if step.op == "leaf" and not np.all(step.leaf.values == 1):
            steps = list(program.steps)
            steps[number] = _plain_values(step)
            candidate = replace(program, steps=steps)
            if (result := fails(candidate)) is not None:
                program, (run, found) = candidate, result
    return program, run, found, True
