"""How the view ops' arguments are drawn (their spaces: strategies.view_args):
one procedure per op over a Pick (strategies.argspace), returning the
arguments, or None where none fit the operand. Each primitive, in its order,
is one of the differential's draws: a change here changes the programs a
seed draws (tools/fingerprint.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache

from .argspace import LEFT_OUT, Choose, Operand, Pick, spellings

Shape = tuple[int, ...]


# ---- primitives shared by the procedures ----------------------------------------
def _dim(pick: Pick, shape: Shape, sized: bool = False) -> int | None:
    """A dim of shape (one of size > 0 if `sized`); one in four counted from the end."""
    dims = tuple(d for d, n in enumerate(shape) if n > 0 or not sized)
    if not dims:
        return None
    return _from_end(pick, pick.one_of(dims), len(shape))


def _output(pick: Pick, count: int) -> int:
    """An output index of `count` outputs; one in four counted from the end."""
    k = pick.ints(0, count - 1)
    return k - count if pick.ints(0, 3) == 0 else k


def pieces(n: int, how: str, arg: int | list[int]) -> list[int]:
    """The sizes of the pieces x.split(arg) / chunk(arg) / tensor_split(arg)
    cuts a dim of size n > 0 into (tensor_split: n >= 0); as oracle.view_ops
    (which this layer may not import: tests/test_import_graph.py), and held to
    it by tests/oracle/test_view_args.py. A list is split's sizes, or
    tensor_split's indices (cuts)."""
    if how == "split":
        return list(arg) if isinstance(arg, list) else [min(arg, n - i) for i in range(0, n, arg)]
    if how == "chunk":
        return pieces(n, "split", -(-n // arg))
    if isinstance(arg, list):  # tensor_split(indices): x[:i0], x[i0:i1], ..., x[ik:]
        bounds = [0, *cuts(n, arg), n]
        return [max(b - a, 0) for a, b in zip(bounds, bounds[1:], strict=False)]
    return [n // arg + (i < n % arg) for i in range(arg)]  # tensor_split


def kept_sizes(sizes: Sequence[int], shape: Shape) -> Shape:
    """expand's sizes with each -1 the size of the dim of `shape` it keeps."""
    lead = len(sizes) - len(shape)
    return tuple(shape[i - lead] if n == -1 else n for i, n in enumerate(sizes))


def cuts(n: int, indices: list[int]) -> list[int]:
    """Where tensor_split's indices cut a dim of size n, as slices' bounds do:
    one below 0 counted from the end, each clamped to 0..n."""
    return [min(max(i + n if i < 0 else i, 0), n) for i in indices]


def _divisors(n: int) -> tuple[int, ...]:
    return tuple(k for k in range(1, n + 1) if n % k == 0)


# ---- the first ten (getitem ... squeeze) ------------------------------------------
def _one_index(pick: Pick, n: int) -> int | slice:
    kind = pick.ints(0, 2 if n > 0 else 1)
    if kind == 0:
        return slice(None)
    if kind == 1:
        start, stop, step = pick.ints(0, n), pick.ints(0, n), pick.ints(1, 3)
        return slice(*(v if pick.chance(0.7) else None for v in (start, stop, step)))
    return pick.ints(0, n - 1)


def basic_index(pick: Pick, shape: Shape) -> tuple:
    """A basic indexing tuple: ints and slices with a positive step."""
    if not shape:
        return ()
    return tuple(_one_index(pick, n) for n in shape[: pick.ints(1, len(shape))])


@cache
def _view_candidates(shape: Shape) -> tuple[Shape, ...]:
    n = math.prod(shape)
    candidates = {(n,), shape + (1,), (1,) + shape}
    if len(shape) >= 2:
        candidates.add(shape[:-2] + (shape[-2] * shape[-1],))
        candidates.add((shape[0] * shape[1],) + shape[2:])
    for d, size in enumerate(shape):
        for f in (2, 3):
            if size % f == 0 and size > f:
                candidates.add(shape[:d] + (f, size // f) + shape[d + 1 :])
    if n == 0:
        candidates.add((0,))
    return tuple(sorted(candidates))


def view_shape(pick: Pick, shape: Shape) -> Shape:
    """A shape with the same number of elements: flattened, split, merged, with 1s."""
    return pick.one_of(_view_candidates(shape))


def expand_shape(pick: Pick, shape: Shape) -> Shape:
    """A shape `shape` expands to: size-1 dims grown, maybe a new leading dim."""
    lead = (pick.ints(1, 2),) if pick.chance(0.5) else ()
    return lead + tuple(pick.ints(1, 3) if n == 1 else n for n in shape)


def permutation(pick: Pick, rank: int) -> tuple[int, ...]:
    """A permutation of range(rank), drawn as random.Random.sample draws one."""
    pool, out = list(range(rank)), []
    for i in range(rank):
        j = pick.ints(0, rank - i - 1)
        out.append(pool[j])
        pool[j] = pool[rank - i - 1]
    return tuple(out)


def getitem(pick: Pick, x: Operand) -> tuple:
    return (basic_index(pick, x.shape),)


def select(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape, sized=True)
    return None if d is None else (d, pick.ints(-x.shape[d], x.shape[d] - 1))


def new_shape(pick: Pick, x: Operand) -> tuple:
    """A shape of as many elements, spelled as a tuple, a list or one by one."""
    return (spellings(pick, view_shape(pick, x.shape)),)


def dims(count: int, extra: int = 0) -> Choose:
    """`count` dims in 0..rank - 1 + extra (unsqueeze: one past the last),
    each one in four counted from the end; a 0-d operand takes dim 0 or -1
    ("a 0-d tensor takes dims -1 and 0", oracle.view_geometry.wrap_dim)."""

    def choose(pick: Pick, x: Operand) -> tuple:
        n = max(len(x.shape) + extra, 1)
        return tuple(_from_end(pick, pick.ints(0, n - 1), n) for _ in range(count))

    return choose


def squeeze(pick: Pick, x: Operand) -> tuple:
    """One dim (three in five; of size 1 one time in two where there is one), a
    tuple of distinct dims (one in five, in the order drawn), or none: every dim
    of size 1 (left out, one in five)."""
    form = pick.ints(0, 4)
    if form == 4:
        return (LEFT_OUT,)
    n = max(len(x.shape), 1)
    if form < 3:
        ones = tuple(d for d, size in enumerate(x.shape) if size == 1)
        d = pick.one_of(ones) if ones and pick.chance(0.5) else pick.ints(0, n - 1)
        return (_from_end(pick, d, n),)
    chosen = permutation(pick, n)[: pick.ints(1, n)]
    return (tuple(_from_end(pick, d, n) for d in chosen),)


def _from_end(pick: Pick, d: int, n: int) -> int:
    """Dim d of n, one in four as counted from the end (d - n)."""
    return d - n if pick.ints(0, 3) == 0 else d


def t(pick: Pick, x: Operand) -> tuple | None:
    return () if len(x.shape) <= 2 else None


def permute(pick: Pick, x: Operand) -> tuple:
    """An order of the dims, spelled as a tuple, a list or one by one."""
    return (spellings(pick, permutation(pick, len(x.shape))),)


def expand(pick: Pick, x: Operand) -> tuple:
    """A shape x expands to (expand_shape), one time in four with one of x's
    own dims kept as -1, spelled as a tuple, a list or one by one."""
    shape = expand_shape(pick, x.shape)
    if x.shape and pick.ints(0, 3) == 0:
        at = len(shape) - len(x.shape) + pick.ints(0, len(x.shape) - 1)
        shape = shape[:at] + (-1,) + shape[at + 1 :]
    return (spellings(pick, shape),)


# ---- the rest of tensor_view.rst --------------------------------------------------
def narrow(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape)
    if d is None:
        return None
    n = x.shape[d]
    start = pick.ints(0, n)
    return (d, start, pick.ints(0, n - start))


def diagonal(pick: Pick, x: Operand) -> tuple | None:
    r = len(x.shape)
    if r < 2:
        return None
    d1, d2 = pick.one_of(tuple((a, b) for a in range(r) for b in range(r)))
    if d1 == d2:
        d2 = (d1 + 1) % r
    return (pick.ints(-2, 2), d1, d2)


def two_dims(pick: Pick, x: Operand) -> tuple:
    """Two dims, each one in four counted from the end; 0 or -1 of a 0-d operand."""
    shape = x.shape or (1,)
    return (_dim(pick, shape), _dim(pick, shape))


def unflatten(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape)
    if d is None or x.shape[d] == 0:
        return None
    n = x.shape[d]
    a = pick.one_of(_divisors(n))
    sizes = (a, n // a)
    return (d, (-1, sizes[1]) if pick.ints(0, 3) == 0 else sizes)


def unfold(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape, sized=True)
    if d is None:
        return None
    return (d, pick.ints(1, x.shape[d]), pick.ints(1, 3))


def as_strided(pick: Pick, x: Operand) -> tuple | None:
    """A window inside the tensor's own elements (which must be laid out
    contiguously), so that its gradient lands on them."""
    n = math.prod(x.shape)
    if not x.contiguous or n == 0:
        return None
    size = tuple(pick.ints(1, 3) for _ in range(pick.ints(1, 2)))
    stride = tuple(pick.ints(0, 2) for _ in size)
    reach = sum((a - 1) * s for a, s in zip(size, stride, strict=True))
    if reach >= n:
        return None
    return (size, stride, x.offset + pick.ints(0, n - 1 - reach))


def rank(low: int, high: int | None = None) -> Choose:
    """No arguments, for operands of rank low..high (no upper bound if None)."""

    def choose(pick: Pick, x: Operand) -> tuple | None:
        fits = low <= len(x.shape) and (high is None or len(x.shape) <= high)
        return () if fits else None

    return choose


def unbind(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape, sized=True)
    return None if d is None else (d, _output(pick, x.shape[d]))


def split(pick: Pick, x: Operand) -> tuple | None:
    """split(size, dim), or one in four split(sizes, dim): its list overload."""
    if pick.ints(0, 3) == 0:
        return split_with_sizes(pick, x)
    return split_ints(pick, x)


def split_ints(pick: Pick, x: Operand) -> tuple | None:
    """split(size, dim) (unsafe_split takes no list)."""
    d = _dim(pick, x.shape, sized=True)
    if d is None:
        return None
    size = pick.ints(1, x.shape[d])
    return (size, d, _output(pick, len(pieces(x.shape[d], "split", size))))


def split_with_sizes(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape, sized=True)
    if d is None:
        return None
    return _sizes_dim_output(pick, x.shape[d], d)


def _sizes_dim_output(pick: Pick, n: int, d: int) -> tuple:
    sizes: list[int] = []
    while sum(sizes) < n and len(sizes) < 3:
        sizes.append(pick.ints(0, n - sum(sizes)))
    sizes[-1] += n - sum(sizes)
    return (sizes, d, _output(pick, len(sizes)))


def chunk(pick: Pick, x: Operand) -> tuple | None:
    d = _dim(pick, x.shape, sized=True)
    if d is None:
        return None
    chunks = pick.ints(1, x.shape[d] + 1)
    return (chunks, d, _output(pick, len(pieces(x.shape[d], "chunk", chunks))))


def tensor_split(pick: Pick, x: Operand) -> tuple | None:
    """tensor_split(sections, dim), or one in three tensor_split(indices, dim):
    0 to 3 indices from one before the dim's start to one past its end, each
    one in four counted from the end, in the order drawn one time in two
    (they may decrease) and sorted the other."""
    d = _dim(pick, x.shape)
    if d is None:
        return None
    if pick.ints(0, 2) == 0:
        n = x.shape[d]
        indices = [
            pick.ints(-n - 1, -1) if pick.ints(0, 3) == 0 else pick.ints(0, n + 1)
            for _ in range(pick.ints(0, 3))
        ]
        if pick.chance(0.5):
            indices.sort()
        return (indices, d, _output(pick, len(indices) + 1))
    sections = pick.ints(1, 4)
    return (sections, d, _output(pick, sections))


def _even(pick: Pick, n: int) -> int:
    return pick.one_of(_divisors(n)) if n else 1


def hsplit(pick: Pick, x: Operand) -> tuple | None:
    if not x.shape:
        return None
    sections = _even(pick, x.shape[1 if len(x.shape) > 1 else 0])
    return (sections, _output(pick, sections))


def vsplit(pick: Pick, x: Operand) -> tuple | None:
    if len(x.shape) < 2:
        return None
    sections = _even(pick, x.shape[0])
    return (sections, _output(pick, sections))
