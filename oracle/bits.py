"""torch's conjugate and negative bits: a lazily conjugated (`conj()`) or negated
(`_neg_view()`) view reads its memory through the bit, and a write through it
stores the conjugate (the negation) of what was written."""

from __future__ import annotations

import numpy as np


def apply_bits(a: np.ndarray, conj: bool, neg: bool) -> np.ndarray:
    """What a tensor with these bits reads from memory `a` (a new array); both bits
    are involutions, so it is also what a write of `a` through them stores."""
    out = np.conj(a) if conj else np.array(a)
    return np.negative(out) if neg else out


def between(view: object, base: object):
    """g -> g through the bits a view has that its base does not (a view's
    gradient reaches its base conjugated, negated, as the view is made)."""
    conj = getattr(view, "conj", False) != getattr(base, "conj", False)
    neg = getattr(view, "neg", False) != getattr(base, "neg", False)
    if not (conj or neg):
        return lambda g: g
    return lambda g: apply_bits(g, conj, neg)
