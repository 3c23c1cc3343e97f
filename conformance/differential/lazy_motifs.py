"""Motifs for the lazily resolved views (conj(), _neg_view(), H/mH/adjoint of
a complex tensor, resolve_conj(), resolve_neg()) and the views that read
memory as another dtype (view_as_real, view_as_complex, real, imag,
x.view(dtype)): such a
view of an intermediate, maybe a view of it, a write through it or its base
(or the base copied into it: `x.conj().copy_(x)`), maybe the bit resolved and
the copy written, then backward."""

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
from oracle import OracleError
from oracle.dtype_views import geometry
from strategies.dtypes import DTYPES
from strategies.programs import Step

BIT_VIEWS = ("conj", "conj", "conj", "neg_view", "H", "mH", "adjoint")
RESOLVES = {"conj": "resolve_conj", "neg_view": "resolve_neg"}


def _complex_graded(draw, g: Growth) -> int:
    """A complex tensor that requires grad where the run has complex dtypes."""
    complex_ = tuple(d for d in g.dtypes if DTYPES[d].kind == "complex")
    if not complex_ or not draw(ints(0, 4)):
        return pick_graded(draw, g)
    g.apply(new_leaf(draw, g, dtype=draw(one_of(complex_)), requires_grad=draw(ints(0, 3)) > 0))
    return len(g.pool) - 1


def _motif_bit_view(draw, g: Growth) -> None:
    x = _complex_graded(draw, g)
    base = apply_op(draw, g, draw(one_of(("mul_s", "clone"))), x, no_grad=False) or x
    op = draw(one_of(BIT_VIEWS))
    view = apply_op(draw, g, op, base, no_grad=draw(ints(0, 5)) == 5)
    if view is None:
        return
    if draw(ints(0, 2)) == 0:  # a view of the bit view reads through the bit too
        view = apply_op(draw, g, draw(one_of(("getitem", "transpose", "select"))), view) or view
    how = draw(ints(0, 3))
    if how == 0 and g.pool[view].shape == g.pool[base].shape:  # x.conj().copy_(x)
        apply_op(draw, g, "copy_", view, other=base)
    elif how < 3:
        target = view if draw(BOOLS) else base
        writes = fitting_ops(FAMILIES["inplace"], g.pool[target])
        if writes:
            apply_op(draw, g, draw(one_of(writes)), target, no_grad=draw(ints(0, 3)) == 0)
    out = view
    if op in RESOLVES and draw(BOOLS):
        out = apply_op(draw, g, RESOLVES[op], view, no_grad=False) or view
        if draw(BOOLS):  # the resolved copy is new memory: its base must not see this
            writes = fitting_ops(FAMILIES["inplace"], g.pool[out])
            if writes:
                apply_op(draw, g, draw(one_of(writes)), out, no_grad=False)
    add_backward(draw, g, draw(one_of((out, out, base))))


REINTERPRETS = ("view_as_real", "view_as_real", "real", "imag")


def _fits_complex(t) -> bool:
    """view_as_complex takes it: float32/64 with a last dim of 2, stride 1, even strides
    and offset (invalid layouts are the oracle tests' and the property test's)."""
    return (
        t.dtype in ("float32", "float64")
        and bool(t.shape)
        and t.shape[-1] == 2
        and t.strides[-1] == 1
        and not any(s % 2 for s, n in zip(t.strides[:-1], t.shape, strict=False) if n != 1)
        and t.offset % 2 == 0
    )


def _pairs(draw, g: Growth) -> int | None:
    """A float32/64 tensor with a last dim of 2 (from the pool, or new)."""
    fits = [i for i, t in enumerate(g.pool) if i not in g.retired and _fits_complex(t)]
    if fits and draw(BOOLS):
        return fits[-1 - draw(ints(0, len(fits) - 1))]
    floats = tuple(d for d in g.dtypes if d in ("float32", "float64"))
    if not floats:
        return None
    shape = tuple(draw(ints(1, 3)) for _ in range(draw(ints(0, 2)))) + (2,)
    g.apply(new_leaf(draw, g, shape=shape, dtype=draw(one_of(floats))))
    return len(g.pool) - 1


def _motif_reinterpret(draw, g: Growth) -> None:
    """view_as_real, real, imag of a complex intermediate (now and then of a conj
    view: view_as_real must refuse, imag reads the negated part), or
    view_as_complex of float pairs (now and then real or imag of a real tensor);
    maybe a view of it; a write through it or its base; backward."""
    if draw(ints(0, 2)):
        x = _complex_graded(draw, g)
        base = apply_op(draw, g, draw(one_of(("mul_s", "clone"))), x, no_grad=False) or x
        if DTYPES[g.pool[base].dtype].kind == "complex" and not draw(ints(0, 3)):
            base = apply_op(draw, g, "conj", base, no_grad=False) or base
        op = draw(one_of(REINTERPRETS))
    else:
        x = _pairs(draw, g)
        if x is None:
            return
        base = apply_op(draw, g, draw(one_of(("mul_s", "clone"))), x, no_grad=False) or x
        op = draw(one_of(("view_as_complex",) * 3 + ("real", "imag", "imag")))
        if op == "view_as_complex" and not _fits_complex(g.pool[base]):
            return
    if op == "view_as_real" and not all(g.pool[base].shape):
        return  # backward through view_as_real of an empty tensor raises (docs/findings.md)
    view = apply_op(draw, g, op, base, no_grad=draw(ints(0, 5)) == 5)
    if view is None or view == base:
        return
    if draw(ints(0, 2)) == 0:
        view = apply_op(draw, g, draw(one_of(("getitem", "transpose", "select"))), view) or view
    target = view if draw(ints(0, 2)) else base
    writes = fitting_ops(FAMILIES["inplace"], g.pool[target])
    if writes and draw(ints(0, 3)):
        apply_op(draw, g, draw(one_of(writes)), target, no_grad=draw(ints(0, 3)) == 0)
    add_backward(draw, g, draw(one_of((view, view, base))))


def _dtype_fits(t, dtype: str) -> bool:
    try:
        geometry(tuple(t.shape), tuple(t.strides), t.offset, t.dtype, dtype)
    except OracleError:
        return False
    return True


def _motif_dtype_view(draw, g: Growth) -> None:
    """x.view(dtype) of a tensor (an intermediate that requires grad, now and then),
    mostly to a dtype its layout allows, else one torch must refuse; maybe a view of
    it; a write through it or through x, in grad mode or not; backward from x's
    graph: its saved tensors saw the write (one version counter)."""
    x = pick_graded(draw, g) if draw(BOOLS) else pick(draw, g)
    if x is None:
        return
    made = x
    if g.pool[x].requires_grad and draw(BOOLS):
        made = apply_op(draw, g, draw(one_of(("exp", "mul_s", "sigmoid"))), x) or x
    t = g.pool[made]
    if t.inference or t.conj or t.neg or t.dtype == "bool" or not all(t.shape):
        return  # (inference tensors' dtype views are ordinary tensors; an empty
        # tensor's strides are not the model's: neither is modelled)
    targets = tuple(d for d in g.dtypes if d != "bool")
    fitting = tuple(d for d in targets if _dtype_fits(t, d))
    pool = fitting if fitting and draw(ints(0, 5)) else targets
    if not pool:
        return
    g.apply(Step("view_dtype", (made,), (draw(one_of(pool)),), draw(ints(0, 5)) == 5))
    if len(g.pool) - 1 == made or g.pool[-1] is t:
        return  # refused
    view = len(g.pool) - 1
    if draw(ints(0, 2)) == 0:
        view = apply_op(draw, g, draw(one_of(("getitem", "transpose", "select"))), view) or view
    target = view if draw(ints(0, 2)) else made
    writes = fitting_ops(FAMILIES["inplace"], g.pool[target])
    if writes:
        apply_op(draw, g, draw(one_of(writes)), target, no_grad=draw(ints(0, 2)) == 0)
    add_backward(draw, g, draw(one_of((made, made, view))))


LAZY_MOTIFS = (_motif_bit_view, _motif_reinterpret, _motif_dtype_view)
