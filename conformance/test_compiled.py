"""The differential, compiled: the differential's programs as Python
functions, run eagerly and under each `--compile` target on identical fresh
inputs, compared on everything a caller can observe (compile.*); eager is
still held to the reference model on the same programs. A divergence is
minimized, named by invariant, and comes with a standalone repro script."""

from __future__ import annotations

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from conformance import harness
from conformance.check import InvariantViolation
from conformance.compiled.compare import diverges
from conformance.compiled.minimize import minimize
from conformance.compiled.motifs import compiled_programs
from conformance.compiled.repro import repro_script
from conformance.compiled.targets import Target, column
from conformance.differential.attribution import attribute
from conformance.differential.listing import listing
from conformance.differential.lockstep import execute as lockstep
from conformance.harness import Example
from conformance.invariants import CATALOGUE
from conformance.known_search import SEEN, keep, reports_known_at_the_end
from conformance.run_state import known_failure_entries

COMPILE_IDS = tuple(inv.id for inv in CATALOGUE if inv.family == "compile")
EAGER_IDS = tuple(inv.id for inv in CATALOGUE if inv.family != "compile")

# Each program costs a compilation (about 0.4 s with aot_eager): fewer
# programs than the eager differential, spread over shards for xdist.
SHARDS = 4
MINIMIZE_ATTEMPTS = 20  # compilations spent on a failure at most
EXAMPLES_PER_SHARD = 0.25  # times the profile's max_examples


def _known_before_minimizing(divergence, column: str, program) -> bool:
    """Whether a known entry covers this divergence as drawn, before minimizing
    it (an entry narrowed by ops matches the whole program's ops: looser than
    on the minimal program, so used only once a known failure is in hand)."""
    text = f"[{divergence.invariant}] {divergence.message}"
    return any(
        (e.ops is not None or e.message is not None)
        and e.covers(divergence.invariant, column, None, program.ops, text)
        for e in known_failure_entries()
    )


@pytest.mark.invariant(*COMPILE_IDS, *EAGER_IDS)
@pytest.mark.parametrize("shard", range(SHARDS))
@reports_known_at_the_end
@given(data=st.data())
@settings(
    max_examples=max(1, int(settings.default.max_examples * EXAMPLES_PER_SHARD)),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
def test_compiled_agrees_with_eager(device, target: Target, shard, data):
    ex = Example(data, device)
    base, program = ex.draw(compiled_programs((device,), ex.dtypes(), salt=shard), "programs")
    for step in program.args:
        if step.op == "leaf":
            ex.record(step.leaf.dtype)
    # eager, held to the reference model on the generator's own program
    run, found = lockstep(base)
    harness.COVERAGE.steps += run.steps_checked
    if found is not None:
        example = "\n".join(listing(base))
        violation = InvariantViolation(
            attribute(run, found),
            f"eager torch, after step {found.step}: {found.message}\n\n{example}",
            example=example,
        )
        # eager's own known failures hold here as in the eager differential,
        # matched against the whole program's ops (it is not minimized)
        ops = {step.op for step in base.steps}
        harness.LAST_EXAMPLE_OPS.update(ops)
        if keep(violation, column(device, target.name), ops):
            return
        raise violation
    # where the model found bits no run need reproduce (a NaN's payload read as
    # another dtype: oracle/dtype_views.py), eager's values bind no backend either
    divergence = diverges(program, target, values_undefined=run.engine.bits_undefined)
    if divergence is None:
        return
    if SEEN and _known_before_minimizing(divergence, column(device, target.name), program):
        return  # one known failure is reported already: no need to minimize another
    program, divergence = minimize(program, target, divergence, attempts_left=MINIMIZE_ATTEMPTS)
    harness.LAST_EXAMPLE_OPS.clear()
    harness.LAST_EXAMPLE_OPS.update(program.ops)
    example = "\n".join(program.listing())
    script = repro_script(program, target, divergence)
    violation = InvariantViolation(
        divergence.invariant,
        f"eager and {target.name} differ {divergence.message}\n\nminimal program:\n{example}\n\n"
        f"repro script:\n{script}",
        example=example,
        repro=script,
    )
    if keep(violation, column(device, target.name), program.ops):
        return
    raise violation
