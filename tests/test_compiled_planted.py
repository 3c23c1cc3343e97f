"""The compiled differential catches each planted backend and names it.

Every plant in tests/compile_plants.py is aot_eager broken in one way. For
each, the compiled differential's own programs (conformance.compiled) must
find a program on which the plant and eager differ while plain aot_eager
agrees with eager, minimize it, and name the plant's invariant; the repro
script it writes must fail on the plant and pass on aot_eager.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample

from conformance.compiled.compare import compare, diverges
from conformance.compiled.minimize import minimize
from conformance.compiled.motifs import compiled_programs
from conformance.compiled.repro import repro_script
from conformance.compiled.run import execute
from conformance.compiled.targets import Target
from tests.compile_plants import PLANTS

ROOT = Path(__file__).resolve().parents[1]
DTYPES = ("float32", "float64", "complex64", "int64", "bool")
BUDGET = 80  # programs per plant, seeded: each plant is found within a few dozen
# Short base programs: the compile-only motifs do the work, and compile fast.
# Longer ones hide a plant behind torch's own compile divergences (a program
# where plain aot_eager already differs does not count): at 6 steps about 40%
# of programs differ under plain aot_eager, and swallows_error was first
# caught at program 142; at 3 steps, at program 21.
STEPS = 3
ATTEMPTS = 20  # minimization steps (each a compilation)
CLEAN = Target("aot_eager")


def _agrees_clean(program) -> bool:
    return compare(program, execute(program, None), execute(program, CLEAN)) is None


def _caught(plant: Target):
    """A program that diverges under the plant and not under plain aot_eager."""

    def diverges(pair) -> bool:
        _, program = pair
        if compare(program, execute(program, None), execute(program, plant)) is None:
            return False
        return _agrees_clean(program)

    return find(
        compiled_programs(("cpu",), DTYPES, max_steps=STEPS),
        diverges,
        settings=settings(
            max_examples=BUDGET,
            database=None,
            deadline=None,
            phases=(Phase.generate,),
            suppress_health_check=list(HealthCheck),
        ),
        random=__import__("random").Random(0),
    )


@pytest.mark.parametrize("name", sorted(PLANTS))
def test_compiled_differential_names_the_plant(name):
    plant = Target(f"tests.compile_plants:{name}")
    try:
        _, program = _caught(plant)
    except NoSuchExample:
        pytest.fail(f"the compiled differential did not catch {name} in {BUDGET} programs")
    first = diverges(program, plant)
    # a smaller program must still agree on plain aot_eager: one that ends in
    # one of aot_eager's own bugs would fail on a clean torch too
    small, found = minimize(program, plant, first, attempts_left=ATTEMPTS, keep=_agrees_clean)
    assert found.invariant == PLANTS[name], (name, found)
    assert len(small.body) + len(small.tail) <= len(program.body) + len(program.tail)
    script = repro_script(small, plant, found)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    planted = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert planted.returncode != 0, planted.stdout
    assert "differs" in planted.stdout or "raised" in planted.stdout or "error" in planted.stdout
    clean = subprocess.run(
        [sys.executable, "-c", repro_script(small, CLEAN, found)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert clean.returncode == 0, clean.stdout + clean.stderr
