"""The differential's side of out=, resize_, set_ and the _foreach_ in-place
ops (oracle/write_ops.py): their motifs, the warnings the lockstep compares
for them, and which rule a discrepancy at one of their steps breaks.

out= is drawn with an `out` of the result's shape, of another shape (resized:
empty, silently; non-empty, with a UserWarning), of another dtype (cast, or
refused), a pool tensor or a view of one; with inputs that require grad in
grad mode (refused) or under no_grad; then `out` is read, written and
differentiated through like any tensor.
"""

from __future__ import annotations

import math

from conformance.differential.choices import BOOLS, ints, one_of, scalars
from conformance.differential.growth import (
    SAVERS_OF_ONE,
    Growth,
    add_backward,
    apply_op,
    fitting_ops,
    new_leaf,
    pick,
    pick_graded,
)
from oracle.dtypes import kind
from oracle.write_ops import input_kinds
from oracle.write_rows import FOREACH, OUT_OPS
from strategies.dtypes import DTYPES
from strategies.programs import Step, broadcastable_to, leaf_shape

# ---- motifs --------------------------------------------------------------------------


def _motif_out(draw, g: Growth) -> None:
    """One or two calls op(inputs, out=o), then o is used."""
    for _ in range(1 + draw(ints(0, 1))):
        out = _out_call(draw, g)
        if out is None or g.over:
            return
    t = g.pool[out]
    if draw(BOOLS) and not t.requires_grad and kind(t.dtype) in ("float", "complex"):
        # o in the graph: a chain from a leaf that requires grad reads it
        y = apply_op(draw, g, "mul", out, no_grad=False)
        if y is not None and draw(BOOLS):
            add_backward(draw, g, y)
    elif draw(BOOLS):
        apply_op(draw, g, draw(one_of(("add_s_", "mul_s_", "neg_"))), out)


def _out_call(draw, g: Growth) -> int | None:
    op = draw(one_of(tuple(OUT_OPS)))
    kinds = input_kinds(op)
    dtypes = tuple(d for d in g.dtypes if kind(d) in kinds)
    if not dtypes:
        return None
    dtype = draw(one_of(dtypes))

    def usable(t) -> bool:
        return t.dtype == dtype and not t.inference

    x = pick(draw, g, usable) if draw(ints(0, 2)) else None
    if x is None:
        g.apply(new_leaf(draw, g, dtype=dtype, inference=False))
        x = len(g.pool) - 1
    device = g.pool[x].device
    inputs = [x]
    shape = tuple(g.pool[x].shape)
    if OUT_OPS[op][1] == 2:
        if draw(ints(0, 3)) == 0:
            inputs.append(x)  # torch.add(x, x, out=o)
        else:
            other = draw(broadcastable_to, shape)
            g.apply(new_leaf(draw, g, shape=other, dtype=dtype, device=device, inference=False))
            inputs.append(len(g.pool) - 1)
    out = _draw_out(draw, g, shape, dtype, device, set(inputs))
    if out is None:
        return None
    no_grad = draw(BOOLS)  # in grad mode, inputs that require grad are refused
    g.apply(Step(op, (out, *inputs), (), no_grad))
    return out


_WIDEST = {"float": "float64", "complex": "complex128", "int": "int64"}


def _draw_out(draw, g: Growth, shape: tuple, dtype: str, device: str, inputs: set) -> int | None:
    """The out tensor: new (the result's shape, another one, or empty; its
    dtype or another), a pool tensor, or a view of one."""
    how = draw(ints(0, 5))
    if how <= 2:
        if how == 0:
            shape = draw(leaf_shape)  # most likely another shape: resized
        elif how == 1:
            shape = (0,)  # empty: resized silently
        out_dtype = dtype if draw(BOOLS) else draw(one_of(g.dtypes))
        wide = _WIDEST.get(kind(dtype))
        if out_dtype != dtype and wide in g.dtypes and draw(BOOLS):
            out_dtype = wide  # the common cast: into the widest dtype of the result's kind
        graded = DTYPES[out_dtype].can_require_grad and draw(ints(0, 4)) == 0
        g.apply(
            new_leaf(
                draw,
                g,
                shape=shape,
                dtype=out_dtype,
                device=device,
                requires_grad=graded,
                inference=False,
            )
        )
        return len(g.pool) - 1
    index = pick(draw, g, lambda t: t.device == device and not t.inference)
    if index is None:
        return None
    if how == 5:  # a view of a pool tensor
        view = draw(one_of(("getitem", "transpose", "narrow", "select")))
        return apply_op(draw, g, view, index, no_grad=draw(BOOLS))
    return index


def _motif_resize(draw, g: Growth) -> None:
    """x.resize_(shape) to its own shape, a smaller, a larger one or one of as
    many elements; x a pool tensor, a view of one, or a detached alias of a
    tensor a node saved (the bump makes backward raise); then x is written
    and backward runs. Now and then x requires grad: refused."""
    x = pick(draw, g, lambda t: not t.inference) if draw(ints(0, 2)) else None
    if x is None:
        g.apply(new_leaf(draw, g, requires_grad=False, inference=False))
        x = len(g.pool) - 1
    target, y = x, None
    t = g.pool[x]
    if t.requires_grad and draw(ints(0, 3)):
        savers = fitting_ops(SAVERS_OF_ONE, t)
        if savers:
            y = apply_op(draw, g, draw(one_of(savers)), x, no_grad=False)
        target = apply_op(draw, g, "detach", x) or x
    elif draw(BOOLS):
        target = apply_op(draw, g, draw(one_of(("getitem", "transpose", "narrow"))), x) or x
    shape = tuple(g.pool[target].shape)
    n = math.prod(shape)
    how = draw(ints(0, 4))
    if how == 1:
        shape = (n,)  # as many elements: no new memory
    elif how == 2:
        shape = (draw(ints(0, max(n - 1, 0))),)  # fewer
    elif how >= 3:
        shape = draw(leaf_shape)
    g.apply(Step("resize_", (target,), (shape,), draw(ints(0, 3)) == 0))
    if g.over:
        return
    if draw(BOOLS):
        apply_op(draw, g, draw(one_of(("add_s_", "mul_s_", "zero_"))), target)
    if y is not None:
        add_backward(draw, g, y)


def _motif_set(draw, g: Growth) -> None:
    """x.set_(y): x a tensor (a leaf that requires grad, in grad mode: refused),
    y a pool tensor or a view of one, of x's dtype and device; then a write
    through one of them, or a resize_ of x (which grows y's storage)."""
    x = pick(draw, g, lambda t: not t.inference and not t.requires_grad)
    if x is None or not draw(ints(0, 5)):
        graded = draw(ints(0, 5)) == 0
        dtypes = tuple(d for d in g.dtypes if DTYPES[d].can_require_grad) if graded else ()
        g.apply(
            new_leaf(
                draw,
                g,
                dtype=draw(one_of(dtypes)) if dtypes else None,
                requires_grad=bool(dtypes),
                inference=False,
            )
        )
        x = len(g.pool) - 1
    t = g.pool[x]

    def fits(u) -> bool:
        return u is not t and u.dtype == t.dtype and u.device == t.device and not u.inference

    y = pick(draw, g, fits) if draw(ints(0, 2)) else None
    if y is None:
        g.apply(new_leaf(draw, g, dtype=t.dtype, device=t.device, inference=False))
        y = len(g.pool) - 1
    if draw(BOOLS):
        y = apply_op(draw, g, draw(one_of(("getitem", "transpose", "select"))), y) or y
    # in grad mode a source in the graph gives x a grad_fn torch cannot differentiate
    no_grad = False if t.requires_grad else (g.pool[y].requires_grad or draw(ints(0, 3)) == 0)
    g.apply(Step("set_", (x, y), (), no_grad))
    if g.over:
        return
    follow = draw(ints(0, 3))
    if follow == 0:
        apply_op(draw, g, draw(one_of(("add_s_", "mul_s_"))), x, no_grad=True)
    elif follow == 1:
        apply_op(draw, g, draw(one_of(("add_s_", "mul_s_"))), y, no_grad=True)
    elif follow == 2 and not g.pool[x].requires_grad:
        g.apply(Step("resize_", (x,), (draw(leaf_shape),), True))


def _motif_foreach(draw, g: Growth) -> None:
    """torch._foreach_add_/_foreach_mul_ (a scalar, or a list of two) over two
    tensors in the graph (results, views of results; now and then a leaf that
    requires grad: refused), then backward through one of them."""
    op = draw(one_of(tuple(FOREACH)))
    xs: list[int] = []
    for _ in range(2):
        x = pick_graded(draw, g)
        if draw(ints(0, 4)):
            x = apply_op(draw, g, draw(one_of(("mul_s", "clone"))), x, no_grad=False) or x
        if draw(ints(0, 3)) == 0:
            x = apply_op(draw, g, draw(one_of(("getitem", "transpose"))), x) or x
        xs.append(x)
    if xs[0] == xs[1]:  # the same tensor twice: torch's gradient is wrong (docs/findings.md)
        return
    first, second = (g.pool[i] for i in xs)
    if op.endswith("_s_"):  # one scalar for both: a real one unless both are complex
        complex_ = kind(first.dtype) == kind(second.dtype) == "complex"
        real = first.dtype if kind(first.dtype) != "complex" else second.dtype
        params = (draw(scalars(first.dtype if complex_ else real, False)),)
        tensors = tuple(xs)
    else:
        others = []
        for t in (first, second):
            graded = draw(ints(0, 3)) == 0
            made = dict(dtype=t.dtype, device=t.device, inference=False)
            made["requires_grad"] = graded and DTYPES[t.dtype].can_require_grad
            g.apply(new_leaf(draw, g, shape=draw(broadcastable_to, tuple(t.shape)), **made))
            others.append(len(g.pool) - 1)
        params, tensors = (), (*xs, *others)
    g.apply(Step(op, tensors, params, draw(ints(0, 5)) == 0))
    add_backward(draw, g, draw(one_of(tuple(xs))))


# out= twice: four rules, some of them narrow (one dtype pair), hang on it
WRITE_MOTIFS = (_motif_out, _motif_out, _motif_resize, _motif_set, _motif_foreach)


# ---- attribution ---------------------------------------------------------------------


def rule(f) -> str | None:
    """The rule a discrepancy at a write step breaks (None: the general rules decide)."""
    step, d = f.step, f.d
    if step.op in OUT_OPS:
        return _out_rule(f, step, d)
    if step.op == "resize_":
        if d.kind == "raise":
            return "resize.requires_grad_raises" if _names(d, "RESIZE_REQUIRES_GRAD") else None
        return "resize.in_place"
    if step.op == "set_":
        return None if d.kind == "raise" else "set.shares_source"
    if step.op in FOREACH:
        if d.kind == "raise":
            refused = _names(d, "INPLACE_ON_LEAF") or _names(d, "INPLACE_ON_LEAF_VIEW")
            return "foreach.inplace_grad" if refused else None
        return "foreach.inplace_grad"
    if _after_foreach(f, d):
        return "foreach.inplace_grad"
    return None


_HISTORY = ("raise", "grad", "requires_grad", "has_grad_fn", "is_leaf")


def _after_foreach(f, d) -> bool:
    """A later discrepancy of autograd's that a _foreach_ write explains: the
    write left the base of a view it wrote as it was, or a backward computes
    through a tensor it wrote."""
    if d.kind not in _HISTORY:
        return False
    steps = f.steps
    if any(steps[n].op in FOREACH for n in f.run.unrecorded_view_writes if n <= d.step):
        return True
    if f.step.op not in ("backward", "backward_g", "autograd_grad"):
        return False
    wrote = {i for s in steps[: d.step] if s.op in FOREACH for i in s.tensors[:2]}
    return bool(wrote) and bool(wrote & f.ancestry(f.step.tensors[0]))


def _names(d, kind: str) -> bool:
    return kind in (d.expected, d.actual)


def _out_rule(f, step, d) -> str | None:
    if d.kind == "raise":
        kinds = (d.expected, d.actual)
        if "OUT_AUTOGRAD" in kinds:
            return "out.no_autograd"
        if "OUT_CAST" in kinds or "OUT_DTYPE" in kinds:
            return "out.dtype_cast"
        return None  # overlapping memory, shapes: the rules of every op
    if d.kind == "warning":
        return "out.resizes_out"
    if d.kind in ("requires_grad", "is_leaf", "has_grad_fn", "grad", "grad_meta"):
        return "out.no_autograd"
    i, out = d.tensors[0], step.tensors[0]
    ours = f.run.oracle_pool
    resized = i == out and f.run.previous[0] and _resized(f, out)
    if d.kind in ("shape", "strides") or (d.kind == "storage_moved" and resized):
        return "out.resizes_out" if resized else "out.writes_out"
    if d.kind in ("values", "dtype") and i == out:
        if ours[out].dtype != ours[step.tensors[1]].dtype:
            return "out.dtype_cast"
    return "out.writes_out"


def _resized(f, out: int) -> bool:
    before = f.run.previous[0]
    return out < len(before) and tuple(before[out].shape) != tuple(f.run.oracle_pool[out].shape)


__all__ = ["WRITE_MOTIFS", "rule"]
