"""Motifs: short chains built so that aliasing, writes and backward meet, the
interactions the rules are about. Each is ordinary steps."""

from __future__ import annotations

from conformance.differential.choices import BOOLS, ints, one_of
from conformance.differential.function_motifs import FUNCTION_MOTIFS
from conformance.differential.growth import (
    ALIAS_FOR_WRITE,
    FAMILIES,
    NON_SAVERS,
    SAVERS,
    SAVERS_OF_ONE,
    Growth,
    add_backward,
    apply_op,
    broadcasts_into,
    fitting_ops,
    new_leaf,
    pick,
    pick_graded,
    tensor_kind,
)
from conformance.differential.inplace_view_motifs import INPLACE_VIEW_MOTIFS
from conformance.differential.lazy_motifs import LAZY_MOTIFS
from conformance.differential.mode_motifs import MODE_MOTIFS
from conformance.differential.row_params import CHOSEN, row_params
from conformance.differential.write_motifs import WRITE_MOTIFS
from oracle import OPS
from strategies.programs import Step, expand_shape


def _motif_written_after_use(draw, g: Growth) -> None:
    x = pick_graded(draw, g)
    # ops that save what the write changes (backward must refuse, or see the
    # new values through .data), and ops that save nothing (backward must not care)
    ops = fitting_ops(SAVERS if draw(BOOLS) else NON_SAVERS, g.pool[x])
    if not ops:
        return
    before = len(g.steps)
    y = apply_op(draw, g, draw(one_of(ops)), x, no_grad=False)
    if y is None:
        return
    operands = g.steps[-1].tensors if len(g.steps) > before else (x,)
    target = y if draw(BOOLS) else draw(one_of(tuple(operands)))
    alias = draw(one_of(ALIAS_FOR_WRITE))
    if alias is not None:
        target = apply_op(draw, g, alias, target, no_grad=False) or target
    writes = fitting_ops(FAMILIES["inplace"], g.pool[target])
    if writes:
        t = g.pool[target]
        # a leaf that requires grad (or a view of one) is only written under no_grad
        leafish = t.requires_grad and (t._fn is None or (t.base is not None and t.base._fn is None))
        apply_op(draw, g, draw(one_of(writes)), target, no_grad=True if leafish else None)
    add_backward(draw, g, y)


def _motif_written_through_alias(draw, g: Growth) -> None:
    """y = op(x) saving y or x; write the saved one through .data or detach();
    backward: it must raise (detach) or see the new values (.data)."""
    x = pick_graded(draw, g)
    ops = fitting_ops(SAVERS_OF_ONE, g.pool[x])
    if not ops:
        return
    op = draw(one_of(ops))
    y = apply_op(draw, g, op, x, no_grad=False)
    if y is None:
        return
    saved = y if "result" in OPS[op].saves else x
    alias = apply_op(draw, g, draw(one_of(("data", "detach"))), saved, no_grad=False)
    if alias is None:
        return
    writes = fitting_ops(FAMILIES["inplace"], g.pool[alias])
    if writes:
        apply_op(draw, g, draw(one_of(writes)), alias, no_grad=False)
    add_backward(draw, g, y)


def _motif_copy_flows(draw, g: Growth) -> None:
    src = pick_graded(draw, g)
    how = draw(one_of(("zeros_like", "leaf")))
    if how == "zeros_like":
        dst = apply_op(draw, g, "zeros_like", src, no_grad=False)
    else:
        s = g.pool[src]
        shape = draw(expand_shape, tuple(s.shape))
        g.apply(new_leaf(draw, g, shape=shape, requires_grad=False))
        dst = len(g.pool) - 1
    if dst is not None and draw(BOOLS):  # into a view: strided, offset, transposed
        view = draw(one_of(("transpose", "t", "getitem", "permute")))
        dst = apply_op(draw, g, view, dst, no_grad=False) or dst
    if dst is None or not broadcasts_into(g.pool[src].shape, g.pool[dst].shape):
        return
    apply_op(draw, g, "copy_", dst, other=src)
    out = dst
    if draw(BOOLS):
        out = (
            apply_op(draw, g, draw(one_of(fitting_ops(FAMILIES["math"], g.pool[dst]))), dst) or dst
        )
    add_backward(draw, g, out)


def _motif_clone_flows(draw, g: Growth) -> None:
    x = pick_graded(draw, g)
    c = apply_op(draw, g, "clone", x, no_grad=False)
    if c is None:
        return
    if draw(BOOLS):
        writes = fitting_ops(FAMILIES["inplace"], g.pool[c])
        if writes:
            apply_op(draw, g, draw(one_of(writes)), c)
    if draw(BOOLS):  # a second path from x
        other = apply_op(draw, g, draw(one_of(fitting_ops(FAMILIES["math"], g.pool[x]))), x)
        if other is not None:
            add_backward(draw, g, other, retain=True)
    add_backward(draw, g, c)


def _motif_view_written(draw, g: Growth) -> None:
    x = pick_graded(draw, g)
    base = apply_op(draw, g, draw(one_of(("mul_s", "add_s", "clone"))), x, no_grad=False)
    if base is None:
        return
    earlier = apply_op(draw, g, draw(one_of(FAMILIES["view"])), base) if draw(BOOLS) else None
    view = apply_op(draw, g, draw(one_of(FAMILIES["view"])), base)
    if view is None:
        return
    writes = fitting_ops(FAMILIES["inplace"] + FAMILIES["copy"], g.pool[view])
    if writes:
        apply_op(draw, g, draw(one_of(writes)), view)
    add_backward(draw, g, draw(one_of(tuple(i for i in (base, view, earlier) if i is not None))))


def _motif_accumulates(draw, g: Growth) -> None:
    x = pick_graded(draw, g)
    y = apply_op(draw, g, draw(one_of(fitting_ops(FAMILIES["math"], g.pool[x]))), x)
    if y is None:
        return
    add_backward(draw, g, y, retain=True)
    second = y if draw(BOOLS) else apply_op(draw, g, draw(one_of(FAMILIES["math"])), x)
    add_backward(draw, g, second if second is not None else y)


def _window(draw, shape: tuple[int, ...]) -> tuple:
    """A basic index that keeps most of a tensor but not all: the last
    dimension always loses an end or every other element, the others now and
    then, so the view strides past what it leaves out and neither starts nor
    ends where its storage does."""
    parts = []
    for d, n in enumerate(shape):
        last = d == len(shape) - 1
        if n < 2 or not (last or draw(ints(0, 2)) == 0):
            parts.append(slice(None))
        elif n == 2:
            start = draw(ints(0, 1))
            parts.append(slice(start, start + 1))
        else:
            trims = (slice(1, None), slice(0, n - 1), slice(None, None, 2), slice(1, n - 1))
            parts.append(trims[draw(ints(0, 3))])
    return tuple(parts)


def _motif_aliases_of_a_view(draw, g: Growth) -> None:
    x = pick(draw, g) if draw(BOOLS) else pick_graded(draw, g)
    if x is None:
        return
    inference_alias = g.pool[x].inference and not g.pool[x].counterless  # see _apply_op
    if g.pool[x].shape and not inference_alias and draw(ints(0, 2)):
        before = len(g.pool)
        g.apply(Step("getitem", (x,), (_window(draw, g.pool[x].shape),), draw(ints(0, 5)) == 5))
        view = len(g.pool) - 1 if len(g.pool) > before else None
    else:
        views = ("transpose", "t", "getitem", "permute", "select")
        view = apply_op(draw, g, draw(one_of(views)), x)
    if view is None:
        return
    alias = apply_op(draw, g, draw(one_of(("detach", "data", "clone"))), view)
    if alias is None:
        return
    target = draw(one_of((alias, x, view)))
    writes = fitting_ops(FAMILIES["inplace"] + FAMILIES["copy"], g.pool[target])
    if writes:
        apply_op(draw, g, draw(one_of(writes)), target, no_grad=draw(BOOLS))


def _motif_requires_grad_flags(draw, g: Growth) -> None:
    x = pick(draw, g)
    if x is None:
        return
    g.apply(Step("requires_grad_", (x,), (draw(ints(0, 2)) > 0,)))
    if draw(BOOLS):
        g.apply(Step("retain_grad", (x,)))
    y = apply_op(draw, g, draw(one_of(FAMILIES["math"])), x)
    if y is not None:
        add_backward(draw, g, y)


def _motif_no_grad_block(draw, g: Growth) -> None:
    x = pick_graded(draw, g)
    for _ in range(draw(ints(1, 3))):
        family = draw(one_of(("math", "view", "inplace", "alias")))
        x = apply_op(draw, g, draw(one_of(FAMILIES[family])), x, no_grad=True) or x
    if draw(BOOLS):  # and back in grad mode, on what no_grad made
        writes = fitting_ops(FAMILIES["inplace"], g.pool[x])
        if writes:
            apply_op(draw, g, draw(one_of(writes)), x, no_grad=False)


def _motif_write_expanded(draw, g: Growth) -> None:
    x = pick(draw, g) if draw(BOOLS) else pick_graded(draw, g)
    if x is None:
        return
    if g.pool[x].inference and not g.pool[x].counterless:
        return  # views of .data or detach() of an inference tensor: not modelled
    shape = g.pool[x].shape
    grown = (2,) + tuple(shape)
    g.apply(Step("expand", (x,), (grown,), draw(BOOLS)))
    v = len(g.pool) - 1
    writes = fitting_ops(FAMILIES["inplace"] + FAMILIES["copy"], g.pool[v])
    if writes and g.pool[v].shape == grown:
        apply_op(draw, g, draw(one_of(writes)), v)


def _motif_inference_meets_grad(draw, g: Growth) -> None:
    x = pick_graded(draw, g)
    shape = g.pool[x].shape
    made = new_leaf(
        draw,
        g,
        shape=shape,
        dtype=g.pool[x].dtype,
        device=g.pool[x].device,
        requires_grad=False,
        inference=True,
    )
    g.apply(made)
    t = len(g.pool) - 1
    op = draw(one_of(("mul", "div", "add", "sub")))
    first, second = (x, t) if draw(BOOLS) else (t, x)
    y = apply_op(draw, g, op, first, other=second, no_grad=False)
    if y is not None and y != first:
        add_backward(draw, g, y)


# the view ops of tensor_view.rst beyond the first ten
SURFACE_VIEWS = tuple(sorted(CHOSEN))


def _motif_surface_view(draw, g: Growth) -> None:
    """One of the wider surface's views (a window, a reordering, one output of
    several), maybe a view of it, then a write through it or its base (in grad
    mode or not), then backward: the rules on multi-output views meet CopySlices."""
    x = pick_graded(draw, g) if draw(ints(0, 3)) else pick(draw, g)
    if x is None:
        return
    base = apply_op(draw, g, draw(one_of(("mul_s", "clone"))), x, no_grad=False) or x
    view = apply_op(draw, g, draw(one_of(SURFACE_VIEWS)), base, no_grad=draw(ints(0, 5)) == 5)
    if view is None:
        return
    if draw(BOOLS):
        view = apply_op(draw, g, draw(one_of(FAMILIES["view"])), view) or view
    target = view if draw(ints(0, 2)) else base
    writes = fitting_ops(FAMILIES["inplace"], g.pool[target])
    if writes:
        apply_op(draw, g, draw(one_of(writes)), target, no_grad=draw(ints(0, 2)) == 0)
    add_backward(draw, g, draw(one_of((base, view))))


def _motif_indexed_write(draw, g: Growth) -> None:
    """A write at indexed positions (x[idx] = v, index_put_, masked_fill_,
    index_add_, index_copy_, scatter_) into a tensor in the graph, or a view of
    one, then backward: the source's gradient is what reached its positions."""
    x = pick_graded(draw, g)
    base = apply_op(draw, g, draw(one_of(("mul_s", "clone"))), x, no_grad=False) or x
    target = base
    if draw(BOOLS):
        target = apply_op(draw, g, draw(one_of(("transpose", "getitem", "narrow"))), base) or base
    apply_op(draw, g, draw(one_of(FAMILIES["index"])), target, no_grad=draw(ints(0, 5)) == 5)
    add_backward(draw, g, draw(one_of((base, target))))


def _motif_autograd_grad(draw, g: Growth) -> None:
    """torch.autograd.grad of a chain with respect to its leaf, an intermediate
    or an unrelated tensor; then, now and then, backward: .grad holds only what
    backward put there."""
    x = pick_graded(draw, g)
    y = apply_op(draw, g, draw(one_of(fitting_ops(FAMILIES["math"], g.pool[x]))), x, no_grad=False)
    if y is None:
        return
    out, savers = y, fitting_ops(SAVERS_OF_ONE, g.pool[y])
    if savers and draw(BOOLS):
        out = apply_op(draw, g, draw(one_of(savers)), y) or y
    wrt = draw(one_of((x, x, y, pick_graded(draw, g))))
    t = g.pool[out]
    made = dict(shape=t.shape, dtype=t.dtype, device=t.device, requires_grad=False, inference=False)
    g.apply(new_leaf(draw, g, **made))
    # retain_graph and allow_unused, each True, False or left out: an unrelated
    # wrt without allow_unused raises
    flags = row_params(draw, "autograd_grad", t)
    g.apply(Step("autograd_grad", (out, wrt, len(g.pool) - 1), flags))
    if draw(BOOLS):
        add_backward(draw, g, out)


# outputs of ops that return several tensors and are no views (max(dim), aminmax,
# var_mean, std_mean), and of unsafe_split and co. (pieces that are no views)
MULTI_OUTPUT_ROWS = tuple(n for n, s in OPS.items() if s.impl in ("multi", "unsafe_split"))


def _motif_multi_output_written(draw, g: Growth) -> None:
    """An output of a multi-output op that is no view, or a piece of unsafe_split,
    unsafe_chunk or unsafe_split_with_sizes, of a tensor in the graph; written in
    place (maybe under no_grad); then backward through it: the write breaks backward
    where the node saved that output (std_mean's std, aminmax's min and max), and
    not where it saved none (the unsafe pieces: the opposite of split)."""
    x = pick_graded(draw, g)
    base = apply_op(draw, g, "mul_s", x, no_grad=False)
    ops = fitting_ops(MULTI_OUTPUT_ROWS, g.pool[base]) if base is not None else ()
    out = apply_op(draw, g, draw(one_of(ops)), base, no_grad=False) if ops else None
    if out is None or out == base:
        return
    writes = fitting_ops(FAMILIES["inplace"], g.pool[out])
    if writes:
        apply_op(draw, g, draw(one_of(writes)), out, no_grad=draw(ints(0, 3)) == 0)
    add_backward(draw, g, out)


MOTIFS = (
    _motif_autograd_grad,
    _motif_indexed_write,
    _motif_surface_view,
    _motif_surface_view,  # some twenty ops share it
    _motif_inference_meets_grad,
    _motif_written_through_alias,
    _motif_written_after_use,
    _motif_written_after_use,  # the heart of the rules: twice as often
    _motif_aliases_of_a_view,
    _motif_aliases_of_a_view,  # offsets and strides: where backends most often go wrong
    _motif_requires_grad_flags,
    _motif_no_grad_block,
    _motif_write_expanded,
    _motif_copy_flows,
    _motif_clone_flows,
    _motif_view_written,
    _motif_accumulates,
)

# The wider surface (hooks, out=, resize_, custom Functions, saved-tensor
# hooks, modes, dtype views): drawn as a family of its own (generate.py), so
# that a motif added here shares that family's turns and never thins out the
# motifs above, which the older rules' planted violations rely on.
SURFACE_MOTIFS: tuple = ()
SURFACE_MOTIFS += MODE_MOTIFS  # grad modes as modes of their own (mode_motifs.py)
_FN_SCALES = (2.0, -0.5, 3.0)
_FN_OPS = ("fn_scale",) * 3 + ("fn_mul_",) * 2 + ("fn_nondiff",) + ("fn_view",) * 2


def _fn_step(draw, g: Growth, op: str, x: int) -> int | None:
    """A custom Function's (or hooked op's) step on pool tensor x, mostly in grad
    mode; the index of its result (x itself for MulDirty, in grad mode)."""
    if tensor_kind(g.pool[x]) not in OPS[op].dtypes or g.pool[x].inference:
        return None
    if op.startswith("sin_hooked_") and (g.pool[x].conj or g.pool[x].neg):
        return None  # saved-tensor hooks on a conjugate/negative-bit view: not modelled
    params = (draw(one_of(_FN_SCALES)),) if OPS[op].params else ()
    before = len(g.pool)
    g.apply(Step(op, (x,), params, draw(ints(0, 5)) == 5))  # now and then under no_grad
    return len(g.pool) - 1 if len(g.pool) > before else x


def _motif_custom_function(draw, g: Growth) -> None:
    """A custom autograd.Function on a leaf, an intermediate or a view of one:
    Scale (its saved input then written in place or not), MulDirty (mark_dirty),
    SignND (a non-differentiable output) or ViewFn (a view, then written or its
    base written); then backward."""
    x = pick_graded(draw, g)
    y = x
    if draw(ints(0, 3)):  # mostly on an intermediate, so that writes are allowed
        y = apply_op(draw, g, draw(one_of(("mul_s", "clone"))), x, no_grad=False) or x
        if draw(ints(0, 2)) == 0:  # or a view of one
            y = apply_op(draw, g, draw(one_of(("getitem", "transpose", "select"))), y) or y
    # Scale most: its rule needs a write after the call, and a dtype a narrow bug hits
    op = draw(one_of(_FN_OPS))
    z = _fn_step(draw, g, op, y)
    if z is None:
        return
    written = None
    if op == "fn_scale" and draw(ints(0, 3)):  # its saved input, mostly
        written = y
    elif op == "fn_view" and draw(BOOLS):  # its output or its base
        written = draw(one_of((y, z)))
    elif op == "fn_mul_" and draw(BOOLS):
        written = z
    if written is not None:
        writes = fitting_ops(("mul_s_", "add_s_", "neg_"), g.pool[written])
        leaf = g.pool[written]._fn is None and g.pool[written].base is None
        if writes:  # (a leaf: under no_grad, else the write itself is refused)
            no_grad = leaf or draw(ints(0, 3)) == 0
            apply_op(draw, g, draw(one_of(writes)), written, no_grad=no_grad)
    out = z
    if op == "fn_nondiff":  # backward through something that requires grad
        out = apply_op(draw, g, "mul", y, other=z, no_grad=False) or y
    add_backward(draw, g, out if draw(ints(0, 3)) else y)


def _motif_saved_tensor_hooks(draw, g: Growth) -> None:
    """sin under saved_tensors_hooks (pack x.detach() / unpack as is; or pack 2x /
    unpack twice that), its saved input then written in place or not; backward."""
    x = pick_graded(draw, g)
    y = x
    if draw(ints(0, 3)):
        y = apply_op(draw, g, draw(one_of(("mul_s", "clone"))), x, no_grad=False) or x
    op = draw(one_of(("sin_hooked_detach", "sin_hooked_x2_x2")))
    z = _fn_step(draw, g, op, y)
    if z is None:
        return
    if draw(BOOLS):  # the saved input written in place (under no_grad if a leaf)
        writes = fitting_ops(("mul_s_", "add_s_", "neg_"), g.pool[y])
        if writes:
            leaf = g.pool[y]._fn is None
            apply_op(draw, g, draw(one_of(writes)), y, no_grad=leaf or None)
    add_backward(draw, g, z)


def _motif_saved_detached(draw, g: Growth) -> None:
    """b = x * 1 (a non-leaf that is no view); y = op(b) for an op that saves its
    input or its result, or a custom Function that saves b with
    ctx.save_for_backward; z = y * c (saves nothing); then b or y detached in
    place; backward from z: torch refuses an op's saved input detached in place
    and reads a saved output, or a Function's, as it is
    (detach.inplace_saved_input_raises)."""
    x = pick_graded(draw, g)
    if not g.pool[x].requires_grad or tensor_kind(g.pool[x]) not in ("float", "complex"):
        return
    b = apply_op(draw, g, "mul_s", x, no_grad=False)
    savers = (*fitting_ops(SAVERS_OF_ONE, g.pool[b]), "fn_scale") if b is not None else ()
    y = apply_op(draw, g, draw(one_of(savers)), b, no_grad=False) if savers else None
    if y is None or g.pool[y].base is not None:
        return
    z = apply_op(draw, g, "mul_s", y, no_grad=False)
    if z is None:
        return
    g.apply(Step("detach_", (draw(one_of((b, y))),)))
    add_backward(draw, g, z)


SURFACE_MOTIFS += (
    _motif_multi_output_written,
    _motif_custom_function,
    _motif_saved_tensor_hooks,
    _motif_saved_detached,
)
SURFACE_MOTIFS += FUNCTION_MOTIFS  # AddDirty, ViewFn of a plain tensor (function_motifs.py)
SURFACE_MOTIFS += WRITE_MOTIFS  # out=, resize_, set_, _foreach_ (write_motifs.py)
SURFACE_MOTIFS += INPLACE_VIEW_MOTIFS  # transpose_, t_... (inplace_view_motifs.py)
SURFACE_MOTIFS += LAZY_MOTIFS  # conj(), _neg_view(), view_as_real()... (lazy_motifs.py)
from conformance.differential.gradapi import GRADAPI_MOTIFS  # noqa: E402

SURFACE_MOTIFS += GRADAPI_MOTIFS  # hooks, retain_grad, create_graph (gradapi.py)
