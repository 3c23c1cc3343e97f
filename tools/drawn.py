"""Drawn compiled programs for the measuring tools, one Hypothesis setup for
all of them: generation only, no database, no deadline, health checks off."""

from __future__ import annotations

import warnings
from collections.abc import Callable

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from conformance.compiled.motifs import compiled_programs
from conformance.compiled.program import CompiledProgram


def each_program(
    count: int,
    dtypes: tuple[str, ...],
    visit: Callable[[CompiledProgram], None],
    hypothesis_seed: int | None = None,
) -> None:
    """Call `visit` on `count` programs drawn on the CPU from `dtypes`, with
    warnings silenced: those of Hypothesis seed `hypothesis_seed`, or, without
    one, the derandomized draw."""

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        derandomize=hypothesis_seed is None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        _, program = data.draw(compiled_programs(("cpu",), dtypes))
        visit(program)

    if hypothesis_seed is not None:
        run = seed(hypothesis_seed)(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run()
