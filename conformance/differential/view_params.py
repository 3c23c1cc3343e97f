"""The view family's parameters in a program step: drawn from the op's row,
its argument space (strategies.view_args), with the step's seeded Random,
through the drawing API the property tests use too (strategies.argspace)."""

from __future__ import annotations

from conformance.differential.choices import arguments
from oracle import OPS
from oracle.geometry import is_contiguous
from oracle.nodes import shares_elements
from strategies.argspace import Operand
from strategies.view_args import SURFACE

# the view ops of tensor_view.rst beyond the first ten (their motif draws them)
CHOSEN = SURFACE


def operand(t) -> Operand:
    """What an argument space sees of oracle tensor `t`."""
    geometry = (t.offset, tuple(t.shape), tuple(t.strides))
    return Operand(
        tuple(t.shape),
        is_contiguous(t.shape, t.strides),
        t.offset,
        overlapping=shares_elements(*geometry),
    )


def view_params(draw, op: str, t) -> tuple | None:
    """Params for view op `op` on oracle tensor `t`, or None if it has none that fit."""
    return draw(arguments(OPS[op].args, operand(t)))
