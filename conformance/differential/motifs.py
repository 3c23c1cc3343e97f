"""Motifs: short chains built so that aliasing, writes and backward meet, the
interactions the rules are about. Each is ordinary steps."""

from __future__ import annotations

from conformance.differential.choices import _BOOLS, _ints, _one_of
from conformance.differential.growth import (
    ALIAS_FOR_WRITE,
    FAMILIES,
    NON_SAVERS,
    SAVERS,
    SAVERS_OF_ONE,
    Growth,
    _apply_op,
    _backward,
    _fitting,
    _graded,
    _into,
    _kind,
    _leaf,
    _pick,
)
from conformance.differential.lazy_motifs import LAZY_MOTIFS
from conformance.differential.mode_motifs import MODE_MOTIFS
from conformance.differential.view_params import CHOSEN
from conformance.differential.write_motifs import WRITE_MOTIFS
from oracle import OPS
from strategies.programs import Step, expand_shape


def _motif_written_after_use(draw, g: Growth) -> None:
    x = _graded(draw, g)
    # ops that save what the write changes (backward must refuse, or see the
    # new values through .data), and ops that save nothing (backward must not care)
    ops = _fitting(SAVERS if draw(_BOOLS) else NON_SAVERS, g.pool[x])
    if not ops:
        return
    before = len(g.steps)
    y = _apply_op(draw, g, draw(_one_of(ops)), x, no_grad=False)
    if y is None:
        return
    operands = g.steps[-1].tensors if len(g.steps) > before else (x,)
    target = y if draw(_BOOLS) else draw(_one_of(tuple(operands)))
    alias = draw(_one_of(ALIAS_FOR_WRITE))
    if alias is not None:
        target = _apply_op(draw, g, alias, target, no_grad=False) or target
    writes = _fitting(FAMILIES["inplace"], g.pool[target])
    if writes:
        t = g.pool[target]
        # a leaf that requires grad (or a view of one) is only written under no_grad
        leafish = t.requires_grad and (t._fn is None or (t.base is not None and t.base._fn is None))
        _apply_op(draw, g, draw(_one_of(writes)), target, no_grad=True if leafish else None)
    _backward(draw, g, y)


def _motif_written_through_alias(draw, g: Growth) -> None:
    """y = op(x) saving y or x; write the saved one through .data or detach();
    backward: it must raise (detach) or see the new values (.data)."""
    x = _graded(draw, g)
    ops = _fitting(SAVERS_OF_ONE, g.pool[x])
    if not ops:
        return
    op = draw(_one_of(ops))
    y = _apply_op(draw, g, op, x, no_grad=False)
    if y is None:
        return
    saved = y if "result" in OPS[op].saves else x
    alias = _apply_op(draw, g, draw(_one_of(("data", "detach"))), saved, no_grad=False)
    if alias is None:
        return
    writes = _fitting(FAMILIES["inplace"], g.pool[alias])
    if writes:
        _apply_op(draw, g, draw(_one_of(writes)), alias, no_grad=False)
    _backward(draw, g, y)


def _motif_copy_flows(draw, g: Growth) -> None:
    src = _graded(draw, g)
    how = draw(_one_of(("zeros_like", "leaf")))
    if how == "zeros_like":
        dst = _apply_op(draw, g, "zeros_like", src, no_grad=False)
    else:
        s = g.pool[src]
        shape = draw(expand_shape, tuple(s.shape))
        g.apply(_leaf(draw, g, shape=shape, requires_grad=False))
        dst = len(g.pool) - 1
    if dst is not None and draw(_BOOLS):  # into a view: strided, offset, transposed
        view = draw(_one_of(("transpose", "t", "getitem", "permute")))
        dst = _apply_op(draw, g, view, dst, no_grad=False) or dst
    if dst is None or not _into(g.pool[src].shape, g.pool[dst].shape):
        return
    _apply_op(draw, g, "copy_", dst, other=src)
    out = dst
    if draw(_BOOLS):
        out = _apply_op(draw, g, draw(_one_of(_fitting(FAMILIES["math"], g.pool[dst]))), dst) or dst
    _backward(draw, g, out)


def _motif_clone_flows(draw, g: Growth) -> None:
    x = _graded(draw, g)
    c = _apply_op(draw, g, "clone", x, no_grad=False)
    if c is None:
        return
    if draw(_BOOLS):
        writes = _fitting(FAMILIES["inplace"], g.pool[c])
        if writes:
            _apply_op(draw, g, draw(_one_of(writes)), c)
    if draw(_BOOLS):  # a second path from x
        other = _apply_op(draw, g, draw(_one_of(_fitting(FAMILIES["math"], g.pool[x]))), x)
        if other is not None:
            _backward(draw, g, other, retain=True)
    _backward(draw, g, c)


def _motif_view_written(draw, g: Growth) -> None:
    x = _graded(draw, g)
    base = _apply_op(draw, g, draw(_one_of(("mul_s", "add_s", "clone"))), x, no_grad=False)
    if base is None:
        return
    earlier = _apply_op(draw, g, draw(_one_of(FAMILIES["view"])), base) if draw(_BOOLS) else None
    view = _apply_op(draw, g, draw(_one_of(FAMILIES["view"])), base)
    if view is None:
        return
    writes = _fitting(FAMILIES["inplace"] + FAMILIES["copy"], g.pool[view])
    if writes:
        _apply_op(draw, g, draw(_one_of(writes)), view)
    _backward(draw, g, draw(_one_of(tuple(i for i in (base, view, earlier) if i is not None))))


def _motif_accumulates(draw, g: Growth) -> None:
    x = _graded(draw, g)
    y = _apply_op(draw, g, draw(_one_of(_fitting(FAMILIES["math"], g.pool[x]))), x)
    if y is None:
        return
    _backward(draw, g, y, retain=True)
    second = y if draw(_BOOLS) else _apply_op(draw, g, draw(_one_of(FAMILIES["math"])), x)
    _backward(draw, g, second if second is not None else y)


def _window(draw, shape: tuple[int, ...]) -> tuple:
    """A basic index that keeps most of a tensor but not all: the last
    dimension always loses an end or every other element, the others now and
    then, so the view strides past what it leaves out and neither starts nor
    ends where its storage does."""
    parts = []
    for d, n in enumerate(shape):
        last = d == len(shape) - 1
        if n < 2 or not (last or draw(_ints(0, 2)) == 0):
            parts.append(slice(None))
        elif n == 2:
            start = draw(_ints(0, 1))
            parts.append(slice(start, start + 1))
        else:
            trims = (slice(1, None), slice(0, n - 1), slice(None, None, 2), slice(1, n - 1))
            parts.append(trims[draw(_ints(0, 3))])
    return tuple(parts)


def _motif_aliases_of_a_view(draw, g: Growth) -> None:
    x = _pick(draw, g) if draw(_BOOLS) else _graded(draw, g)
    if x is None:
        return
    inference_alias = g.pool[x].inference and not g.pool[x].counterless  # see _apply_op
    if g.pool[x].shape and not inference_alias and draw(_ints(0, 2)):
        before = len(g.pool)
        g.apply(Step("getitem", (x,), (_window(draw, g.pool[x].shape),), draw(_ints(0, 5)) == 5))
        view = len(g.pool) - 1 if len(g.pool) > before else None
    else:
        views = ("transpose", "t", "getitem", "permute", "select")
        view = _apply_op(draw, g, draw(_one_of(views)), x)
    if view is None:
        return
    alias = _apply_op(draw, g, draw(_one_of(("detach", "data", "clone"))), view)
    if alias is None:
        return
    target = draw(_one_of((alias, x, view)))
    writes = _fitting(FAMILIES["inplace"] + FAMILIES["copy"], g.pool[target])
    if writes:
        _apply_op(draw, g, draw(_one_of(writes)), target, no_grad=draw(_BOOLS))


def _motif_requires_grad_flags(draw, g: Growth) -> None:
    x = _pick(draw, g)
    if x is None:
        return
    g.apply(Step("requires_grad_", (x,), (draw(_ints(0, 2)) > 0,)))
    if draw(_BOOLS):
        g.apply(Step("retain_grad", (x,)))
    y = _apply_op(draw, g, draw(_one_of(FAMILIES["math"])), x)
    if y is not None:
        _backward(draw, g, y)


def _motif_no_grad_block(draw, g: Growth) -> None:
    x = _graded(draw, g)
    for _ in range(draw(_ints(1, 3))):
        family = draw(_one_of(("math", "view", "inplace", "alias")))
        x = _apply_op(draw, g, draw(_one_of(FAMILIES[family])), x, no_grad=True) or x
    if draw(_BOOLS):  # and back in grad mode, on what no_grad made
        writes = _fitting(FAMILIES["inplace"], g.pool[x])
        if writes:
            _apply_op(draw, g, draw(_one_of(writes)), x, no_grad=False)


def _motif_write_expanded(draw, g: Growth) -> None:
    x = _pick(draw, g) if draw(_BOOLS) else _graded(draw, g)
    if x is None:
        return
    if g.pool[x].inference and not g.pool[x].counterless:
        return  # views of .data or detach() of an inference tensor: not modelled
    shape = g.pool[x].shape
    grown = (2,) + tuple(shape)
    g.apply(Step("expand", (x,), (grown,), draw(_BOOLS)))
    v = len(g.pool) - 1
    writes = _fitting(FAMILIES["inplace"] + FAMILIES["copy"], g.pool[v])
    if writes and g.pool[v].shape == grown:
        _apply_op(draw, g, draw(_one_of(writes)), v)


def _motif_inference_meets_grad(draw, g: Growth) -> None:
    x = _graded(draw, g)
    shape = g.pool[x].shape
    made = _leaf(
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
    op = draw(_one_of(("mul", "div", "add", "sub")))
    first, second = (x, t) if draw(_BOOLS) else (t, x)
    y = _apply_op(draw, g, op, first, other=second, no_grad=False)
    if y is not None and y != first:
        _backward(draw, g, y)


# the view ops of tensor_view.rst beyond the first ten
SURFACE_VIEWS = tuple(sorted(CHOSEN))


def _motif_surface_view(draw, g: Growth) -> None:
    """One of the wider surface's views (a window, a reordering, one output of
    several), maybe a view of it, then a write through it or its base (in grad
    mode or not), then backward: the rules on multi-output views meet CopySlices."""
    x = _graded(draw, g) if draw(_ints(0, 3)) else _pick(draw, g)
    if x is None:
        return
    base = _apply_op(draw, g, draw(_one_of(("mul_s", "clone"))), x, no_grad=False) or x
    view = _apply_op(draw, g, draw(_one_of(SURFACE_VIEWS)), base, no_grad=draw(_ints(0, 5)) == 5)
    if view is None:
        return
    if draw(_BOOLS):
        view = _apply_op(draw, g, draw(_one_of(FAMILIES["view"])), view) or view
    target = view if draw(_ints(0, 2)) else base
    writes = _fitting(FAMILIES["inplace"], g.pool[target])
    if writes:
        _apply_op(draw, g, draw(_one_of(writes)), target, no_grad=draw(_ints(0, 2)) == 0)
    _backward(draw, g, draw(_one_of((base, view))))


def _motif_indexed_write(draw, g: Growth) -> None:
    """A write at indexed positions (x[idx] = v, index_put_, masked_fill_,
    index_add_, index_copy_, scatter_) into a tensor in the graph, or a view of
    one, then backward: the source's gradient is what reached its positions."""
    x = _graded(draw, g)
    base = _apply_op(draw, g, draw(_one_of(("mul_s", "clone"))), x, no_grad=False) or x
    target = base
    if draw(_BOOLS):
        target = _apply_op(draw, g, draw(_one_of(("transpose", "getitem", "narrow"))), base) or base
    _apply_op(draw, g, draw(_one_of(FAMILIES["index"])), target, no_grad=draw(_ints(0, 5)) == 5)
    _backward(draw, g, draw(_one_of((base, target))))


def _motif_autograd_grad(draw, g: Growth) -> None:
    """torch.autograd.grad of a chain with respect to its leaf, an intermediate
    or an unrelated tensor; then, now and then, backward: .grad holds only what
    backward put there."""
    x = _graded(draw, g)
    y = _apply_op(draw, g, draw(_one_of(_fitting(FAMILIES["math"], g.pool[x]))), x, no_grad=False)
    if y is None:
        return
    out, savers = y, _fitting(SAVERS_OF_ONE, g.pool[y])
    if savers and draw(_BOOLS):
        out = _apply_op(draw, g, draw(_one_of(savers)), y) or y
    wrt = draw(_one_of((x, x, y, _graded(draw, g))))
    t = g.pool[out]
    made = dict(shape=t.shape, dtype=t.dtype, device=t.device, requires_grad=False, inference=False)
    g.apply(_leaf(draw, g, **made))
    g.apply(Step("autograd_grad", (out, wrt, len(g.pool) - 1), (draw(_BOOLS),)))
    if draw(_BOOLS):
        _backward(draw, g, out)


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
    if _kind(g.pool[x]) not in OPS[op].dtypes or g.pool[x].inference:
        return None
    if op.startswith("sin_hooked_") and (g.pool[x].conj or g.pool[x].neg):
        return None  # saved-tensor hooks on a conjugate/negative-bit view: not modelled
    params = (draw(_one_of(_FN_SCALES)),) if OPS[op].params else ()
    before = len(g.pool)
    g.apply(Step(op, (x,), params, draw(_ints(0, 5)) == 5))  # now and then under no_grad
    return len(g.pool) - 1 if len(g.pool) > before else x


def _motif_custom_function(draw, g: Growth) -> None:
    """A custom autograd.Function on a leaf, an intermediate or a view of one:
    Scale (its saved input then written in place or not), MulDirty (mark_dirty),
    SignND (a non-differentiable output) or ViewFn (a view, then written or its
    base written); then backward."""
    x = _graded(draw, g)
    y = x
    if draw(_ints(0, 3)):  # mostly on an intermediate, so that writes are allowed
        y = _apply_op(draw, g, draw(_one_of(("mul_s", "clone"))), x, no_grad=False) or x
        if draw(_ints(0, 2)) == 0:  # or a view of one
            y = _apply_op(draw, g, draw(_one_of(("getitem", "transpose", "select"))), y) or y
    # Scale most: its rule needs a write after the call, and a dtype a narrow bug hits
    op = draw(_one_of(_FN_OPS))
    z = _fn_step(draw, g, op, y)
    if z is None:
        return
    written = None
    if op == "fn_scale" and draw(_ints(0, 3)):  # its saved input, mostly
        written = y
    elif op == "fn_view" and draw(_BOOLS):  # its output or its base
        written = draw(_one_of((y, z)))
    elif op == "fn_mul_" and draw(_BOOLS):
        written = z
    if written is not None:
        writes = _fitting(("mul_s_", "add_s_", "neg_"), g.pool[written])
        leaf = g.pool[written]._fn is None and g.pool[written].base is None
        if writes:  # (a leaf: under no_grad, else the write itself is refused)
            no_grad = leaf or draw(_ints(0, 3)) == 0
            _apply_op(draw, g, draw(_one_of(writes)), written, no_grad=no_grad)
    out = z
    if op == "fn_nondiff":  # backward through something that requires grad
        out = _apply_op(draw, g, "mul", y, other=z, no_grad=False) or y
    _backward(draw, g, out if draw(_ints(0, 3)) else y)


def _motif_saved_tensor_hooks(draw, g: Growth) -> None:
    """sin under saved_tensors_hooks (pack x.detach() / unpack as is; or pack 2x /
    unpack twice that), its saved input then written in place or not; backward."""
    x = _graded(draw, g)
    y = x
    if draw(_ints(0, 3)):
        y = _apply_op(draw, g, draw(_one_of(("mul_s", "clone"))), x, no_grad=False) or x
    op = draw(_one_of(("sin_hooked_detach", "sin_hooked_x2_x2")))
    z = _fn_step(draw, g, op, y)
    if z is None:
        return
    if draw(_BOOLS):  # the saved input written in place (under no_grad if a leaf)
        writes = _fitting(("mul_s_", "add_s_", "neg_"), g.pool[y])
        if writes:
            leaf = g.pool[y]._fn is None
            _apply_op(draw, g, draw(_one_of(writes)), y, no_grad=leaf or None)
    _backward(draw, g, z)


SURFACE_MOTIFS += (
    _motif_custom_function,
    _motif_saved_tensor_hooks,
)
SURFACE_MOTIFS += WRITE_MOTIFS  # out=, resize_, set_, _foreach_ (write_motifs.py)
SURFACE_MOTIFS += LAZY_MOTIFS  # conj(), _neg_view(), view_as_real()... (lazy_motifs.py)
from conformance.differential.gradapi import GRADAPI_MOTIFS  # noqa: E402

SURFACE_MOTIFS += GRADAPI_MOTIFS  # hooks, retain_grad, create_graph (gradapi.py)
