"""One differential program checked against the model, as the differential's
test runs each program it draws: in lockstep (in a child process, where the
program reaches a known crash pattern: crash_patterns.py), and a discrepancy
minimized, attributed to its rule and raised, or kept aside if it is known."""

from __future__ import annotations

from conformance import harness
from conformance.check import InvariantViolation
from conformance.differential import crash_patterns
from conformance.differential.attribution import attribute
from conformance.differential.isolation import run_in_child
from conformance.differential.listing import listing, repro_script
from conformance.differential.lockstep import execute
from conformance.differential.minimize import minimize, same_failure
from conformance.internal import suite_code
from conformance.invariants import INVARIANTS
from conformance.known_search import keep
from oracle import tolerance
from strategies.programs import Program


def check_program(program: Program, device: str) -> None:
    """Run one program in lockstep with the model: return if they agree (or
    it met a known failure, kept aside for the end of the search), raise the
    minimized violation otherwise."""
    if crash_patterns.reached(program):
        # a known crash of torch on the way (a hook on a stale view): the program
        # runs in a child, so that a segfault leaves the rest of the search running
        verdict = run_in_child(program)
        if verdict.crashed or not verdict.found:
            harness.COVERAGE.steps += verdict.steps_checked
            return
        # the child survived a discrepancy: it runs here, for the run minimizing needs
    run, found = execute(program)
    harness.COVERAGE.steps += run.steps_checked
    if found is None:
        return
    # minimize while it fails the same way, then name the rule on the minimal chain
    with suite_code("minimizing and attributing a discrepancy"):
        program, run, found, reproduced = minimize(program, (run, found), same_failure(found))
        invariant = attribute(run, found)
        observed = run.observed[0]
        dtype = observed[found.tensors[0]].dtype if found.tensors and observed else "float64"
        script = repro_script(
            program, found, invariant, INVARIANTS[invariant].statement, tolerance(dtype)
        )
        example = "\n".join(listing(program))
    chain = (
        "minimal chain"
        if reproduced
        else (
            "chain (not minimized: it did not fail again when re-run, so torch's behaviour "
            "here depends on state outside the chain)"
        )
    )
    violation = InvariantViolation(
        invariant,
        f"after step {found.step}: {found.message}\n\n{chain}:\n{example}\n\n"
        f"repro script:\n{script}",
        example=example,
        repro=script,
    )
    if keep(violation, device, (step.op for step in program.steps)):
        return  # a known failure: the search goes on for others
    raise violation
