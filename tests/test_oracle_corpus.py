"""The oracle against torch 2.13.0 on a fixed corpus of scenarios.

The corpus is the differential's own program generator, derandomized so the
same 2400 chains run every time, over every dtype on the CPU: each chain is
run on torch and on the oracle in lockstep and must agree after every step
(values, gradients, aliasing, versions, flags and which step raises). The
oracle's own tests (tests/oracle/) are torch-free; this is where it meets
torch. The seed articles' examples meet torch in conformance/test_seeds.py.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings

from conformance import known_failures
from conformance.differential import crash_patterns
from conformance.differential.attribution import attribute
from conformance.differential.generate import programs
from conformance.differential.listing import listing
from conformance.differential.lockstep import execute
from conformance.profiles import without_local_constants
from strategies.dtypes import DTYPES
from strategies.programs import Leaf, Program, Step

pytestmark = pytest.mark.skipif(
    not torch.__version__.startswith("2.13."), reason="the corpus is checked against torch 2.13"
)

# enough that each surface motif's ops come up: view_as_real, the rarest, in 1 of 400
SCENARIOS = 2400


def _explained_by_a_known_failure(run, found) -> str | None:
    """The rule a shipped known failure of this build names for the
    discrepancy, if one does: torch breaking a listed promise is not the
    oracle disagreeing (pytorch#34082 is drawn on every release)."""
    rule = attribute(run, found)
    entries = known_failures.load(known_failures.SHIPPED)
    ops = {s.op for s in run.program.steps}
    for entry in entries:
        if entry.applies_to_build(torch.__version__) and entry.covers(
            rule, "cpu", ops=ops, text=found.message
        ):
            return rule
    return None


@pytest.fixture
def no_local_constants():
    # the same chains whichever modules other tests imported first (xdist's order)
    with without_local_constants():
        yield


# a region a row marks undefined is never drawn (strategies.argspace.Undefined)
@pytest.mark.usefixtures("no_local_constants")
@pytest.mark.filterwarnings("error:Use of index_fill_ on expanded tensors is deprecated")
def test_oracle_agrees_with_torch_on_a_corpus_of_generated_chains():
    dtypes = tuple(DTYPES)
    seen: Counter[str] = Counter()
    known: Counter[str] = Counter()
    steps = []
    steps_made: list[Step] = []
    isolated: Counter[str] = Counter()

    @given(program=programs(("cpu",), dtypes, salt=0))
    @settings(
        max_examples=SCENARIOS,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.generate,),  # a disagreement is reported as drawn
        suppress_health_check=list(HealthCheck),
    )
    def agrees(program):
        if reached := crash_patterns.reached(program):
            # torch segfaults on these (known crashes): the differential runs
            # them in a child (isolation.py), tests/test_known_crashes.py
            # checks that; here one would take the test's process down
            isolated.update(reached)
            return
        run, found = execute(program)
        if found is not None and (rule := _explained_by_a_known_failure(run, found)):
            known[rule] += 1
            return
        assert found is None, f"step {found.step}: {found.message}\n" + "\n".join(listing(program))
        steps.append(run.steps_checked)
        seen.update(s.op for s in program.steps)
        steps_made.extend(program.steps)

    agrees()
    assert len(steps) >= 200, f"only {len(steps)} scenarios ran"
    assert sum(isolated.values()) <= len(steps) // 20, f"crash patterns isolated {dict(isolated)}"
    # a known failure ends its chain early: most chains must run to the end
    assert sum(known.values()) <= len(steps) // 10, f"known failures ended {dict(known)}"
    assert sum(steps) >= 1500, f"only {sum(steps)} steps were compared"
    # the corpus exercises the model broadly, not one corner of it
    for op in ("leaf", "clone", "detach", "data", "copy_", "backward", "add_", "mul", "exp"):
        assert seen[op] > 0, f"no scenario used {op}"
    # and the wider view surface: windows, reorderings, multi-output views
    for op in ("narrow", "unfold", "movedim", "split_k", "unbind_k", "chunk_k", "tensor_split_k"):
        assert seen[op] > 0, f"no scenario used {op}"
    # and the writes at indexed positions
    for op in ("setitem_t", "index_put_", "masked_fill_", "index_add_", "index_copy_", "scatter_"):
        assert seen[op] > 0, f"no scenario used {op}"
    # and out=, resize_, set_, _foreach_ (oracle/write_ops.py)
    for op in ("add_out", "mul_out", "exp_out", "neg_out", "resize_", "set_", "foreach_add_s_"):
        assert seen[op] > 0, f"no scenario used {op}"
    # and lazily resolved and reinterpreting views, custom Functions, saved-tensor hooks
    for op in ("conj", "resolve_conj", "view_as_real", "imag", "view_dtype", "fn_scale", "fn_view"):
        assert seen[op] > 0, f"no scenario used {op}"
    assert seen["sin_hooked_detach"] + seen["sin_hooked_x2_x2"] > 0, "no saved-tensor hooks"
    # and grad modes as modes of their own
    assert any(s.mode for s in steps_made), "no step ran in a mode of its own"


def _leaf(values, dtype="float32", requires_grad=False) -> Step:
    array = np.array(values, dtype=np.float64)
    return Step("leaf", leaf=Leaf(array, dtype, "cpu", requires_grad))


# Chains that random seeds once turned into false alarms, kept as a corpus of
# their own: each must agree with torch at every step.
FALSE_ALARMS = {
    # x / x at x = sigmoid(-5) = 0.0067 in float32: the gradient's two terms
    # (g / x and -g * x / x**2, about 558 each) cancel to 6e-5 in torch, to 0
    # in the model (seed 10 of the default profile)
    "cancelling quotient": [
        _leaf([[6.5, -5.0, 0.75], [0.0, 0.5, 0.9375]], requires_grad=True),
        Step("sigmoid", (0,)),
        Step("abs", (1,), no_grad=True),
        Step("requires_grad_", (2,), (True,)),
        Step("div", (2, 2)),
        _leaf([[0.1875, 3.75, 2.5], [1.75, 1.75, 0.9375]]),
        Step("backward_g", (3, 4), (False,)),
    ],
    # float16 backward runs in float16: pow(x, 3)'s 3 * x**2 * g with x =
    # 7.5**3 (after `x.data = x**3`) is inf, and nan where g is 0; the model
    # computes in float64 (torch 2.4.1, ci seed 3)
    "float16 overflow inside a gradient": [
        _leaf(
            [
                [
                    [[-1.0, -1.5, 0.3125], [3.0, 0.5, 0.125]],
                    [[7.5, -0.625, -2.25], [0.5, -1.625, -0.4375]],
                    [[1.5, 2.0, -0.375], [0.75, 0.25, -0.25]],
                ]
            ],
            "float16",
            requires_grad=True,
        ),
        Step("pow_s", (0,), (3,)),
        Step("set_data", (0, 1)),
        Step("permute", (1,), ((2, 3, 0, 1),)),
        Step("getitem", (2,), ((slice(None), slice(None), 0, slice(None)),)),
        _leaf(
            [
                [[0.625, 0.0, -2.5], [1.0, 0.4375, -0.875], [2.75, 1.0, -1.625]],
                [[-0.0625, -5.5, -7.0], [-0.75, -1.75, 6.5], [-1.5, 0.0, 0.75]],
            ],
            "float16",
        ),
        Step("backward_g", (3, 4), (False,)),
    ],
    # torch.autograd.grad sums every path to its input: t0 / t0.clone().squeeze(0)
    # has one direct edge to t0 and one through squeeze and clone, and its
    # gradient is 0; the model once pruned the second path and said 1 / t0
    # (the ci profile's seed 0)
    "autograd.grad along two paths": [
        _leaf([[2.0, -4.0, 0.5]], requires_grad=True),
        Step("clone", (0,)),
        Step("squeeze", (1,), (0,)),
        Step("div", (0, 2)),
        _leaf([[1.0, 1.0, 1.0]]),
        Step("autograd_grad", (3, 0, 4), (False, True)),
    ],
    # index_add_ saves its source when the source requires grad: a write to
    # the source afterwards makes backward raise (the differential's minimal
    # chain while it looked for the copy_leaks_grad plant)
    "index_add_ saves its source": [
        _leaf(np.ones((3, 2, 3)), requires_grad=True),
        Step("detach", (0,)),
        _leaf(np.ones((3, 2, 4)), requires_grad=True),
        Step("index_add_", (1, 2), (2, [2, 1, 2, 2])),
        Step("mul_", (2, 2), no_grad=True),
        _leaf(np.ones((3, 2, 3))),
        Step("backward_g", (1, 3), (False,)),
    ],
}


@pytest.mark.parametrize("name", sorted(FALSE_ALARMS))
def test_oracle_agrees_with_torch_on_chains_that_were_false_alarms(name):
    program = Program(FALSE_ALARMS[name], render=listing)
    run, found = execute(program)
    assert found is None, f"step {found.step}: {found.message}\n" + "\n".join(listing(program))
    assert run.steps_checked == len(program.steps)
