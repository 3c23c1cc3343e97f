"""The argument spaces of the custom autograd.Function rows that take a
python argument (issue 37): each argument's classes and the procedure that draws it,
over a Pick (strategies.argspace). The oracle's rows (oracle/ops.py) hold
these spaces; the differential (conformance.differential.growth) and the
property tests (conformance/test_functions.py) both draw from them, so a run's
argument coverage shows which were drawn.
"""

from __future__ import annotations

from .argspace import Arg, ArgSpace, Class, Operand, Pick

# AddDirty's c multiplies y before x.add_: 1 adds y as it is, a negative c
# subtracts, another positive one scales (all exact in every floating dtype)
_SCALES = (1.0, 2.0, -0.5, 3.0)


def scale(pick: Pick, x: Operand) -> tuple:
    """c, a real python scalar: any tensor takes one."""
    return (pick.one_of(_SCALES),)


_C = Arg(
    "c",
    (
        Class("1 (y as it is)", lambda v, x, p: v == 1),
        Class("negative", lambda v, x, p: v < 0),
        Class("another positive", lambda v, x, p: v > 0 and v != 1),
    ),
)


def which(pick: Pick, x: Operand) -> tuple:
    """The input AddNoGrad's backward returns None for: 0 (x) or 1 (y)."""
    return (pick.ints(0, 1),)


_WHICH = Arg(
    "which",
    (
        Class("None for x", lambda v, x, p: v == 0),
        Class("None for y", lambda v, x, p: v == 1),
    ),
)

SPACES: dict[str, ArgSpace] = {
    "fn_add_dirty_": ArgSpace((_C,), scale, op="fn_add_dirty_"),
    "fn_none_grad": ArgSpace((_WHICH,), which, op="fn_none_grad"),
}
