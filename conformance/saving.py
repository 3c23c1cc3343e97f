"""Ops by what autograd saves for their backward, as a table.

Whether a write makes a later backward raise depends on which tensors the op
saved (tools/autograd/derivatives.yaml). `SAVERS` save a tensor a write can
reach; `NON_SAVERS` save nothing a write can reach: nothing at all, sizes, or
a private copy of the original (in-place ops whose formula needs self).

Each saver's `grad` gives the gradient w.r.t. x from the values the saved
tensor holds when backward runs, which is how a silent write through .data
changes gradients.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Saver:
    name: str
    saved: str  # "self", "result" or "other": which tensor backward reads
    forward: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    # gradient w.r.t. x of sum(g * y), from g and the saved tensor's values
    grad: Callable[[np.ndarray, np.ndarray], np.ndarray]
    kinds: tuple[str, ...] = ("float", "complex")
    # the magnitude of the terms `grad` sums, from |g| and |saved|, where they
    # cancel (tanh's 1 - r * r near |r| = 1): its rounding is relative to them
    terms: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None

    def __repr__(self) -> str:
        return self.name


SAVERS: tuple[Saver, ...] = (
    Saver("y = x.exp()", "result", lambda x, o: x.exp(), lambda g, r: g * np.conj(r)),
    Saver(
        "y = x.tanh()",
        "result",
        lambda x, o: x.tanh(),
        lambda g, r: g * np.conj(1 - r * r),
        terms=lambda g, r: g * (1 + r * r),
    ),
    Saver(
        "y = x.sigmoid()",
        "result",
        lambda x, o: x.sigmoid(),
        lambda g, r: g * np.conj(r * (1 - r)),
        terms=lambda g, r: g * (r + r * r),
    ),
    Saver("y = x.relu()", "result", lambda x, o: x.relu(), lambda g, r: g * (r > 0), ("float",)),
    Saver("y = x.sin()", "self", lambda x, o: x.sin(), lambda g, x: g * np.conj(np.cos(x))),
    Saver("y = x.cos()", "self", lambda x, o: x.cos(), lambda g, x: -g * np.conj(np.sin(x))),
    Saver("y = x.pow(2)", "self", lambda x, o: x.pow(2), lambda g, x: g * np.conj(2 * x)),
    Saver("y = x * other", "other", lambda x, o: x * o, lambda g, o: g * np.conj(o)),
    Saver("y = x / other", "other", lambda x, o: x / o, lambda g, o: g / np.conj(o)),
)


@dataclass(frozen=True)
class NonSaver:
    name: str
    forward: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    kinds: tuple[str, ...] = ("float", "complex")

    def __repr__(self) -> str:
        return self.name


def _inplace_sin(x: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    y = x * 1
    return y.sin_()  # saves a private copy of y's old values


def _inplace_mul(x: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    y = x * 1
    return y.mul_(3)


NON_SAVERS: tuple[NonSaver, ...] = (
    NonSaver("y = x + other", lambda x, o: x + o),
    NonSaver("y = x - other", lambda x, o: x - o),
    NonSaver("y = -x", lambda x, o: -x),
    NonSaver("y = x * 3", lambda x, o: x * 3),
    NonSaver("y = x.clone()", lambda x, o: x.clone()),
    NonSaver("y = (x * 1).sin_()", _inplace_sin),
    NonSaver("y = (x * 1).mul_(3)", _inplace_mul),
)


def savers_for(kind: str) -> tuple[Saver, ...]:
    return tuple(s for s in SAVERS if kind in s.kinds)


def non_savers_for(kind: str) -> tuple[NonSaver, ...]:
    return tuple(s for s in NON_SAVERS if kind in s.kinds)


@dataclass
class SavedScenario:
    """y = op(x, other) with x reaching a leaf, ready for backward(gradient)."""

    x: object  # strategies.tensors.TensorCase
    other: torch.Tensor
    op: Saver | NonSaver
    y: torch.Tensor
    gradient: torch.Tensor

    @property
    def saved(self) -> torch.Tensor:
        """The tensor whose saved version backward checks."""
        role = self.op.saved
        return {"self": self.x.tensor, "result": self.y, "other": self.other}[role]

    def backward(self) -> None:
        self.y.backward(self.gradient)


def _probe(op: Saver | NonSaver):
    return lambda x: op.forward(x, x.detach())


def available(ex, table: tuple, dtype: str) -> tuple:
    """The ops of `table` this build has kernels for in `dtype`, forward and backward
    (the others are skipped and counted by ex.has_kernel)."""
    return tuple(o for o in table if ex.has_kernel(o.name, _probe(o), (dtype,), True))


def draw_scenario(ex, ops: str = "savers") -> SavedScenario:
    """Draw x (reaching a leaf), a plain `other` and an op from the table."""
    from hypothesis import strategies as st

    from strategies.dtypes import DTYPES, arrays, nonzero_small_elements, small_elements
    from strategies.layouts import WRITABLE_LAYOUTS
    from strategies.tensors import GRAD_ROLES, TORCH_DTYPES

    # small values: the savers are exp, sin, cos... of them
    x = ex.tensor("x", roles=GRAD_ROLES, layout_kinds=WRITABLE_LAYOUTS, values=small_elements)
    kind = DTYPES[x.dtype].kind
    table = available(ex, savers_for(kind) if ops == "savers" else non_savers_for(kind), x.dtype)
    op = ex.draw(st.sampled_from(table), "op")
    other_values = ex.draw(
        arrays(x.dtype, x.shape, nonzero_small_elements),
        "other",
    )
    other = torch.tensor(other_values, dtype=TORCH_DTYPES[x.dtype], device=ex.device)
    y = op.forward(x.tensor, other)
    grad_values = ex.draw(
        arrays(x.dtype, tuple(y.shape), small_elements),
        "gradient",
    )
    gradient = torch.tensor(grad_values, dtype=y.dtype, device=ex.device)
    return SavedScenario(x, other, op, y, gradient)


def gradient_bound(
    op: Saver, g: np.ndarray, saved: np.ndarray, dtype: str
) -> tuple[float, float] | None:
    """The tolerance for `op.grad(g, saved)` in `dtype`: the dtype's own, unless the
    formula's terms cancel (tanh's 1 - r * r), when its rounding is relative to them."""
    from conformance.check import TOLERANCES
    from oracle.tolerances import summed_atol

    if op.terms is None or dtype not in TOLERANCES or not np.size(g):
        return None
    terms = float(np.max(op.terms(np.abs(g), np.abs(saved))))
    rtol, atol = TOLERANCES[dtype]
    return (rtol, max(atol, summed_atol(dtype, terms)))
