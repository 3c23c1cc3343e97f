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

from conformance.differential.choices import _BOOLS, _ints, _one_of
from conformance.differential.growth import Growth, _apply_op, _backward, _leaf, _pick
from oracle.dtypes import kind
from oracle.write_ops import OUT_OPS, input_kinds
from strategies.dtypes import DTYPES
from strategies.programs import Step, broadcastable_to, leaf_shape

# ---- motifs --------------------------------------------------------------------------


def _motif_out(draw, g: Growth) -> None:
    """One or two calls op(inputs, out=o), then o is used."""
    for _ in range(1 + draw(_ints(0, 1))):
        out = _out_call(draw, g)
        if out is None or g.over:
            return
    t = g.pool[out]
    if draw(_BOOLS) and not t.requires_grad and kind(t.dtype) in ("float", "complex"):
        # o in the graph: a chain from a leaf that requires grad reads it
        y = _apply_op(draw, g, "mul", out, no_grad=False)
        if y is not None and draw(_BOOLS):
            _backward(draw, g, y)
    elif draw(_BOOLS):
        _apply_op(draw, g, draw(_one_of(("add_s_", "mul_s_", "neg_"))), out)


def _out_call(draw, g: Growth) -> int | None:
    op = draw(_one_of(tuple(OUT_OPS)))
    kinds = input_kinds(op)
    dtypes = tuple(d for d in g.dtypes if kind(d) in kinds)
    if not dtypes:
        return None
    dtype = draw(_one_of(dtypes))

    def usable(t) -> bool:
        return t.dtype == dtype and not t.inference

    x = _pick(draw, g, usable) if draw(_ints(0, 2)) else None
    if x is None:
        g.apply(_leaf(draw, g, dtype=dtype, inference=False))
        x = len(g.pool) - 1
    device = g.pool[x].device
    inputs = [x]
    shape = tuple(g.pool[x].shape)
    if OUT_OPS[op][1] == 2:
        if draw(_ints(0, 3)) == 0:
            inputs.append(x)  # torch.add(x, x, out=o)
        else:
            other = draw(broadcastable_to, shape)
            g.apply(_leaf(draw, g, shape=other, dtype=dtype, device=device, inference=False))
            inputs.append(len(g.pool) - 1)
    out = _draw_out(draw, g, shape, dtype, device, set(inputs))
    if out is None:
        return None
    no_grad = draw(_BOOLS)  # in grad mode, inputs that require grad are refused
    g.apply(Step(op, (out, *inputs), (), no_grad))
    return out


def _draw_out(draw, g: Growth, shape: tuple, dtype: str, device: str, inputs: set) -> int | None:
    """The out tensor: new (the result's shape, another one, or empty; its
    dtype or another), a pool tensor, or a view of one."""
    how = draw(_ints(0, 5))
    if how <= 2:
        if how == 0:
            shape = draw(leaf_shape)  # most likely another shape: resized
        elif how == 1:
            shape = (0,)  # empty: resized silently
        out_dtype = dtype if draw(_BOOLS) else draw(_one_of(g.dtypes))
        graded = DTYPES[out_dtype].can_require_grad and draw(_ints(0, 4)) == 0
        g.apply(
            _leaf(
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
    index = _pick(draw, g, lambda t: t.device == device and not t.inference)
    if index is None:
        return None
    if how == 5:  # a view of a pool tensor
        view = draw(_one_of(("getitem", "transpose", "narrow", "select")))
        return _apply_op(draw, g, view, index, no_grad=draw(_BOOLS))
    return index


WRITE_MOTIFS = (_motif_out,)


# ---- attribution ---------------------------------------------------------------------


def rule(f) -> str | None:
    """The rule a discrepancy at a write step breaks (None: the general rules decide)."""
    step, d = f.step, f.d
    if step.op in OUT_OPS:
        return _out_rule(f, step, d)
    return None


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
