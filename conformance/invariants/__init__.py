"""The invariant catalogue: every rule the suite checks, as data.

Each entry has a stable ID (tests, reports and failures speak in these), a
one-line statement, PyTorch's own sentence with the file of pytorch/pytorch it
comes from, and the torch releases it applies to (a PEP 440 specifier).
"""

from __future__ import annotations

from . import autograd, compiled, core, schema, surface
from .invariant import Invariant

CATALOGUE: tuple[Invariant, ...] = (
    core.RULES + autograd.RULES + schema.RULES + compiled.RULES + surface.RULES
)

INVARIANTS: dict[str, Invariant] = {inv.id: inv for inv in CATALOGUE}

assert len(INVARIANTS) == len(CATALOGUE), "duplicate invariant IDs"


def get(invariant_id: str) -> Invariant:
    try:
        return INVARIANTS[invariant_id]
    except KeyError:
        raise KeyError(f"unknown invariant {invariant_id!r}") from None
