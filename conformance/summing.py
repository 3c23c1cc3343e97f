"""The gradient a sum of broadcast or expanded terms gives, and the
tolerance it is held to: torch sums in stages, rounding each in the
gradient's dtype, so the result is a few epsilons of its terms off, not of
its value (oracle.tolerances.summed_atol)."""

from __future__ import annotations

import numpy as np

from conformance.check import TOLERANCES
from oracle.nodes import sum_to
from oracle.tolerances import summed_atol
from strategies.tensors import TensorCase


def summed_tolerance(
    dtype: str, grad: np.ndarray, case: TensorCase
) -> tuple[float, np.ndarray] | None:
    """(rtol, atol per element of case's root) for the gradient the root gets
    when `case` gets `grad` broadcast to it; None where no element sums more
    than one term (the dtype's own tolerance holds). float16
    root.expand(3, 1, 1) of a (1, 1, 1) root: the expanded gradient's
    34.046875 rounds to 34.0625 on the way, and the root's is 3.0625 where
    the sum of every term is 3.046875."""
    if dtype not in TOLERANCES:
        return None
    summed = case.grad_for_root(sum_to(np.ones(grad.shape), case.shape))
    if not summed.size or summed.max() <= 1:
        return None
    rtol, atol = TOLERANCES[dtype]
    terms = np.abs(case.grad_for_root(sum_to(np.abs(grad), case.shape)))
    return rtol, atol + summed_atol(dtype, 1.0) * np.where(summed > 1, terms, 0.0)
