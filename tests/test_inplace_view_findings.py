"""The in-place view ops' finding drawn and named (issue 37): an in-place view
op on a view torch regenerates by replaying its view functions (a conj view
here) is lost from the replay once the view is written, so backward refuses
the gradient's shape; the differential names view.inplace_view_op, and the
shipped known failure (inplace-view-op-replayed-view-fn) covers it, while a
plain view's program agrees with the model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conformance import known_failures
from conformance.differential.attribution import attribute
from conformance.differential.listing import listing
from conformance.differential.lockstep import execute
from strategies.programs import Leaf, Program, Step

X = np.array([[1 + 1j, 2 - 1j, 0.5j]], dtype=np.complex128)


def _program(view: str) -> Program:
    steps = [
        Step("leaf", leaf=Leaf(X, "complex64", "cpu", True)),
        Step("mul_s", (0,), (1.0,)),
        Step(view, (1,), (0, 1) if view == "transpose" else ()),
        Step("t_", (2,), ()),
        Step("mul_s_", (2,), (2.0,)),
        Step(
            "leaf",
            leaf=Leaf(
                np.ones((1, 3) if view == "transpose" else (3, 1)), "complex64", "cpu", False
            ),
        ),
        Step("backward_g", (2, 3), (False,)),
    ]
    return Program(steps, render=listing)


def test_a_plain_view_changed_in_place_agrees_with_the_model():
    _, found = execute(_program("transpose"))
    assert found is None, found


@pytest.mark.skipif(not torch.__version__.startswith("2."), reason="torch 2 only")
def test_a_conj_view_changed_in_place_is_named_and_known():
    run, found = execute(_program("conj"))
    assert found is not None and found.kind == "raise", found
    assert found.actual == "GRAD_SHAPE_MISMATCH" and found.expected is None, found
    rule = attribute(run, found)
    assert rule == "view.inplace_view_op"
    ops = {s.op for s in run.program.steps}
    entries = [
        e
        for e in known_failures.load(known_failures.SHIPPED)
        if e.applies_to_build(torch.__version__)
        and e.covers(rule, "cpu", ops=ops, text=found.message)
    ]
    assert [e.finding for e in entries] == ["inplace-view-op-replayed-view-fn"]
