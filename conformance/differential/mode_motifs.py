"""Motifs for grad modes as modes of their own (conformance/differential/modes.py):
enable_grad inside no_grad, set_grad_enabled as a context manager and as a
function, and in-place writes around inference_mode."""

from __future__ import annotations

from conformance.differential.choices import BOOLS, ints, one_of
from conformance.differential.growth import (
    FAMILIES,
    Growth,
    add_backward,
    apply_op,
    fitting_ops,
    new_leaf,
    pick,
    pick_graded,
)
from oracle import OPS


def _in_mode(draw, g: Growth, op: str, index: int, mode: str, no_grad: bool) -> int | None:
    """`op` on pool tensor `index` with grad mode `no_grad`, set by `mode`."""
    return apply_op(draw, g, op, index, no_grad=no_grad, mode=mode)


def _motif_enable_grad(draw, g: Growth) -> None:
    """Inside no_grad, an op under enable_grad (recorded), then one after the
    enable_grad block (not recorded), then backward from either."""
    x = pick_graded(draw, g)
    family = draw(one_of(("math", "math", "view", "inplace")))
    target = x
    if family == "inplace":  # write a non-leaf: a leaf that requires grad refuses
        target = apply_op(draw, g, draw(one_of(("mul_s", "clone"))), x, no_grad=False) or x
    ops = fitting_ops(FAMILIES[family], g.pool[target])
    if not ops:
        return
    y = _in_mode(draw, g, draw(one_of(ops)), target, "enable_grad", False)
    z = None
    if draw(BOOLS):
        maths = fitting_ops(FAMILIES["math"], g.pool[x])
        z = _in_mode(draw, g, draw(one_of(maths)), x, "after_enable_grad", True)
    outs = tuple(i for i in (y, y, z) if i is not None)
    if outs:
        add_backward(draw, g, draw(one_of(outs)))


def _motif_set_grad_enabled(draw, g: Growth) -> None:
    """An op under torch.set_grad_enabled(mode), as a context manager or as a
    function, with grad mode off or on (from inside no_grad); then backward."""
    x = pick_graded(draw, g)
    mode = draw(one_of(("set_grad_enabled", "set_grad_enabled_fn")))
    no_grad = draw(BOOLS)
    family = draw(one_of(("math", "math", "view")))
    ops = fitting_ops(FAMILIES[family], g.pool[x])
    if not ops:
        return
    y = _in_mode(draw, g, draw(one_of(ops)), x, mode, no_grad)
    if y is not None:
        if draw(BOOLS):  # and then an op in grad mode on what it made
            y = apply_op(draw, g, draw(one_of(fitting_ops(FAMILIES["math"], g.pool[y]))), y) or y
        add_backward(draw, g, y)


# view ops that always make a view (reshape may copy: under inference_mode a
# copy is an inference tensor, which the model does not make there)
INFERENCE_VIEWS = tuple(op for op in FAMILIES["view"] if op != "reshape")
# writes of one operand: the other operands of a write stay outside the mode
UNARY_WRITES = tuple(op for op in FAMILIES["inplace"] if OPS[op].arity == 1)


def _motif_inference_view(draw, g: Growth) -> None:
    """A view of a normal tensor made under inference_mode (maybe a view of it
    after), then written in place with grad on (it raises once its base
    requires grad), under no_grad or inside inference_mode again; then its
    grad_fn read, through backward."""
    x = pick_graded(draw, g) if draw(ints(0, 3)) else pick(draw, g, lambda t: not t.inference)
    if x is None:
        return
    base = x
    if g.pool[x].requires_grad and draw(ints(0, 3)):  # a non-leaf: otherwise writable
        base = apply_op(draw, g, draw(one_of(("mul_s", "clone"))), x, no_grad=False) or x
    view = _in_mode(draw, g, draw(one_of(INFERENCE_VIEWS)), base, "inference", True)
    if view is None or view == base:
        return
    if draw(BOOLS):  # a view of it, in grad mode or under no_grad: still marked
        view = apply_op(draw, g, draw(one_of(INFERENCE_VIEWS)), view) or view
    target = view if draw(ints(0, 3)) else base
    writes = fitting_ops(UNARY_WRITES, g.pool[target])
    if writes:
        where = draw(ints(0, 3))
        op = draw(one_of(writes))
        if where == 0:
            _in_mode(draw, g, op, target, "inference", True)
        else:
            apply_op(draw, g, op, target, no_grad=where == 1)
    if draw(BOOLS):
        y = apply_op(draw, g, draw(one_of(fitting_ops(FAMILIES["math"], g.pool[view]))), view)
        add_backward(draw, g, y if y is not None else view)


def _motif_inference_write(draw, g: Growth) -> None:
    """An inference tensor (or a view of it) written in place inside
    inference_mode (allowed, no version) or outside it (refused)."""
    t = pick(draw, g, lambda u: u.counterless) if draw(BOOLS) else None
    if t is None:
        g.apply(new_leaf(draw, g, requires_grad=False, inference=True))
        t = len(g.pool) - 1
    if draw(BOOLS):
        t = _in_mode(draw, g, draw(one_of(INFERENCE_VIEWS)), t, "inference", True) or t
    writes = fitting_ops(UNARY_WRITES, g.pool[t])
    if writes:
        op, inside = draw(one_of(writes)), draw(BOOLS)
        if inside:
            _in_mode(draw, g, op, t, "inference", True)
        else:
            apply_op(draw, g, op, t, no_grad=draw(BOOLS))


MODE_MOTIFS = (
    _motif_enable_grad,
    _motif_set_grad_enabled,
    _motif_inference_view,
    _motif_inference_write,
)
