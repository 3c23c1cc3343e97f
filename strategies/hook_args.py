"""The argument spaces of the hook rows (oracle/hook_rows.py): the constant a
hook scales or shifts the gradient by, and how it is drawn.

The documentation defines a hook's regions by what the hook returns (a new
gradient, or None: the gradient goes on unchanged) and by whether its handle
was removed; each of those is a row of its own (hook_mul, hook_add,
hook_none, hook_removed...), so the run's row counts show them. The constant
itself has no documented region, so it declares no class: a run's argument
coverage counts nothing for it. The constants are exact in every floating
dtype (powers of two and small integers), so that a hook's result is one
rounding of g * c or g + c and the model's value is torch's to the bit.
"""

from __future__ import annotations

from dataclasses import replace

from .argspace import Arg, ArgSpace, Operand, Pick

FACTORS = (2.0, -0.5, 3.0, 0.25)
TERMS = (1.0, -2.0, 0.5)


def _factor(pick: Pick, x: Operand) -> tuple:
    return (pick.one_of(FACTORS),)


def _term(pick: Pick, x: Operand) -> tuple:
    return (pick.one_of(TERMS),)


# no documented region of the constant: no class to count (see above)
_FACTOR = Arg("factor", ())
_TERM = Arg("term", ())

FACTOR = ArgSpace((_FACTOR,), _factor)
TERM = ArgSpace((_TERM,), _term)


def space(row: str, of: ArgSpace) -> ArgSpace:
    """`of`, counted under `row` (strategies.argspace.DRAWN)."""
    return replace(of, op=row)
