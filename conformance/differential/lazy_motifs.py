"""Motifs for the lazily resolved views (conj(), _neg_view(), H/mH/adjoint of a
complex tensor, resolve_conj(), resolve_neg()): a bit view of an intermediate,
maybe a view of it, a write through it or its base (or the base copied into
it: `x.conj().copy_(x)`), maybe the bit resolved and the copy written, then
backward."""

from __future__ import annotations

from conformance.differential.choices import _BOOLS, _ints, _one_of
from conformance.differential.growth import (
    FAMILIES,
    Growth,
    _apply_op,
    _backward,
    _fitting,
    _graded,
    _leaf,
)
from strategies.dtypes import DTYPES

BIT_VIEWS = ("conj", "conj", "conj", "neg_view", "H", "mH", "adjoint")
RESOLVES = {"conj": "resolve_conj", "neg_view": "resolve_neg"}


def _complex_graded(draw, g: Growth) -> int:
    """A complex tensor that requires grad where the run has complex dtypes."""
    complex_ = tuple(d for d in g.dtypes if DTYPES[d].kind == "complex")
    if not complex_ or not draw(_ints(0, 4)):
        return _graded(draw, g)
    g.apply(_leaf(draw, g, dtype=draw(_one_of(complex_)), requires_grad=draw(_ints(0, 3)) > 0))
    return len(g.pool) - 1


def _motif_bit_view(draw, g: Growth) -> None:
    x = _complex_graded(draw, g)
    base = _apply_op(draw, g, draw(_one_of(("mul_s", "clone"))), x, no_grad=False) or x
    op = draw(_one_of(BIT_VIEWS))
    view = _apply_op(draw, g, op, base, no_grad=draw(_ints(0, 5)) == 5)
    if view is None:
        return
    if draw(_ints(0, 2)) == 0:  # a view of the bit view reads through the bit too
        view = _apply_op(draw, g, draw(_one_of(("getitem", "transpose", "select"))), view) or view
    how = draw(_ints(0, 3))
    if how == 0 and g.pool[view].shape == g.pool[base].shape:  # x.conj().copy_(x)
        _apply_op(draw, g, "copy_", view, other=base)
    elif how < 3:
        target = view if draw(_BOOLS) else base
        writes = _fitting(FAMILIES["inplace"], g.pool[target])
        if writes:
            _apply_op(draw, g, draw(_one_of(writes)), target, no_grad=draw(_ints(0, 3)) == 0)
    out = view
    if op in RESOLVES and draw(_BOOLS):
        out = _apply_op(draw, g, RESOLVES[op], view, no_grad=False) or view
        if draw(_BOOLS):  # the resolved copy is new memory: its base must not see this
            writes = _fitting(FAMILIES["inplace"], g.pool[out])
            if writes:
                _apply_op(draw, g, draw(_one_of(writes)), out, no_grad=False)
    _backward(draw, g, draw(_one_of((out, out, base))))


LAZY_MOTIFS = (_motif_bit_view,)
