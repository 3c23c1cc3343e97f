"""Custom autograd.Function variants drawn on purpose (issue 37): a dirty input
written with a second input that requires grad (AddDirty), and a Function's
view of a tensor that requires no grad, then written in place with an operand
that does (ViewFn). Their model: oracle/functions.py; their rules:
function.mark_dirty_returns_input and function.view_output."""

from __future__ import annotations

from conformance.differential.choices import BOOLS, ints, one_of
from conformance.differential.growth import (
    Growth,
    add_backward,
    apply_op,
    new_leaf,
    pick_graded,
    tensor_kind,
)
from strategies.programs import Step, broadcastable_to

_GRADED = ("float", "complex")


def _graded_operand(draw, g: Growth, t: int, requires_grad: bool = True) -> int:
    """A new leaf of t's dtype and device whose shape broadcasts into t's."""
    u = g.pool[t]
    shape = draw(broadcastable_to, tuple(u.shape))
    make = dict(shape=shape, dtype=u.dtype, device=u.device, requires_grad=requires_grad)
    g.apply(new_leaf(draw, g, inference=False, **make))
    return len(g.pool) - 1


def _motif_dirty_with_a_second_input(draw, g: Growth) -> None:
    """AddDirty.apply(x, y, c): x.add_(y * c) marked dirty, y mostly requiring grad;
    x an intermediate, a view of one, a tensor that requires no grad (or its view),
    or now and then a leaf that requires grad (refused after the write); mostly in
    grad mode; then backward from x (or its base) or through y."""
    x = pick_graded(draw, g)
    kind = draw(ints(0, 7))
    if kind < 5:  # an intermediate, now and then a view of one
        x = apply_op(draw, g, draw(one_of(("mul_s", "clone"))), x, no_grad=False) or x
    elif kind < 7:  # a tensor that requires no grad: the Function's node becomes its history
        u = g.pool[x]
        g.apply(new_leaf(draw, g, shape=tuple(u.shape), dtype=u.dtype, requires_grad=False))
        x = len(g.pool) - 1
    # (kind 7: the leaf that requires grad itself)
    if kind != 7 and draw(ints(0, 2)) == 0:
        x = apply_op(draw, g, draw(one_of(("getitem", "transpose", "select"))), x) or x
    t = g.pool[x]
    if tensor_kind(t) not in _GRADED or t.inference:
        return
    y = _graded_operand(draw, g, x, requires_grad=bool(draw(ints(0, 3))))
    if not draw(ints(0, 5)):  # now and then y is x itself, read before the write
        y = x
    z = apply_op(draw, g, "fn_add_dirty_", x, other=y, no_grad=draw(ints(0, 5)) == 5)
    if z is None:
        return
    root = g.pool[z].base
    out = g.pool.index(root) if root is not None and draw(BOOLS) else z
    add_backward(draw, g, out if draw(ints(0, 3)) else y)


def _motif_function_view_of_a_plain_tensor(draw, g: Growth) -> None:
    """ViewFn.apply(t) for t that requires no grad (a new leaf, a detach() of one
    that does, or a view of either), then the view (or t) written in place with
    an operand that requires grad (add_, mul_, copy_), mostly in grad mode; then
    backward from t, which may now require grad."""
    x = pick_graded(draw, g)
    if draw(BOOLS):
        t = apply_op(draw, g, "detach", x)
    else:
        u = g.pool[x]
        g.apply(new_leaf(draw, g, shape=tuple(u.shape), dtype=u.dtype, requires_grad=False))
        t = len(g.pool) - 1
    if t is None:
        return
    if not draw(ints(0, 3)):
        t = apply_op(draw, g, draw(one_of(("getitem", "transpose", "select"))), t) or t
    if tensor_kind(g.pool[t]) not in _GRADED or g.pool[t].inference:
        return
    g.apply(Step("fn_view", (t,), (), draw(ints(0, 5)) == 5))  # now and then under no_grad
    v = len(g.pool) - 1
    w = _graded_operand(draw, g, v)
    written = v if draw(ints(0, 3)) else t  # mostly the view itself
    op = draw(one_of(("add_", "mul_", "copy_")))
    apply_op(draw, g, op, written, other=w, no_grad=draw(ints(0, 5)) == 5)
    add_backward(draw, g, t if draw(ints(0, 2)) else w)


FUNCTION_MOTIFS: tuple = (
    _motif_dirty_with_a_second_input,
    _motif_function_view_of_a_plain_tensor,
)


def _motif_backward_returns_none(draw, g: Growth) -> None:
    """AddNoGrad.apply(x, y, which): x + y, whose backward returns None for one
    input. Behind that input: a leaf, a built-in op (which passes the undefined
    gradient on), or a custom Function (whose node gets zeros); now and then its
    .grad set beforehand, or a second backward; then backward (or autograd.grad
    with respect to an input or what is behind it)."""
    x = pick_graded(draw, g)
    u = g.pool[x]
    if tensor_kind(u) not in _GRADED or u.inference:
        return
    behind = draw(one_of((None, "mul_s", "fn_scale", "fn_view", "sin")))
    y0 = _graded_operand(draw, g, x)
    y = y0
    if behind is not None:
        y = apply_op(draw, g, behind, y0, no_grad=False) or y0
    if not draw(ints(0, 3)):  # y's .grad set beforehand: it stays as it was
        g.apply(_ones_like(draw, g, y0))
        g.apply(Step("set_grad", (y0, len(g.pool) - 1)))
    a, b = (x, y) if draw(BOOLS) else (y, x)  # (the row's `which` picks the None)
    z = apply_op(draw, g, "fn_none_grad", a, other=b, no_grad=draw(ints(0, 7)) == 7)
    if z is None:
        return
    if not draw(ints(0, 3)):  # autograd.grad, with respect to an input or a leaf behind one
        inp = draw(one_of((a, b, y0)))
        t = g.pool[z]
        if t.requires_grad and g.pool[inp].requires_grad:
            g.apply(_ones_like(draw, g, z))
            g.apply(Step("autograd_grad", (z, inp, len(g.pool) - 1), (True, True)))
            return
    add_backward(draw, g, z, retain=True)
    if draw(BOOLS):  # accumulation goes on into the other input only
        add_backward(draw, g, z)


def _ones_like(draw, g: Growth, t: int) -> Step:
    u = g.pool[t]
    return new_leaf(
        draw,
        g,
        shape=tuple(u.shape),
        dtype=u.dtype,
        device=u.device,
        requires_grad=False,
        inference=False,
    )


FUNCTION_MOTIFS += (_motif_backward_returns_none,)
