"""The differential: chains of operations run on torch and on the reference
model in lockstep, compared after every step. A failure shrinks to a minimal
chain, names the rule it breaks, and comes with a standalone repro script."""

from __future__ import annotations

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from conformance import harness
from conformance.check import InvariantViolation
from conformance.differential.attribution import attribute
from conformance.differential.generate import programs
from conformance.differential.listing import listing, repro_script
from conformance.differential.lockstep import execute
from conformance.differential.minimize import minimize, same_failure
from conformance.harness import Example
from conformance.internal import suite_code
from conformance.invariants import CATALOGUE, INVARIANTS
from conformance.known_search import keep, reports_known_at_the_end
from conformance.selection import current
from oracle import tolerance

# The differential runs as several shards, so that xdist spreads it over the
# workers, each with a multiple of the profile's example count: it is the
# part of the suite that finds what no single-rule test looks for.
SHARDS = 4
EXAMPLES_PER_SHARD = 4  # times the profile's max_examples


# every rule but the schema family (the sweep checks schemas) and the compile family
# (the compiled differential holds compiled programs to eager)
@pytest.mark.invariant(*(inv.id for inv in CATALOGUE if inv.family not in ("schema", "compile")))
@pytest.mark.parametrize("shard", range(SHARDS))
@reports_known_at_the_end
@given(data=st.data())
# Failures are minimized by deleting steps (differential.minimize), far faster
# than shrinking through Hypothesis's choices, so Hypothesis does not shrink.
@settings(
    max_examples=settings.default.max_examples * EXAMPLES_PER_SHARD,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
def test_torch_agrees_with_the_reference_model(device, shard, data):
    ex = Example(data, device)
    others = tuple(d for d in current().present if d != device)
    program = ex.draw(programs((device, *others), ex.dtypes(), salt=shard), "program")
    for step in program.steps:
        if step.op == "leaf":
            ex.record(step.leaf.dtype)
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
