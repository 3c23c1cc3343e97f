"""Issue 37: programs that read grad_fn lazily or under no_grad, and leaves laid
out non-contiguously, run in lockstep with the model."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.differential import crash_patterns
from conformance.differential.crash_repro import up_to
from conformance.differential.growth import Growth
from conformance.differential.lockstep import execute
from conformance.differential.minimize import without
from conformance.differential.observe import UNREAD
from strategies.programs import LEAF_LAYOUTS, Leaf, Program, Step


def _leaf(requires_grad: bool = True, layout: str = "") -> Step:
    values = np.arange(6, dtype=np.float64).reshape(2, 3) + 1
    return Step("leaf", leaf=Leaf(values, "float32", "cpu", requires_grad, layout=layout))


# t1 = t0 * 2; t2 = t1[0] (a view); t1 written in place: t2's grad_fn is stale;
# then a backward through t2 regenerates it
STALE = [
    _leaf(),
    Step("mul_s", (0,), (2.0,)),
    Step("select", (1,), (0, 0)),
    Step("mul_s_", (1,), (3.0,)),
    Step("sum", (2,)),
    Step("backward", (3,), (False,)),
]


@pytest.mark.parametrize("reads", ["", "no_grad", "lazy"])
def test_a_stale_view_agrees_however_grad_fn_is_read(reads):
    run, found = execute(Program(STALE, reads=reads))
    assert found is None, found
    flags = {o.has_grad_fn for o in run.observed[1]} | {o.is_leaf for o in run.observed[1]}
    assert (UNREAD in flags) == (reads == "lazy")


# STALE's first four steps, then a hook on the stale view t2 (its grad_fn unread
# since t1 was written) and a backward through it
HOOKED = [*STALE[:4], Step("hook_mul", (2,), (2.0,)), Step("sum", (2,)), Step("backward", (3,))]


def test_a_lazy_program_keeps_lazy_reads_and_is_flagged_before_a_hook_on_a_stale_view():
    """register_hook on a stale view, its grad_fn unread, crashes torch up to
    2.14.1 (pytorch/pytorch#196459): the generator draws it all the same (the
    program keeps its lazy reads), and crash_patterns flags the program, which
    the differential then runs in a child process."""
    g = Growth(("cpu",), ("float32",), reads="lazy")
    for step in HOOKED:
        g.apply(step)
    assert g.reads == "lazy"
    assert len(g.steps) == len(HOOKED)
    flagged = crash_patterns.reached(Program(g.steps, reads=g.reads))
    assert flagged == ("register-hook-stale-view-segfault",)
    # read after every step (in grad mode or under no_grad), the view's grad_fn is
    # regenerated before the hook: not flagged; nor is a hook on a view read since
    for reads in ("", "no_grad"):
        assert not crash_patterns.reached(Program(HOOKED, reads=reads))
    fresh = [*STALE[:3], Step("hook_mul", (2,), (2.0,)), Step("mul_s_", (1,), (3.0,))]
    assert not crash_patterns.reached(Program(fresh, reads="lazy"))
    # nor a second hook, joining the first one's dictionary without reading grad_fn
    again = [*fresh, Step("hook_add", (2,), (1.0,))]
    assert not crash_patterns.reached(Program(again, reads="lazy"))


def test_a_hook_on_a_stale_view_torch_refuses_is_not_flagged():
    """One output of several (unbind), stale: its grad_fn is not regenerated
    but refused, and register_hook raises where the model says it must (drawn
    at --profile ci --seed 2): it runs in the worker like any program."""
    steps = [*STALE[:2], Step("unbind_k", (1,), (0, 0)), Step("mul_s_", (1,), (3.0,))]
    program = Program([*steps, Step("hook_none", (2,), ())], reads="lazy")
    assert not crash_patterns.reached(program)
    run, found = execute(program)
    assert found is None, found
    assert run.steps_checked == len(program.steps)


@pytest.mark.parametrize("layout", LEAF_LAYOUTS)
def test_a_non_contiguous_leaf_agrees(layout):
    leaf = _leaf(layout=layout)
    steps = [leaf, Step("mul_s", (0,), (2.0,)), Step("select", (1,), (1, 0))]
    steps += [Step("mul_s_", (2,), (3.0,)), Step("sum", (1,)), Step("backward", (3,), (False,))]
    run, found = execute(Program(steps))
    assert found is None, found
    assert run.observed[1][0].strides == leaf.leaf.geometry()[0]
    assert run.torch_pool[0].grad is not None


def test_a_shorter_program_reads_as_the_program_it_came_from():
    """The minimizer's and the crash repro's shorter programs keep the way the
    program reads grad_fn: a lazy program's discrepancy is minimized lazily."""
    program = Program([*STALE[:4], Step("hook_mul", (2,), (2.0,))], reads="lazy")
    assert without(program, {3}).reads == "lazy"
    assert up_to(program, 2).reads == "lazy"
