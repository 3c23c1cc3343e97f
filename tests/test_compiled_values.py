"""Compiled values against eager's: bit for bit for a backend that runs
eager's own kernels (aot_eager), within the compiled tolerance for any other
(issue 28, step 2)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from conformance.compiled.compare import compare, identical
from conformance.compiled.program import CompiledProgram, CStep
from conformance.compiled.run import execute
from conformance.compiled.targets import SAME_KERNELS, Target
from strategies.programs import Leaf

AOT_EAGER = Target("aot_eager", True, "")


def _leaf(out: int, values, dtype: str = "float64", requires_grad: bool = False) -> CStep:
    leaf = Leaf(np.asarray(values, dtype=np.float64), dtype, "cpu", requires_grad)
    return CStep("leaf", out=out, leaf=leaf)


# t1 = t0.exp(); t2 = t1 * t0; backward through both, float64
EXP_TIMES = CompiledProgram(
    args=(_leaf(0, [0.1, -1.3, 2.7], requires_grad=True), _leaf(3, [1.0, 1.0, 1.0])),
    body=(CStep("exp", (0,), out=1), CStep("mul", (1, 0), out=2)),
    tail=(CStep("backward_g", (2, 3), (False,)),),
)


@pytest.mark.parametrize(
    "a, b, same",
    [
        ([1.0, 2.0], [1.0, 2.0], True),
        ([1.0, 2.0], [1.0, np.nextafter(2.0, 3.0)], False),  # one float64 ulp
        ([np.nan, 1.0], [-np.nan, 1.0], True),  # NaNs in the same places, any payload
        ([np.nan, 1.0], [1.0, np.nan], False),
        ([0.0], [-0.0], True),  # equal in IEEE 754, and in the repro script's ==
        ([1e-300], [np.nextafter(1e-300, 1.0)], False),
        ([np.inf], [np.inf], True),
    ],
)
def test_identical_is_bit_for_bit_but_zeros_with_nans_in_the_same_places(a, b, same):
    assert identical(np.array(a), np.array(b)) is same


def test_identical_compares_complex_parts_and_integers():
    z = np.array([1 + 2j, np.nan + 0j])
    assert identical(z, z.copy())
    assert not identical(z, np.array([1 + np.nextafter(2.0, 3.0) * 1j, np.nan + 0j]))
    assert identical(np.array([3, 4]), np.array([3, 4]))
    assert not identical(np.array([3, 4]), np.array([3, 5]))
    assert not identical(np.array([1.0]), np.array([1.0, 1.0]))  # shapes


def test_aot_eager_and_the_capture_alone_run_eagers_kernels():
    assert AOT_EAGER.same_kernels and Target("eager").same_kernels
    assert not Target("inductor").same_kernels
    assert not Target("tests.compile_plants:changes_outputs").same_kernels
    assert SAME_KERNELS == {"eager", "aot_eager"}


def _nudged(trace, token: int):
    """The trace with token's values one float64 ulp up, wherever it is seen."""
    trace = copy.deepcopy(trace)
    for outcome in trace.outcomes:
        for k, seen_token in enumerate(outcome.snapshot.tokens):
            if seen_token == token:
                seen = outcome.snapshot.seen[k]
                seen.values = np.nextafter(seen.values, np.inf)
    return trace


def test_one_ulp_in_an_output_is_a_difference_only_where_kernels_are_the_same():
    eager = execute(EXP_TIMES, None)
    compiled = _nudged(eager, 1)
    found = compare(EXP_TIMES, eager, compiled, exact=True)
    assert found is not None and found.invariant == "compile.outputs", found
    assert found.tensors == (1,)
    # within the tolerance an inductor-like backend is given
    assert compare(EXP_TIMES, eager, compiled, exact=False) is None


def test_aot_eager_gives_eagers_values_and_gradients_bit_for_bit():
    eager, compiled = execute(EXP_TIMES, None), execute(EXP_TIMES, AOT_EAGER)
    assert compiled.graphs >= 1  # it really compiled
    assert compare(EXP_TIMES, eager, compiled, exact=True) is None
    grads = [s.grad for o in eager.outcomes for s in o.snapshot.seen if s.grad is not None]
    assert grads, "the program's leaf has a gradient to compare"
