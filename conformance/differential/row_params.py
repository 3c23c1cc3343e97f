"""A program step's parameters for a row with an argument space (the view
family's, strategies.view_args; the gradient APIs' flags,
strategies.gradapi_args; ...): drawn with the step's seeded Random, through
the drawing API the property tests use too (strategies.argspace)."""

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


def row_params(draw, op: str, t) -> tuple | None:
    """Params for row `op` on oracle tensor `t`, or None if it has none that fit."""
    return draw(arguments(OPS[op].args, operand(t)))
