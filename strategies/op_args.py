"""The argument spaces of the everyday ops beyond the views (issue 33 step 4):
each argument's classes, the regions the documentation leaves undefined with
its sentence, and the procedure that draws them, over a Pick
(strategies.argspace). The oracle's rows (oracle/ops.py) hold these spaces;
the differential draws from them (conformance/differential/view_params.py).
"""

from __future__ import annotations

from dataclasses import replace

from .argspace import Arg, ArgSpace, Class, Operand, Pick

Shape = tuple[int, ...]


def _from_end(pick: Pick, d: int, n: int) -> int:
    """Dim d of n, one in four as counted from the end (d - n)."""
    return d - n if pick.ints(0, 3) == 0 else d


FROM_START = Class("counted from the start", lambda v, x, p: v >= 0)
FROM_END = Class("counted from the end", lambda v, x, p: v < 0)


# ---- flip(dims) ----------------------------------------------------------------------
def flip(pick: Pick, x: Operand) -> tuple:
    """Distinct dims (a repeated one is refused), any number of them; a 0-d
    tensor takes dim 0 or -1 too (torch wraps a dim of a 0-d tensor as of rank 1)."""
    n = max(len(x.shape), 1)
    left, dims = list(range(n)), []
    for _ in range(pick.ints(0, n)):
        d = pick.one_of(tuple(left))
        left.remove(d)
        dims.append(_from_end(pick, d, n))
    return (tuple(dims),)


_FLIP_DIMS = Arg(
    "dims",
    (
        Class("no dims", lambda v, x, p: len(v) == 0),
        Class("one dim", lambda v, x, p: len(v) == 1),
        Class("several dims", lambda v, x, p: len(v) > 1),
        Class("a dim counted from the end", lambda v, x, p: any(d < 0 for d in v)),
    ),
)


# ---- cumsum(dim) ---------------------------------------------------------------------
def one_dim(pick: Pick, x: Operand) -> tuple:
    """A dim of x (a 0-d tensor takes dim 0 or -1), one in four counted from the end."""
    n = max(len(x.shape), 1)
    return (_from_end(pick, pick.one_of(tuple(range(n))), n),)


_DIM = Arg("dim", (FROM_START, FROM_END))

_SPACES: dict[str, ArgSpace] = {
    "flip": ArgSpace((_FLIP_DIMS,), flip),
    "cumsum": ArgSpace((_DIM,), one_dim),
}
SPACES: dict[str, ArgSpace] = {name: replace(s, op=name) for name, s in _SPACES.items()}
