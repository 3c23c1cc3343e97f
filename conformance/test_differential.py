"""The differential: chains of operations run on torch and on the reference
model in lockstep, compared after every step. A failure shrinks to a minimal
chain, names the rule it breaks, and comes with a standalone repro script."""

from __future__ import annotations

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from conformance.differential.generate import programs
from conformance.differential.program_check import check_program
from conformance.harness import Example
from conformance.invariants import CATALOGUE
from conformance.known_search import reports_known_at_the_end
from conformance.selection import current

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
    check_program(program, device)
