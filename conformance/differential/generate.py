"""Hypothesis strategy for programs, grown against the oracle.

Each step is made knowing the oracle's state after the steps before it
(shapes, dtypes, devices, which tensors require grad), so its operands and
parameters fit: an op's row in the oracle's table says which dtypes it takes
and what kinds of parameters it has, and adding a row adds it to the
programs. Steps the oracle predicts must raise are kept: torch must raise
too. A failing backward ends the program.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from random import Random
from typing import Any

import numpy as np
from hypothesis import strategies as st

from conformance import build
from conformance.differential.listing import listing
from conformance.differential.lockstep import retired_by
from oracle import OPS, Engine, OracleError, OTensor
from strategies.dtypes import DTYPES, seeded_values
from strategies.programs import (
    Leaf,
    Program,
    Step,
    basic_index,
    broadcastable_to,
    expand_shape,
    indexed_shape,
    leaf_shape,
    view_shape,
)

ALIASES = ("clone", "detach", "data", "detach_", "set_data", "zeros_like")
WRITES_FROM = ("copy_", "setitem", "setitem_s")  # in-place writes of another tensor's values
AUTOGRAD = ("requires_grad_", "retain_grad", "zero_grad")
BACKWARD = ("backward", "backward_g")


def _family(name: str) -> str:
    spec = OPS[name]
    if name in ALIASES:
        return "alias"
    if name in WRITES_FROM:
        return "copy"
    if name in AUTOGRAD or name in BACKWARD:
        return "autograd" if name in AUTOGRAD else "backward"
    if spec.view:
        return "view"
    if spec.inplace:
        return "inplace"
    return "math"


FAMILIES: dict[str, tuple[str, ...]] = {}
for _name in OPS:
    FAMILIES.setdefault(_family(_name), ())
    FAMILIES[_family(_name)] += (_name,)

# How often each family is drawn: aliasing, writes and backward dominate.
WEIGHTS = {
    "leaf": 1,
    "view": 4,
    "alias": 4,
    "copy": 3,
    "math": 3,
    "inplace": 4,
    "backward": 3,
    "autograd": 2,
    "motif": 8,
}
_CHOICES = tuple(f for f, w in WEIGHTS.items() for _ in range(w))
MAX_POOL = 14

# Strategies are built once: building and validating one per draw costs more
# than the draw itself.


# Each step's choices come from a random.Random seeded by one Hypothesis draw
# (see Sampler): a Hypothesis draw costs tens of µs and a step makes a dozen
# choices. Hypothesis still decides how many steps there are and each step's
# seed, so a seeded run, the example database and step deletion all work as
# before. A choice is a function of that Random.
Choice = Callable[[Random], Any]


class Sampler:
    """Makes one step's choices: `draw(choice, *args)` is `choice(rng, *args)`,
    called as Hypothesis's draw is."""

    def __init__(self, seed: int) -> None:
        self.rng = Random(seed)

    def __call__(self, choice: Callable[..., Any], *args: Any) -> Any:
        return choice(self.rng, *args)


_STEP_SEEDS = st.integers(0, 2**64 - 1)
_GO_ON = st.sampled_from((True,) * 11 + (False,))  # about a dozen steps


@cache
def _ints(low: int, high: int) -> Choice:
    return lambda rng: rng.randint(low, high)


@cache
def _one_of(options: tuple) -> Choice:
    return lambda rng: options[rng.randrange(len(options))]


def _SEEDS(rng: Random) -> int:  # noqa: N802 - a constant choice, named like the others
    return rng.getrandbits(32)


def _BOOLS(rng: Random) -> bool:  # noqa: N802
    return rng.random() < 0.5


def _small(rng: Random) -> float:
    # k * 2**e with |k| < 16 and e < 0, as strategies.dtypes.small_elements
    return rng.randint(-15, 15) * 2.0 ** rng.randint(-4, -1)


@cache
def _scalars(dtype: str, nonzero: bool) -> Choice:
    kind = DTYPES[dtype].kind

    def value(rng: Random):
        while True:
            if kind == "float":
                v = _small(rng)
            elif kind == "complex":  # no exact-zero parts: see seeded_values
                v = complex(_small(rng) or 0.5, _small(rng) or 0.5)
            elif kind == "bool":
                v = rng.random() < 0.5
            else:
                v = rng.randint(0, 15) if dtype == "uint8" else rng.randint(-8, 8)
            if not (nonzero and v == 0):
                return v

    return value


@cache
def _permutations(rank: int) -> Choice:
    return lambda rng: tuple(rng.sample(range(rank), rank))


@dataclass
class Growth:
    """A program being grown, with the oracle's state after its steps."""

    devices: tuple[str, ...]
    dtypes: tuple[str, ...]
    engine: Engine = field(default_factory=lambda: Engine(build.ORACLE_RELEASE))
    pool: list[OTensor] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    over: bool = False
    retired: set[int] = field(default_factory=set)  # gradients handed to backward
    # retain_grad() then detach_() then an in-place op trips an internal assert
    # in torch 2.13 (see docs/findings.md): such tensors are not detached
    retained: set[int] = field(default_factory=set)

    def apply(self, step: Step) -> None:
        """Run a step on the oracle, keep it, and grow the pool."""
        if self.over:
            return  # a failed backward ends the program
        self.steps.append(step)
        self.retired |= retired_by(step)
        if step.op == "retain_grad":
            self.retained.add(step.tensors[0])
        try:
            if step.op == "leaf":
                leaf = step.leaf
                result = self.engine.leaf(
                    leaf.values, leaf.dtype, leaf.requires_grad, leaf.device, leaf.inference
                )
            else:
                tensors = [self.pool[i] for i in step.tensors]
                if step.no_grad:
                    with self.engine.no_grad():
                        result = self.engine.call(step.op, tensors, step.params)
                else:
                    result = self.engine.call(step.op, tensors, step.params)
        except OracleError:
            self.over = step.op in BACKWARD
            return
        if self.engine.undefined:
            self.over = True
        if isinstance(result, OTensor) and all(result is not t for t in self.pool):
            self.pool.append(result)


def _leaf(
    draw,
    g: Growth,
    shape=None,
    dtype=None,
    device=None,
    requires_grad=None,
    nonzero=False,
    inference=None,
) -> Step:
    if dtype is None:
        # two leaves in three can take part in autograd, when the run has such dtypes
        graded = tuple(d for d in g.dtypes if DTYPES[d].can_require_grad)
        dtype = draw(_one_of(graded if graded and draw(_ints(0, 2)) < 2 else g.dtypes))
    device = device or draw(_one_of(g.devices))
    if shape is None:
        shape = draw(leaf_shape)
    values = seeded_values(dtype, tuple(shape), draw(_SEEDS))
    if nonzero:
        values = np.where(values == 0, 1, values).astype(values.dtype)
    if requires_grad is None:
        requires_grad = DTYPES[dtype].can_require_grad and draw(_ints(0, 2)) < 2
    # now and then a tensor made under inference_mode (never one that requires grad)
    if inference is None:
        inference = not requires_grad and draw(_ints(0, 11)) == 11
    return Step("leaf", leaf=Leaf(values, dtype, device, requires_grad, inference))


def _pick(draw, g: Growth, fits=lambda t: True) -> int | None:
    """A pool index whose tensor fits: mostly the latest, so that steps build
    on each other into chains, else any."""
    candidates = [i for i, t in enumerate(g.pool) if i not in g.retired and fits(t)]
    if not candidates:
        return None
    if draw(_ints(0, 2)) < 2:
        return candidates[-1]
    return candidates[-1 - draw(_ints(0, len(candidates) - 1))]


def _kind(t: OTensor) -> str:
    return DTYPES[t.dtype].kind


def _scalar(draw, op: str, name: str, t: OTensor):
    if op == "pow_s":
        return draw(_one_of((0, 1, 2, 3)))
    return draw(_scalars(t.dtype, op.startswith("div_s")))


def _params(draw, op: str, t: OTensor) -> tuple | None:
    """Parameters for `op` on `t`, or None if it has none that fit."""
    spec, shape, rank = OPS[op], t.shape, len(t.shape)
    if op == "select":
        live = [d for d in range(rank) if shape[d] > 0]
        if not live:
            return None
        d = draw(_one_of(tuple(live)))
        return (d, draw(_ints(-shape[d], shape[d] - 1)))
    if op == "clamp_":
        lo, hi = sorted([_scalar(draw, op, "min", t), _scalar(draw, op, "max", t)])
        return (lo, hi)
    params: list = []
    for name, kind in zip(spec.params, spec.param_kinds, strict=True):
        if kind == "index":
            params.append(draw(basic_index, shape))
        elif kind == "dim":
            top = rank if op == "unsqueeze" else rank - 1
            if top < 0:
                return None
            params.append(draw(_ints(0, top)))
        elif kind == "shape":
            params.append(draw(expand_shape if op == "expand" else view_shape, shape))
        elif kind == "dims":
            params.append(draw(_permutations(rank)))
        elif kind == "scalar":
            params.append(_scalar(draw, op, name, t))
        elif kind == "bool":
            params.append(draw(_BOOLS))
        else:
            return None
    if op == "t" and rank > 2:
        return None
    return tuple(params)


def _broadcasts(a: tuple, b: tuple) -> bool:
    return all(x == y or x == 1 or y == 1 for x, y in zip(reversed(a), reversed(b), strict=False))


def _into(src: tuple, dst: tuple) -> bool:
    return len(src) <= len(dst) and all(
        s in (1, d) for s, d in zip(reversed(src), reversed(dst), strict=False)
    )


def _mismatched(draw, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """A shape that does not broadcast with `shape`, or None if none is near."""
    sized = [d for d, n in enumerate(shape) if n != 1]
    if not sized:
        return None
    d = draw(_one_of(tuple(sized)))
    other = 2 if shape[d] != 2 else 3
    return shape[:d] + (other,) + shape[d + 1 :]


def _nonzero(u: OTensor) -> bool:
    # a zero divisor gives an infinity whose sign follows the sign of the
    # zero, which no op promises; divisors are kept away from zero
    return not np.any(np.abs(u.values()) < 1e-3)


def _second(draw, g: Growth, op: str, t: OTensor, params: tuple) -> tuple[list[Step], int] | None:
    """The second tensor operand: one from the pool that fits, or a new leaf."""
    same = dict(dtype=t.dtype, device=t.device)

    def alike(u: OTensor) -> bool:
        return u.dtype == t.dtype and u.device == t.device

    if op in ("mm", "matmul"):
        if not 1 <= len(t.shape) <= 2:
            return None
        k = t.shape[-1]
        shape = (k, draw(_ints(1, 3))) if len(t.shape) == 2 or draw(_BOOLS) else (k,)

        def fits(u):
            return u.shape == shape and alike(u)

        make = dict(shape=shape, **same)
    elif op == "backward_g":
        fits = None  # always a new tensor: see lockstep.retired_by
        make = dict(shape=t.shape, requires_grad=False, **same)
    elif op in ("copy_", "setitem"):
        target = t.shape if op == "copy_" else indexed_shape(t.shape, params[0])
        other_device = op == "copy_"
        # setitem of a 0-d value goes through fill_, whose backward hands a real
        # value a complex gradient in torch 2.13 (docs/findings.md): setitem
        # writes values of the tensor's own dtype, copy_ crosses dtypes
        own_dtype = op == "setitem"
        # torch 2.13 lets `x[i] = v` make an integer x require grad when v
        # does (grad_fn CopySlices): a known failure, not fuzzed here
        plain = op == "setitem" and not DTYPES[t.dtype].can_require_grad

        def fits(u):
            return (
                _into(u.shape, target)
                and (other_device or u.device == t.device)
                and not (plain and u.requires_grad)
                and not (own_dtype and u.dtype != t.dtype)
            )

        make = dict(shape=draw(broadcastable_to, target))
        if own_dtype:
            make["dtype"] = t.dtype
        if not other_device:
            make["device"] = t.device
        if plain:
            make["requires_grad"] = False
    elif op == "set_data":
        # the same shape: after `x.data = y` changes a leaf's shape, whether its
        # gradient still fits depends on when torch made its accumulator

        def fits(u):
            return alike(u) and not u.inference and u.shape == t.shape

        make = dict(shape=t.shape, requires_grad=False, inference=False, **same)
    else:  # pointwise, in place or not
        divides = op.startswith("div")
        into = OPS[op].inplace

        def fits(u):
            shaped = _into(u.shape, t.shape) if into else _broadcasts(u.shape, t.shape)
            return shaped and alike(u) and not (divides and not _nonzero(u))

        make = dict(shape=draw(broadcastable_to, t.shape), nonzero=divides, **same)
        if t.shape and not draw(_ints(0, 11)):  # now and then shapes that must not fit
            bad = _mismatched(draw, tuple(t.shape))
            if bad is not None:
                make["shape"] = bad
                g.apply(_leaf(draw, g, **make))
                return [], len(g.pool) - 1
    if op in ("copy_", "setitem", "set_data"):  # writing a tensor into itself shows little
        own, inner = g.pool.index(t), fits
        fits = lambda u: u is not g.pool[own] and inner(u)  # noqa: E731
    # mostly from the pool
    index = _pick(draw, g, fits) if fits is not None and draw(_ints(0, 3)) else None
    if index is not None:
        return [], index
    return [_leaf(draw, g, **make)], len(g.pool)


def _apply_op(
    draw,
    g: Growth,
    op: str,
    index: int | None = None,
    other: int | None = None,
    no_grad: bool | None = None,
) -> int | None:
    """Apply `op` to pool tensor `index` (picked if None), with `other` as its
    second operand when given. Returns the index of its result, or of its
    operand for ops that return it; None if the op does not fit."""
    spec = OPS[op]
    if index is None:
        index = _pick(draw, g, lambda t: _kind(t) in spec.dtypes)
        if index is None:
            return None
    t = g.pool[index]
    if _kind(t) not in spec.dtypes or (op == "detach_" and index in g.retained):
        return None
    if t.inference and (
        op in UNMODELLED_ON_INFERENCE or (not t.counterless and _family(op) != "math")
    ):
        return None  # the model covers inference tensors and their views, not the rest
    if op == "matmul" and t.no_grad_view:
        return None  # which tensors matmul saves for a view made under no_grad: not modelled
    params = _params(draw, op, t)
    if params is None:
        return None
    if no_grad is None:
        no_grad = draw(_ints(0, 5)) == 5  # shrinks towards grad mode on
    tensors: tuple[int, ...] = (index,)
    if spec.arity == 2:
        if other is None:
            second = _second(draw, g, op, t, params)
            if second is None:
                return None
            for step in second[0]:
                g.apply(step)
            other = second[1]
        tensors = (index, other)
    before = len(g.pool)
    g.apply(Step(op, tensors, params, no_grad))
    return len(g.pool) - 1 if len(g.pool) > before else index


def _backward(draw, g: Growth, index: int | None = None, retain: bool | None = None) -> None:
    if index is None:
        index = _pick(draw, g, lambda t: t.requires_grad) if draw(_ints(0, 5)) else None
        if index is None:
            index = _pick(draw, g)
    t = g.pool[index]
    retain = draw(_BOOLS) if retain is None else retain
    implicit = t.shape == () or (int(np.prod(t.shape)) == 1 and draw(_BOOLS))
    if implicit or not draw(_ints(0, 7)):
        g.apply(Step("backward", (index,), (retain,)))
        return
    second = _second(draw, g, "backward_g", t, ())
    for step in second[0]:
        g.apply(step)
    g.apply(Step("backward_g", (index, second[1]), (retain,)))


def _graded(draw, g: Growth) -> int:
    """A floating or complex tensor that requires grad: from the pool or new."""
    index = _pick(draw, g, lambda t: t.requires_grad and _kind(t) in ("float", "complex"))
    if index is None or not draw(_ints(0, 3)):
        graded = tuple(d for d in g.dtypes if DTYPES[d].can_require_grad)
        dtype = draw(_one_of(graded or g.dtypes))
        g.apply(_leaf(draw, g, dtype=dtype, requires_grad=bool(graded)))
        index = len(g.pool) - 1
    return index


def _fitting(ops: tuple[str, ...], t: OTensor) -> tuple[str, ...]:
    return tuple(op for op in ops if _kind(t) in OPS[op].dtypes)


SAVERS = tuple(n for n in FAMILIES["math"] if OPS[n].saves)
NON_SAVERS = tuple(n for n in FAMILIES["math"] if not OPS[n].saves)
SAVERS_OF_ONE = tuple(n for n in SAVERS if OPS[n].arity == 1)
# ops whose behaviour on inference tensors the model leaves out
UNMODELLED_ON_INFERENCE = ("set_data", "detach_", "retain_grad", "zeros_like")
# write through: itself, or an alias; .data and detach() are what the rules contrast
ALIAS_FOR_WRITE = (None, "data", "detach", "data", "detach", "getitem", "transpose", "select")


# Motifs: short chains built so that aliasing, writes and backward meet, the
# interactions the rules are about. Each is ordinary steps.
def _motif_written_after_use(draw, g: Growth) -> None:
    x = _graded(draw, g)
    # ops that save what the write changes (backward must refuse, or see the
    # new values through .data), and ops that save nothing (backward must not care)
    ops = _fitting(SAVERS if draw(_BOOLS) else NON_SAVERS, g.pool[x])
    if not ops:
        return
    before = len(g.steps)
    y = _apply_op(draw, g, draw(_one_of(ops)), x, no_grad=False)
    if y is None:
        return
    operands = g.steps[-1].tensors if len(g.steps) > before else (x,)
    target = y if draw(_BOOLS) else draw(_one_of(tuple(operands)))
    alias = draw(_one_of(ALIAS_FOR_WRITE))
    if alias is not None:
        target = _apply_op(draw, g, alias, target, no_grad=False) or target
    writes = _fitting(FAMILIES["inplace"], g.pool[target])
    if writes:
        t = g.pool[target]
        # a leaf that requires grad (or a view of one) is only written under no_grad
        leafish = t.requires_grad and (t._fn is None or (t.base is not None and t.base._fn is None))
        _apply_op(draw, g, draw(_one_of(writes)), target, no_grad=True if leafish else None)
    _backward(draw, g, y)


def _motif_written_through_alias(draw, g: Growth) -> None:
    """y = op(x) saving y or x; write the saved one through .data or detach();
    backward: it must raise (detach) or see the new values (.data)."""
    x = _graded(draw, g)
    ops = _fitting(SAVERS_OF_ONE, g.pool[x])
    if not ops:
        return
    op = draw(_one_of(ops))
    y = _apply_op(draw, g, op, x, no_grad=False)
    if y is None:
        return
    saved = y if "result" in OPS[op].saves else x
    alias = _apply_op(draw, g, draw(_one_of(("data", "detach"))), saved, no_grad=False)
    if alias is None:
        return
    writes = _fitting(FAMILIES["inplace"], g.pool[alias])
    if writes:
        _apply_op(draw, g, draw(_one_of(writes)), alias, no_grad=False)
    _backward(draw, g, y)


def _motif_copy_flows(draw, g: Growth) -> None:
    src = _graded(draw, g)
    how = draw(_one_of(("zeros_like", "leaf")))
    if how == "zeros_like":
        dst = _apply_op(draw, g, "zeros_like", src, no_grad=False)
    else:
        s = g.pool[src]
        shape = draw(expand_shape, tuple(s.shape))
        g.apply(_leaf(draw, g, shape=shape, requires_grad=False))
        dst = len(g.pool) - 1
    if dst is not None and draw(_BOOLS):  # into a view: strided, offset, transposed
        view = draw(_one_of(("transpose", "t", "getitem", "permute")))
        dst = _apply_op(draw, g, view, dst, no_grad=False) or dst
    if dst is None or not _into(g.pool[src].shape, g.pool[dst].shape):
        return
    _apply_op(draw, g, "copy_", dst, other=src)
    out = dst
    if draw(_BOOLS):
        out = _apply_op(draw, g, draw(_one_of(_fitting(FAMILIES["math"], g.pool[dst]))), dst) or dst
    _backward(draw, g, out)


def _motif_clone_flows(draw, g: Growth) -> None:
    x = _graded(draw, g)
    c = _apply_op(draw, g, "clone", x, no_grad=False)
    if c is None:
        return
    if draw(_BOOLS):
        writes = _fitting(FAMILIES["inplace"], g.pool[c])
        if writes:
            _apply_op(draw, g, draw(_one_of(writes)), c)
    if draw(_BOOLS):  # a second path from x
        other = _apply_op(draw, g, draw(_one_of(_fitting(FAMILIES["math"], g.pool[x]))), x)
        if other is not None:
            _backward(draw, g, other, retain=True)
    _backward(draw, g, c)


def _motif_view_written(draw, g: Growth) -> None:
    x = _graded(draw, g)
    base = _apply_op(draw, g, draw(_one_of(("mul_s", "add_s", "clone"))), x, no_grad=False)
    if base is None:
        return
    earlier = _apply_op(draw, g, draw(_one_of(FAMILIES["view"])), base) if draw(_BOOLS) else None
    view = _apply_op(draw, g, draw(_one_of(FAMILIES["view"])), base)
    if view is None:
        return
    writes = _fitting(FAMILIES["inplace"] + FAMILIES["copy"], g.pool[view])
    if writes:
        _apply_op(draw, g, draw(_one_of(writes)), view)
    _backward(draw, g, draw(_one_of(tuple(i for i in (base, view, earlier) if i is not None))))


def _motif_accumulates(draw, g: Growth) -> None:
    x = _graded(draw, g)
    y = _apply_op(draw, g, draw(_one_of(_fitting(FAMILIES["math"], g.pool[x]))), x)
    if y is None:
        return
    _backward(draw, g, y, retain=True)
    second = y if draw(_BOOLS) else _apply_op(draw, g, draw(_one_of(FAMILIES["math"])), x)
    _backward(draw, g, second if second is not None else y)


def _window(draw, shape: tuple[int, ...]) -> tuple:
    """A basic index that keeps most of a tensor but not all: the last
    dimension always loses an end or every other element, the others now and
    then, so the view strides past what it leaves out and neither starts nor
    ends where its storage does."""
    parts = []
    for d, n in enumerate(shape):
        last = d == len(shape) - 1
        if n < 2 or not (last or draw(_ints(0, 2)) == 0):
            parts.append(slice(None))
        elif n == 2:
            start = draw(_ints(0, 1))
            parts.append(slice(start, start + 1))
        else:
            trims = (slice(1, None), slice(0, n - 1), slice(None, None, 2), slice(1, n - 1))
            parts.append(trims[draw(_ints(0, 3))])
    return tuple(parts)


def _motif_aliases_of_a_view(draw, g: Growth) -> None:
    x = _pick(draw, g) if draw(_BOOLS) else _graded(draw, g)
    if x is None:
        return
    inference_alias = g.pool[x].inference and not g.pool[x].counterless  # see _apply_op
    if g.pool[x].shape and not inference_alias and draw(_ints(0, 2)):
        before = len(g.pool)
        g.apply(Step("getitem", (x,), (_window(draw, g.pool[x].shape),), draw(_ints(0, 5)) == 5))
        view = len(g.pool) - 1 if len(g.pool) > before else None
    else:
        views = ("transpose", "t", "getitem", "permute", "select")
        view = _apply_op(draw, g, draw(_one_of(views)), x)
    if view is None:
        return
    alias = _apply_op(draw, g, draw(_one_of(("detach", "data", "clone"))), view)
    if alias is None:
        return
    target = draw(_one_of((alias, x, view)))
    writes = _fitting(FAMILIES["inplace"] + FAMILIES["copy"], g.pool[target])
    if writes:
        _apply_op(draw, g, draw(_one_of(writes)), target, no_grad=draw(_BOOLS))


def _motif_requires_grad_flags(draw, g: Growth) -> None:
    x = _pick(draw, g)
    if x is None:
        return
    g.apply(Step("requires_grad_", (x,), (draw(_ints(0, 2)) > 0,)))
    if draw(_BOOLS):
        g.apply(Step("retain_grad", (x,)))
    y = _apply_op(draw, g, draw(_one_of(FAMILIES["math"])), x)
    if y is not None:
        _backward(draw, g, y)


def _motif_no_grad_block(draw, g: Growth) -> None:
    x = _graded(draw, g)
    for _ in range(draw(_ints(1, 3))):
        family = draw(_one_of(("math", "view", "inplace", "alias")))
        x = _apply_op(draw, g, draw(_one_of(FAMILIES[family])), x, no_grad=True) or x
    if draw(_BOOLS):  # and back in grad mode, on what no_grad made
        writes = _fitting(FAMILIES["inplace"], g.pool[x])
        if writes:
            _apply_op(draw, g, draw(_one_of(writes)), x, no_grad=False)


def _motif_write_expanded(draw, g: Growth) -> None:
    x = _pick(draw, g) if draw(_BOOLS) else _graded(draw, g)
    if x is None:
        return
    if g.pool[x].inference and not g.pool[x].counterless:
        return  # views of .data or detach() of an inference tensor: not modelled
    shape = g.pool[x].shape
    grown = (2,) + tuple(shape)
    g.apply(Step("expand", (x,), (grown,), draw(_BOOLS)))
    v = len(g.pool) - 1
    writes = _fitting(FAMILIES["inplace"] + FAMILIES["copy"], g.pool[v])
    if writes and g.pool[v].shape == grown:
        _apply_op(draw, g, draw(_one_of(writes)), v)


def _motif_inference_meets_grad(draw, g: Growth) -> None:
    x = _graded(draw, g)
    shape = g.pool[x].shape
    made = _leaf(
        draw,
        g,
        shape=shape,
        dtype=g.pool[x].dtype,
        device=g.pool[x].device,
        requires_grad=False,
        inference=True,
    )
    g.apply(made)
    t = len(g.pool) - 1
    op = draw(_one_of(("mul", "div", "add", "sub")))
    first, second = (x, t) if draw(_BOOLS) else (t, x)
    y = _apply_op(draw, g, op, first, other=second, no_grad=False)
    if y is not None and y != first:
        _backward(draw, g, y)


MOTIFS = (
    _motif_inference_meets_grad,
    _motif_written_through_alias,
    _motif_written_after_use,
    _motif_written_after_use,  # the heart of the rules: twice as often
    _motif_aliases_of_a_view,
    _motif_aliases_of_a_view,  # offsets and strides: where backends most often go wrong
    _motif_requires_grad_flags,
    _motif_no_grad_block,
    _motif_write_expanded,
    _motif_copy_flows,
    _motif_clone_flows,
    _motif_view_written,
    _motif_accumulates,
)


def _step(draw, g: Growth, family: str) -> None:
    if family == "leaf" or not g.pool:
        if len(g.pool) < MAX_POOL:
            g.apply(_leaf(draw, g))
        return
    if family == "backward":
        _backward(draw, g)
    elif family == "motif":
        draw(_one_of(MOTIFS))(draw, g)
    else:
        _apply_op(draw, g, draw(_one_of(FAMILIES[family])))


@st.composite
def programs(
    draw: st.DrawFn,
    devices: tuple[str, ...],
    dtypes: tuple[str, ...],
    max_steps: int = 24,
    salt: int = 0,
) -> Program:
    """Programs over `devices` and `dtypes`. Runs with one fixed seed draw the
    same choices everywhere; `salt` turns the same choices into other
    programs, so shards of a seeded run differ."""
    g = Growth(devices, dtypes)
    choices = _CHOICES[salt % len(_CHOICES) :] + _CHOICES[: salt % len(_CHOICES)]
    # Each step's Random is seeded by every seed drawn so far, not its own
    # alone: Hypothesis hands out the same few seeds (0, 2**64 - 1, ...) at
    # many places, and programs would repeat each other's steps.
    state = _mix(0, draw(_STEP_SEEDS))
    g.apply(_leaf(Sampler(state), g))
    # one "go on?" draw before each step, as Hypothesis's own lists do
    while len(g.steps) < max_steps and not g.over and draw(_GO_ON):
        state = _mix(state, draw(_STEP_SEEDS))
        step = Sampler(state)
        _step(step, g, step(_one_of(choices)))
    return Program(g.steps, render=listing)


def _mix(state: int, seed: int) -> int:
    """The next state of a 64-bit linear congruential chain, fed `seed`."""
    return (state * 6364136223846793005 + seed + 1442695040888963407) % 2**64
