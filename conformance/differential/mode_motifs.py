"""Motifs for grad modes as modes of their own (conformance/differential/modes.py):
enable_grad inside no_grad, set_grad_enabled as a context manager and as a
function, and in-place writes around inference_mode."""

from __future__ import annotations

from dataclasses import replace

from conformance.differential.choices import _BOOLS, _one_of
from conformance.differential.growth import (
    FAMILIES,
    Growth,
    _apply_op,
    _backward,
    _fitting,
    _graded,
)


def _in_mode(draw, g: Growth, op: str, index: int, mode: str, no_grad: bool) -> int | None:
    """`op` on pool tensor `index` with grad mode `no_grad`, set by `mode`: the
    model runs it as a plain step (its `no_grad` is the grad mode it runs in),
    so the mode is put on the step once it is made."""
    before = len(g.steps)
    out = _apply_op(draw, g, op, index, no_grad=no_grad)
    if len(g.steps) > before and g.steps[-1].op == op:
        g.steps[-1] = replace(g.steps[-1], mode=mode)
    return out


def _motif_enable_grad(draw, g: Growth) -> None:
    """Inside no_grad, an op under enable_grad (recorded), then one after the
    enable_grad block (not recorded), then backward from either."""
    x = _graded(draw, g)
    family = draw(_one_of(("math", "math", "view", "inplace")))
    target = x
    if family == "inplace":  # write a non-leaf: a leaf that requires grad refuses
        target = _apply_op(draw, g, draw(_one_of(("mul_s", "clone"))), x, no_grad=False) or x
    ops = _fitting(FAMILIES[family], g.pool[target])
    if not ops:
        return
    y = _in_mode(draw, g, draw(_one_of(ops)), target, "enable_grad", False)
    z = None
    if draw(_BOOLS):
        maths = _fitting(FAMILIES["math"], g.pool[x])
        z = _in_mode(draw, g, draw(_one_of(maths)), x, "after_enable_grad", True)
    outs = tuple(i for i in (y, y, z) if i is not None)
    if outs:
        _backward(draw, g, draw(_one_of(outs)))


def _motif_set_grad_enabled(draw, g: Growth) -> None:
    """An op under torch.set_grad_enabled(mode), as a context manager or as a
    function, with grad mode off or on (from inside no_grad); then backward."""
    x = _graded(draw, g)
    mode = draw(_one_of(("set_grad_enabled", "set_grad_enabled_fn")))
    no_grad = draw(_BOOLS)
    family = draw(_one_of(("math", "math", "view")))
    ops = _fitting(FAMILIES[family], g.pool[x])
    if not ops:
        return
    y = _in_mode(draw, g, draw(_one_of(ops)), x, mode, no_grad)
    if y is not None:
        if draw(_BOOLS):  # and then an op in grad mode on what it made
            y = _apply_op(draw, g, draw(_one_of(_fitting(FAMILIES["math"], g.pool[y]))), y) or y
        _backward(draw, g, y)


MODE_MOTIFS = (_motif_enable_grad, _motif_set_grad_enabled)
