"""The differential's side of the in-place view ops (issue 37: transpose_, t_,
squeeze_, unsqueeze_, swapdims_, as_strided_; Engine._op_inplace_view): the
motif that draws them on purpose, and which rule a discrepancy they explain
breaks.

The motif makes a view of an intermediate (now and then of a leaf, or the
tensor itself, or one output of unbind) under grad mode, no_grad or
inference_mode; changes it in place under one of those modes (now and then
twice); writes into it or its base, in grad mode or not; then runs backward
from it or from what follows it. Each mode calls for its own refusals (of
the op, of the later write, of reading grad_fn): the lockstep holds torch to
the model's at every step.
"""

from __future__ import annotations

from conformance.differential.choices import BOOLS, ints, one_of
from conformance.differential.growth import (
    FAMILIES,
    Growth,
    add_backward,
    apply_op,
    fitting_ops,
    pick_graded,
)
from conformance.differential.mode_motifs import INFERENCE_VIEWS, UNARY_WRITES

INPLACE_VIEW_OPS = FAMILIES["inplace_view"]
RULE = "view.inplace_view_op"
# (no_grad, mode) of a step: grad mode, no_grad, inference_mode
_MODES = ((False, ""), (True, ""), (True, "inference"))


def _in(draw, g: Growth, op: str, index: int, which: int) -> int | None:
    no_grad, mode = _MODES[which]
    return apply_op(draw, g, op, index, no_grad=no_grad, mode=mode)


def _motif_inplace_view(draw, g: Growth) -> None:
    """view under a grad mode -> in-place view op under one -> later write -> backward."""
    x = pick_graded(draw, g)
    base = x
    if draw(ints(0, 3)):  # mostly an intermediate: a leaf's views refuse with grad on
        base = apply_op(draw, g, draw(one_of(("mul_s", "clone"))), x, no_grad=False) or x
    target = base
    # else (a third of the time) the tensor itself, no view: its grad_fn alone
    # must follow the new geometry
    if draw(ints(0, 2)):
        made = draw(ints(0, 2))
        view = _in(draw, g, draw(one_of(INFERENCE_VIEWS)), base, made)
        if view is None or view == base:
            return
        target = view
    for _ in range(1 + (draw(ints(0, 3)) == 3)):  # now and then twice
        ops = fitting_ops(INPLACE_VIEW_OPS, g.pool[target])
        if not ops or _in(draw, g, draw(one_of(ops)), target, draw(one_of((0, 0, 1, 2)))) is None:
            return
    if g.over:
        return
    if draw(ints(0, 3)):  # a later write, into it (or its base), grad mode on or not
        written = target if draw(ints(0, 3)) else base
        writes = fitting_ops(UNARY_WRITES, g.pool[written])
        if writes:
            _in(draw, g, draw(one_of(writes)), written, draw(one_of((0, 0, 1, 2))))
    if draw(BOOLS):
        maths = fitting_ops(FAMILIES["math"], g.pool[target])
        y = apply_op(draw, g, draw(one_of(maths)), target, no_grad=False) if maths else None
        add_backward(draw, g, y if y is not None else target)
    else:
        add_backward(draw, g, draw(one_of((target, base))))


INPLACE_VIEW_MOTIFS = (_motif_inplace_view,)


# ---- attribution ---------------------------------------------------------------------

# the refusals of an in-place op on a view or a leaf: each keeps its own rule
_REFUSALS = {
    "INPLACE_ON_LEAF",
    "INPLACE_ON_LEAF_VIEW",
    "NO_GRAD_VIEW_INPLACE",
    "INFERENCE_VIEW_INPLACE",
    "MULTI_OUTPUT_VIEW_INPLACE",
    "INFERENCE_INPLACE",
    "CUSTOM_FUNCTION_VIEW",
}
_HISTORY = ("raise", "grad", "requires_grad", "has_grad_fn", "is_leaf", "grad_meta")


def rule(f) -> str | None:
    """view.inplace_view_op for a discrepancy at an in-place view op's step
    (other than a refusal, whose rule is its own), or a later one of
    autograd's on a tensor it changed or computed from one (a minimal chain
    keeps the op only where the discrepancy needs it); None: the general
    rules decide."""
    step, d = f.step, f.d
    if d.kind == "raise" and {d.expected, d.actual} & _REFUSALS:
        return None
    if step.op in INPLACE_VIEW_OPS:
        return RULE
    changed = {s.tensors[0] for s in f.steps[: d.step] if s.op in INPLACE_VIEW_OPS}
    if not changed or d.kind not in _HISTORY:
        return None
    if step.op in ("backward", "backward_g", "autograd_grad"):
        return RULE if changed & f.ancestry(step.tensors[0]) else None
    return RULE if changed & set(d.tensors) else None


__all__ = ["INPLACE_VIEW_MOTIFS", "RULE", "rule"]
