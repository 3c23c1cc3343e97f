"""The differential's gradient APIs: motifs that register tensor hooks and
post-accumulate-grad hooks before a backward, and which of their rules a
discrepancy breaks."""

from __future__ import annotations

from dataclasses import replace

import torch

from conformance.differential.choices import BOOLS, arguments, ints, one_of
from conformance.differential.growth import (
    FAMILIES,
    Growth,
    add_backward,
    apply_op,
    fitting_ops,
    new_leaf,
    pick_graded,
)
from oracle import OPS
from oracle.gradapi import SECOND_OPS
from oracle.hook_rows import hooking
from oracle.tensor import Accumulator
from strategies.argspace import Operand
from strategies.dtypes import DTYPES
from strategies.programs import Step

_TENSOR_HOOKS, _POST_HOOKS = hooking("tensor"), hooking("post_accumulate")
_NODE_PREHOOKS, _NODE_POSTHOOKS = hooking("node_pre"), hooking("node_post")
_NODE_HOOKS = (*_NODE_PREHOOKS, *_NODE_POSTHOOKS)
_VALUE_HOOKS = ("hook_mul", "hook_add")


def _hooked(draw, op: str, index: int) -> Step:
    """A step of hook row `op` on tensor `index`, its constant drawn from the
    row's argument space (a hook's constant does not depend on the tensor)."""
    space = OPS[op].args
    params = () if space is None else draw(arguments(space, Operand(())))
    return Step(op, (index,), params)


def _hook_step(draw, index: int) -> Step:
    op = draw(one_of(("hook_mul", "hook_mul", "hook_add", "hook_none", "hook_removed")))
    return _hooked(draw, op, index)


def _hookable(draw, g: Growth) -> int:
    """A tensor that requires grad, a view among others (register_hook on a view
    whose base was written in place crashes torch up to 2.14,
    pytorch/pytorch#196459: a known crash, drawn all the same)."""
    x = pick_graded(draw, g)
    t = g.pool[x]
    if t.inference:
        g.apply(new_leaf(draw, g, dtype=t.dtype, requires_grad=True, inference=False))
        x = len(g.pool) - 1
    return x


def _write_in_place(draw, g: Growth, t: int) -> None:
    """An in-place write on t in grad mode, where one fits."""
    writes = fitting_ops(("mul_s_", "add_s_", "exp_", "neg_"), g.pool[t])
    if writes:
        apply_op(draw, g, draw(one_of(writes)), t, no_grad=False)


def _read_out(draw, g: Growth, y: int) -> int:
    """What backward starts from: y, or now and then an op of y."""
    if draw(BOOLS):
        return apply_op(draw, g, draw(one_of(("mul_s", "sum", "exp"))), y, no_grad=False) or y
    return y


def _motif_tensor_hooks(draw, g: Growth) -> None:
    """y = op(x) (y retained now and then); one to three hooks on x or on y,
    now and then an in-place write on y between them (hooks stay with the
    grad_fn they were registered on); backward: the hooks' results are the
    gradients that flow on and reach .grad."""
    x = _hookable(draw, g)
    ops = fitting_ops(FAMILIES["math"], g.pool[x])
    y = apply_op(draw, g, draw(one_of(ops)), x, no_grad=False) if ops else None
    if y is None or g.pool[y].base is not None or not g.pool[y].requires_grad:
        y = x
    if y != x and draw(BOOLS):
        g.apply(Step("retain_grad", (y,)))
    target = draw(one_of((x, y, y)))
    for _ in range(draw(ints(1, 3))):
        g.apply(_hook_step(draw, target))
        if target != x and not draw(ints(0, 3)):
            _write_in_place(draw, g, target)
    out = _read_out(draw, g, y)
    add_backward(draw, g, out)


# torch 2.1 on; a build without it never draws the motif (the rule is skipped)
HAS_POST_HOOKS = hasattr(torch.Tensor, "register_post_accumulate_grad_hook")


def _motif_post_hook(draw, g: Growth) -> None:
    """A post-accumulate-grad hook that scales .grad, on a leaf (or on a
    non-leaf: refused), now and then a tensor hook too; then one or two
    backward calls: each scales what was accumulated, once."""
    if not HAS_POST_HOOKS:
        return
    x = _hookable(draw, g)
    for _ in range(draw(ints(1, 2))):
        g.apply(_hooked(draw, "post_hook_mul", x))
    if not draw(ints(0, 3)):
        g.apply(_hook_step(draw, x))
    ops = fitting_ops(FAMILIES["math"], g.pool[x])
    y = apply_op(draw, g, draw(one_of(ops)), x, no_grad=False) if ops else None
    y = x if y is None else y
    if draw(BOOLS):
        add_backward(draw, g, y, retain=True)
    add_backward(draw, g, y)


def _motif_retained_written(draw, g: Growth) -> None:
    """y = op(x), retained; backward now and then; an in-place write to y or
    through a view of it; one or two backward calls: .grad adds up, and is the
    gradient of y's newest version (release-dependent for a view's write)."""
    x = _hookable(draw, g)
    ops = fitting_ops(FAMILIES["math"], g.pool[x])
    y = apply_op(draw, g, draw(one_of(ops)), x, no_grad=False) if ops else None
    if y is None or g.pool[y].base is not None or g.pool[y]._fn is None:
        return
    g.apply(Step("retain_grad", (y,)))
    if draw(BOOLS):
        add_backward(draw, g, y, retain=True)
    target = y
    if draw(BOOLS):
        view = draw(one_of(("narrow", "getitem", "transpose", "select")))
        target = apply_op(draw, g, view, y, no_grad=False) or y
    writes = fitting_ops(("mul_s_", "add_s_", "exp_", "neg_", "sin_"), g.pool[target])
    if writes:
        apply_op(draw, g, draw(one_of(writes)), target, no_grad=False)
    add_backward(draw, g, y)
    if draw(BOOLS):
        add_backward(draw, g, y)


def _motif_double_backward(draw, g: Growth) -> None:
    """out = op(x) for an op whose second derivative the model has; d =
    torch.autograd.grad(out, x, v, create_graph=True); backward through d:
    the second derivative reaches x.grad (d of a linear op has no graph:
    backward raises); now and then a backward through out (the graph kept)."""
    floats = tuple(d for d in g.dtypes if DTYPES[d].kind == "float" and DTYPES[d].can_require_grad)
    if not floats:
        return
    g.apply(new_leaf(draw, g, dtype=draw(one_of(floats)), requires_grad=True, inference=False))
    x = len(g.pool) - 1
    out = apply_op(draw, g, draw(one_of(SECOND_OPS)), x, no_grad=False)
    if out is None or out == x:
        return
    t = g.pool[out]
    made = dict(shape=t.shape, dtype=t.dtype, device=t.device, requires_grad=False, inference=False)
    g.apply(new_leaf(draw, g, **made))
    before = len(g.pool)
    g.apply(Step("grad_cg", (out, x, len(g.pool) - 1)))
    if len(g.pool) > before:
        add_backward(draw, g, len(g.pool) - 1)
    if draw(BOOLS):
        add_backward(draw, g, out)


# ops whose torch grad_fn is one node, the model's, with the first operand's edge first
_NODE_OPS = ("neg", "exp", "tanh", "sigmoid", "relu", "sin", "cos", "abs", "pow_s", "add", "sub")
_NODE_OPS += ("mul", "add_s", "sub_s", "mul_s", "div_s", "sum", "mean", "sum_dim")
_PRE = ("node_prehook_mul", "node_prehook_mul", "node_prehook_add", "node_prehook_none")
_PRE += ("node_prehook_removed",)
_POST = ("node_hook_mul", "node_hook_mul", "node_hook_add", "node_hook_none", "node_hook_removed")
_ACC = ("acc_prehook_mul", "acc_prehook_add")


def _node_hook_step(draw, index: int, rows: tuple[str, ...]) -> Step:
    return _hooked(draw, draw(one_of(rows)), index)


def _motif_node_hooks(draw, g: Growth) -> None:
    """y = op(x); one to three Node hooks: pre-hooks and (post) hooks on
    y.grad_fn, pre-hooks on the node y.grad_fn.next_functions[0][0] (x's
    AccumulateGrad, or y's node before a write); now and then a tensor hook
    on y or x (on y after a pre-hook that does not commute with it: the
    tensor hook runs first), an in-place write on y between the hooks (they
    stay with their node); one or two backward calls. y is retained only
    without pre-hooks that change its gradient: torch runs retain_grad before
    them, the notes list it after (docs/findings.md)."""
    x = _hookable(draw, g)
    ops = fitting_ops(_NODE_OPS, g.pool[x])
    y = apply_op(draw, g, draw(one_of(ops)), x, no_grad=False) if ops else None
    if y is None or y == x or g.pool[y].base is not None or g.pool[y]._fn is None:
        return
    made = g.pool[y]._fn
    retain = not draw(ints(0, 3))
    if retain:
        g.apply(Step("retain_grad", (y,)))
    elif draw(BOOLS):  # a pre-hook, then a tensor hook that does not commute with it
        pre = draw(one_of(("node_prehook_mul", "node_prehook_add")))
        g.apply(_node_hook_step(draw, y, (pre,)))
        op = "hook_add" if pre == "node_prehook_mul" else "hook_mul"
        g.apply(_hooked(draw, op, y))
    for _ in range(draw(ints(1, 3))):  # (short: a long motif thins out the others)
        rows = draw(one_of(("pre", "pre", "post", "post", "acc")))
        fn = g.pool[y]._fn
        first = fn.edges[0] if fn is not None and fn.edges else None
        if rows == "acc" and not (isinstance(first, Accumulator) or first is made):
            rows = "post"
        if rows == "pre":
            chosen = ("node_prehook_none", "node_prehook_removed") if retain else _PRE
        else:
            chosen = _POST if rows == "post" else _ACC
        g.apply(_node_hook_step(draw, y, chosen))
        if not draw(ints(0, 3)):  # a tensor hook, after the Node hooks before it
            g.apply(_hook_step(draw, draw(one_of((x, y, y)))))
        if not draw(ints(0, 4)):
            _write_in_place(draw, g, y)
    out = _read_out(draw, g, y)
    if draw(BOOLS):
        add_backward(draw, g, out, retain=True)
    add_backward(draw, g, out)


# views a hook is registered on: plain ones, and one output of several (whose
# in-place writes are refused, and whose grad_fn a write to the base makes raise)
_HOOKED_VIEWS = ("narrow", "getitem", "transpose", "select", "unbind_k", "split_k", "chunk_k")


def _motif_view_hooks(draw, g: Growth) -> None:
    """A hook on a view v of y = op(x) (v retained now and then), then now and
    then a write to y or to a sibling view of v: the hook stays with v's history
    before the write, so it runs for gradients that flow through the old v and
    not for those through v's new history. Now and then the write comes first:
    register_hook on a view whose base was written in place crashes torch up to
    2.14 (pytorch/pytorch#196459, a known crash)."""
    x = _hookable(draw, g)
    ops = fitting_ops(FAMILIES["math"], g.pool[x])
    y = apply_op(draw, g, draw(one_of(ops)), x, no_grad=False) if ops else None
    if y is None or g.pool[y].base is not None or g.pool[y]._fn is None:
        return
    fits = fitting_ops(_HOOKED_VIEWS, g.pool[y])
    v = apply_op(draw, g, draw(one_of(fits)), y, no_grad=False) if fits else None
    if v is None or g.pool[v].base is None:
        return
    if draw(BOOLS):
        g.apply(Step("retain_grad", (v,)))
    stale = not draw(ints(0, 7))
    if stale:
        _write_in_place(draw, g, y)
    g.apply(_hook_step(draw, v))
    early = _read_out(draw, g, v)  # reaches v's history as it is now
    if not stale and draw(BOOLS):
        sibling = apply_op(draw, g, draw(one_of(fits)), y, no_grad=False) if draw(BOOLS) else y
        _write_in_place(draw, g, sibling if sibling is not None else y)
    add_backward(draw, g, draw(one_of((early, _read_out(draw, g, v), y))))


GRADAPI_MOTIFS = (
    _motif_tensor_hooks,
    _motif_view_hooks,
    _motif_post_hook,
    _motif_retained_written,
    _motif_double_backward,
    _motif_node_hooks,
)


# ---- attribution ----------------------------------------------------------------
def _neutral(step: Step) -> Step:
    """The step with its hook made harmless (the same number of steps)."""
    if step.op in _TENSOR_HOOKS or step.op in _POST_HOOKS:
        return replace(step, op="hook_none", params=())
    return step


def attribute(f) -> str | None:
    """The gradient-API rule a discrepancy breaks, or None: hooks that do not
    matter to it (the program fails as well with every hook made harmless),
    or none, and no retained tensor written in place whose .grad is off."""
    return _create_graph_rule(f) or _node_hooks_rule(f) or _hooks_rule(f) or _retained_rule(f)


def _create_graph_rule(f) -> str | None:
    """The result of create_graph (its values, flags), or a backward through it."""
    op, kind = f.step.op, f.d.kind
    if op == "grad_cg":
        return None if kind == "raise" else "grad.create_graph"
    if op not in ("backward", "backward_g") or kind not in ("grad", "raise"):
        return None
    made = {i for i, o in enumerate(f.origins) if o.op == "grad_cg"}
    return "grad.create_graph" if made & f.ancestry(f.step.tensors[0]) else None


def _retained_rule(f) -> str | None:
    """A retained non-leaf whose .grad torch has but with other values, after
    an in-place write to it or through a view of it since retain_grad()."""
    if f.d.kind != "grad":
        return None
    i = f.d.tensors[0]
    ours, theirs = f.run.observed[0][i], f.run.observed[1][i]
    if f.is_leaf(i) is not False or ours.grad is None or theirs.grad is None:
        return None
    steps = f.steps[: f.d.step]
    start = next(
        (n for n, s in enumerate(steps) if s.op == "retain_grad" and s.tensors == (i,)), None
    )
    if start is None:
        return None
    me = f.run.oracle_pool[i]
    for step in steps[start + 1 :]:
        w = f._writes(step)
        if w is not None and (w == i or f.run.oracle_pool[w].base is me):
            return "grad.retain_grad_follows_writes"
    return None


def _hooks_rule(f) -> str | None:
    if f.d.kind not in ("grad", "values", "raise"):
        return None
    steps = list(f.steps[: f.d.step + 1])
    hooks = [n for n, s in enumerate(steps[:-1]) if s.op in _TENSOR_HOOKS]
    posts = [n for n, s in enumerate(steps[:-1]) if s.op in _POST_HOOKS]
    if f.d.kind == "raise" and steps[-1].op in (*_TENSOR_HOOKS, *_POST_HOOKS):
        return None  # registering raised or not: RAISED names the rule
    if not hooks and not posts:
        return None

    def variant(neutral: set[int]) -> list[Step]:
        return [_neutral(s) if n in neutral else s for n, s in enumerate(steps)]

    if f.fails_again(variant(set(hooks) | set(posts))):
        return None
    if posts and (not hooks or f.fails_again(variant(set(hooks)))):
        return "grad.post_accumulate_hook"
    # one value hook per tensor, the others made harmless (a removed one too):
    # if it still fails, a single hook's result was lost; else their order was
    first: dict[int, int] = {}
    for n in hooks:
        if steps[n].op in _VALUE_HOOKS:
            first.setdefault(steps[n].tensors[0], n)
    extra = {n for n in hooks if n not in first.values()}
    if extra and not f.fails_again(variant(extra | set(posts))):
        return "grad.hooks_run_in_order"
    return "grad.hook_replaces_gradient"


def _node_neutral(step: Step) -> Step:
    """A Node hook made harmless: one that returns None, on t0.grad_fn."""
    if step.op in _NODE_PREHOOKS:
        return replace(step, op="node_prehook_none", params=())
    if step.op in _NODE_POSTHOOKS:
        return replace(step, op="node_hook_none", params=())
    return step


def _node_hooks_rule(f) -> str | None:
    """Node hooks matter to the discrepancy (with all of them made harmless it
    passes): the post hooks' rule where they matter alone, else the pre-hooks'."""
    if f.d.kind not in ("grad", "values", "raise"):
        return None
    steps = list(f.steps[: f.d.step + 1])
    if f.d.kind == "raise" and steps[-1].op in _NODE_HOOKS:
        return None  # registering raised or not: RAISED names the rule
    pres = {n for n, s in enumerate(steps[:-1]) if s.op in _NODE_PREHOOKS}
    posts = {n for n, s in enumerate(steps[:-1]) if s.op in _NODE_POSTHOOKS}
    if not pres and not posts:
        return None

    def variant(neutral: set[int]) -> list[Step]:
        return [_node_neutral(s) if n in neutral else s for n, s in enumerate(steps)]

    if f.fails_again(variant(pres | posts)):
        return None
    if posts and (not pres or f.fails_again(variant(pres))):
        return "grad.node_hook_replaces_grad_inputs"
    return "grad.node_prehook_replaces_grad_outputs"
