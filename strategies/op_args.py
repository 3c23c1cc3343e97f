"""The argument spaces of the everyday ops beyond the views (issue 33 step 4):
each argument's classes, the regions the documentation leaves undefined with
its sentence, and the procedure that draws them, over a Pick
(strategies.argspace). The oracle's rows (oracle/ops.py) hold these spaces;
the differential draws from them (conformance/differential/row_params.py).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import view_args
from .argspace import Arg, ArgSpace, Class, Operand, Pick, Undefined

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


# ---- take(index) ---------------------------------------------------------------------
def _flat(v: object) -> list[int]:
    """An index's entries, flat (an int is a 0-d index)."""
    if isinstance(v, int):
        return [v]
    return [i for item in v for i in _flat(item)]  # type: ignore[union-attr]


def _repeated(v: object, x: Operand) -> bool:
    n = max(math.prod(x.shape), 1)
    flat = [i % n for i in _flat(v)]
    return len(set(flat)) < len(flat)


def _one_d(v: object, x: Operand, p: tuple) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(i, int) for i in v)


def take(pick: Pick, x: Operand) -> tuple:
    """Entries of self read as 1-D (any may repeat: a read, and the gradient adds
    them up); a 0-d, 1-d (maybe empty) or 2-d index; one entry in four counted
    from the end. An empty self takes only an empty index."""
    n = math.prod(x.shape)
    if n == 0:
        return ([],)
    entries: list[int] = []

    def entry() -> int:
        if entries and pick.chance(0.25):  # now and then one read twice
            return pick.one_of(tuple(entries))
        i = pick.ints(0, n - 1)
        entries.append(i - n if pick.ints(0, 3) == 0 else i)
        return entries[-1]

    rank = pick.ints(0, 2)
    if rank == 0:
        return (entry(),)
    if rank == 1:
        return ([entry() for _ in range(pick.ints(0, n + 1))],)
    rows, cols = pick.ints(1, 2), pick.ints(1, 2)
    return ([[entry() for _ in range(cols)] for _ in range(rows)],)


_TAKE_INDEX = Arg(
    "index",
    (
        Class("0-d", lambda v, x, p: isinstance(v, int)),
        Class("empty", lambda v, x, p: not _flat(v)),
        Class("1-d", _one_d),
        Class("2-d", lambda v, x, p: isinstance(v, list) and any(isinstance(i, list) for i in v)),
        Class("a repeated entry", lambda v, x, p: _repeated(v, x)),
        Class("an entry counted from the end", lambda v, x, p: any(i < 0 for i in _flat(v))),
    ),
)


# ---- gather(dim, index) --------------------------------------------------------------
def _index_shape(v: object) -> Shape:
    """The shape of a nested-list index (an int: 0-d)."""
    shape: list[int] = []
    while isinstance(v, list):
        shape.append(len(v))
        v = v[0] if v else None
    return tuple(shape)


def _gather_repeats(v: object, x: Operand, p: tuple) -> bool:
    """Two entries of one slice along dim name the same element (defined: reads)."""
    if isinstance(v, int):
        return False
    idx = np.asarray(v)
    if not idx.size:
        return False
    d = p[0] % idx.ndim
    along = np.moveaxis(idx, d, -1).reshape(-1, idx.shape[d])
    return any(len(set(row.tolist())) < len(row) for row in along)


def gather(pick: Pick, x: Operand) -> tuple | None:
    """A dim, and an index of self's rank whose sizes are at most self's in the
    other dims (gather's documented contract), with entries in [0, size(dim))
    that may repeat; only its last dim may be 0 (a nested list keeps no other
    zero). A self with a 0 size is left out; a 0-d self takes dim 0 or -1 and
    a 0-d index 0."""
    if 0 in x.shape:
        return None
    r = len(x.shape)
    if r == 0:
        return (pick.one_of((0, -1)), 0)
    d = pick.ints(0, r - 1)
    sizes = [pick.ints(1, 3) if k == d else pick.ints(1, x.shape[k]) for k in range(r)]
    if pick.chance(0.15):
        sizes[-1] = 0
    n = x.shape[d]

    def fill(level: int) -> list:
        if level == r:
            return pick.ints(0, n - 1)  # type: ignore[return-value]
        return [fill(level + 1) for _ in range(sizes[level])]

    return (d - r if pick.ints(0, 3) == 0 else d, fill(0))


_GATHER_INDEX = Arg(
    "index",
    (
        Class("empty", lambda v, x, p: 0 in _index_shape(v)),
        Class(
            "smaller than self in another dim",
            lambda v, x, p: any(
                k != p[0] % max(len(x.shape), 1) and s < x.shape[k]
                for k, s in enumerate(_index_shape(v))
            ),
        ),
        Class("a repeated entry along dim", _gather_repeats),
        Class("as large as self in the other dims", lambda v, x, p: _as_large(v, x, p)),
    ),
)


def _as_large(v: object, x: Operand, p: tuple) -> bool:
    d = p[0] % max(len(x.shape), 1)
    shape = _index_shape(v)
    return all(s == x.shape[k] for k, s in enumerate(shape) if k != d)


# ---- index_fill_(dim, index, value) --------------------------------------------------
def index_fill(pick: Pick, x: Operand) -> tuple | None:
    """A dim of size > 0 (a 0-d self: 0 or -1), a 0-d or 1-d index into it whose
    entries may repeat (each fills the same value) or count from the end, and a
    value every dtype holds as itself (0 or 1: the value's dtype is self's)."""
    r = len(x.shape)
    sized = tuple(d for d in range(r) if x.shape[d] > 0) if r else (0,)
    if not sized:
        return None
    d = pick.one_of(sized)
    n = x.shape[d] if r else 1
    entries = [pick.ints(0, n - 1) for _ in range(pick.ints(0, n + 1))]
    entries = [i - n if pick.ints(0, 3) == 0 else i for i in entries]
    index: int | list[int] = entries
    if len(entries) == 1 and pick.chance(0.3):
        index = entries[0]  # a 0-d index
    return (_from_end(pick, d, max(r, 1)), index, pick.one_of((0, 1)))


_INDEX_FILL_INDEX = Arg(
    "index",
    (
        Class("0-d", lambda v, x, p: isinstance(v, int)),
        Class("empty", lambda v, x, p: not _flat(v)),
        Class("1-d", _one_d),
        Class("a repeated entry", lambda v, x, p: _repeated_along(v, x, p)),
        Class("an entry counted from the end", lambda v, x, p: any(i < 0 for i in _flat(v))),
    ),
)


def _repeated_along(v: object, x: Operand, p: tuple) -> bool:
    n = x.shape[p[0] % len(x.shape)] if x.shape else 1
    flat = [i % n for i in _flat(v)]
    return len(set(flat)) < len(flat)


_VALUE = Arg("value", (Class("zero", lambda v, x, p: v == 0), Class("one", lambda v, x, p: v == 1)))


# ---- max(dim, keepdim)[k] ------------------------------------------------------------
def reduce_dim(pick: Pick, x: Operand) -> tuple | None:
    """A dim to reduce whose size is not 0 (max refuses an empty reduction: not a
    valid call), one in four counted from the end; a 0-d tensor takes 0 or -1."""
    r = len(x.shape)
    sized = tuple(d for d in range(r) if x.shape[d] > 0) if r else (0,)
    if not sized:
        return None
    return (_from_end(pick, pick.one_of(sized), max(r, 1)),)


def max_dim(pick: Pick, x: Operand) -> tuple | None:
    """dim, keepdim, and which output: 0 the values, 1 the indices."""
    dim = reduce_dim(pick, x)
    if dim is None:
        return None
    return (*dim, pick.one_of((False, True)), pick.one_of((0, 1)))


_KEEPDIM = Arg(
    "keepdim",
    (Class("True", lambda v, x, p: v is True), Class("False", lambda v, x, p: v is False)),
)
_MAX_OUTPUT = Arg(
    "k",
    (Class("values", lambda v, x, p: v == 0), Class("indices", lambda v, x, p: v == 1)),
)


# ---- aminmax(dim=, keepdim=)[k] --------------------------------------------------------
def aminmax(pick: Pick, x: Operand) -> tuple | None:
    """dim: None (every dim; not of an empty self, refused) or a dim whose size
    is not 0; keepdim; which output (0 min, 1 max)."""
    if pick.chance(0.25) and math.prod(x.shape) > 0:
        dim: tuple = (None,)
    else:
        found = reduce_dim(pick, x)
        if found is None:
            return None
        dim = found
    return (*dim, pick.one_of((False, True)), pick.one_of((0, 1)))


_REDUCE_DIM = Arg(
    "dim",
    (
        Class("None (every dim)", lambda v, x, p: v is None),
        Class("counted from the start", lambda v, x, p: v is not None and v >= 0),
        Class("counted from the end", lambda v, x, p: v is not None and v < 0),
    ),
)
_MINMAX_OUTPUT = Arg(
    "k", (Class("min", lambda v, x, p: v == 0), Class("max", lambda v, x, p: v == 1))
)


# ---- var_mean, std_mean(dim, correction, keepdim)[k] -----------------------------------
def var_mean(pick: Pick, x: Operand) -> tuple | None:
    """A dim with more elements than the correction (0 or 1: fewer degrees of
    freedom than 1 is the undefined region below), keepdim, which output."""
    r = len(x.shape)
    sizes = x.shape if r else (1,)
    correction = pick.one_of((0, 1))
    fit = tuple(d for d in range(len(sizes)) if sizes[d] > correction)
    if not fit:
        fit, correction = tuple(d for d in range(len(sizes)) if sizes[d] > 0), 0
    if not fit:
        return None
    dim = _from_end(pick, pick.one_of(fit), len(sizes))
    return (dim, correction, pick.one_of((False, True)), pick.one_of((0, 1)))


_CORRECTION = Arg(
    "correction",
    (
        Class("0 (biased)", lambda v, x, p: v == 0),
        Class("1 (Bessel's, the default)", lambda v, x, p: v == 1),
    ),
)


def _moments_output(first: str) -> Arg:
    return Arg("k", (Class(first, lambda v, x, p: v == 0), Class("mean", lambda v, x, p: v == 1)))


def _no_freedom(name: str) -> Undefined:
    return Undefined(
        "a correction as large as the reduced dim's size (no degrees of freedom)",
        f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than "
        "the reduction factor (input numel divided by output numel).",
        "aten/src/ATen/native/ReduceOps.cpp: std_var_all_cpu / std_var_out (a warning)",
        _without_freedom,
    )


def _without_freedom(x: Operand, args: tuple) -> bool:
    """The reduced dim (args[0]) has no more elements than the correction (args[1])."""
    sizes = x.shape or (1,)
    return sizes[args[0] % len(sizes)] <= args[1]


_SPACES: dict[str, ArgSpace] = {
    "flip": ArgSpace((_FLIP_DIMS,), flip),
    "cumsum": ArgSpace((_DIM,), one_dim),
    "take": ArgSpace((_TAKE_INDEX,), take),
    "gather": ArgSpace((_DIM, _GATHER_INDEX), gather),
    "max_dim_k": ArgSpace((_DIM, _KEEPDIM, _MAX_OUTPUT), max_dim),
    "aminmax_k": ArgSpace((_REDUCE_DIM, _KEEPDIM, _MINMAX_OUTPUT), aminmax),
    "var_mean_k": ArgSpace(
        (_DIM, _CORRECTION, _KEEPDIM, _moments_output("var")),
        var_mean,
        (_no_freedom("var_mean"),),
    ),
    "std_mean_k": ArgSpace(
        (_DIM, _CORRECTION, _KEEPDIM, _moments_output("std")),
        var_mean,
        (_no_freedom("std_mean"),),
    ),
    "index_fill_": ArgSpace(
        (_DIM, _INDEX_FILL_INDEX, _VALUE),
        index_fill,
        (
            Undefined(
                "self with elements that share memory (expanded)",
                "Use of index_fill_ on expanded tensors is deprecated. Please clone() the "
                "tensor before performing this operation.",
                "aten/src/ATen/native/TensorAdvancedIndexing.cpp: index_fill_ (a warning)",
                lambda x, args: x.overlapping,
            ),
        ),
    ),
}
# unsafe_split and co. take split's arguments (strategies.view_args), counted as their own
for _name in ("unsafe_split_k", "unsafe_chunk_k", "unsafe_split_with_sizes_k"):
    _SPACES[_name] = view_args.SPACES[_name.removeprefix("unsafe_")]
_SPACES["unsafe_split_k"] = view_args.SPLIT_INTS  # (no list overload)
SPACES: dict[str, ArgSpace] = {name: replace(s, op=name) for name, s in _SPACES.items()}
