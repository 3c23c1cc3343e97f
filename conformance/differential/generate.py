"""Hypothesis strategy for programs, grown against the oracle.

Each step is drawn knowing the oracle's state after the steps before it
(shapes, dtypes, devices, which tensors require grad), so its operands and
parameters fit: an op's row in the oracle's table says which dtypes it takes
and what kinds of parameters it has, and adding a row adds it to the
programs. Steps the oracle predicts must raise are kept: torch must raise
too. A failing backward ends the program.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numpy as np
from hypothesis import strategies as st

from conformance.differential.listing import listing
from conformance.differential.lockstep import retired_by
from oracle import OPS, Engine, OracleError, OTensor
from strategies.dtypes import DTYPES, seeded_values, small_elements
from strategies.programs import (
    Leaf,
    Program,
    Step,
    basic_indices,
    broadcastable_to,
    expand_shapes,
    indexed_shape,
    view_shapes,
)
from strategies.shapes import shapes

ALIASES = ("clone", "detach", "data", "detach_", "set_data", "zeros_like")
AUTOGRAD = ("requires_grad_", "retain_grad", "zero_grad")
BACKWARD = ("backward", "backward_g")


def _family(name: str) -> str:
    spec = OPS[name]
    if name in ALIASES:
        return "alias"
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
    "math": 3,
    "inplace": 5,
    "backward": 3,
    "autograd": 1,
}
_CHOICES = tuple(f for f, w in WEIGHTS.items() for _ in range(w))
MAX_POOL = 14

# Strategies are built once: building and validating one per draw costs more
# than the draw itself.
_LEAF_SHAPES = shapes(max_side=3)


@cache
def _ints(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


@cache
def _one_of(options: tuple) -> st.SearchStrategy:
    return st.sampled_from(options)


_SEEDS = st.integers(0, 2**32 - 1)


@cache
def _scalars(dtype: str, nonzero: bool) -> st.SearchStrategy:
    values = small_elements(dtype) if DTYPES[dtype].kind != "bool" else st.booleans()
    return values.filter(lambda v: v != 0) if nonzero else values


_BOOLS = st.booleans()
_indices = cache(basic_indices)
_view_shapes = cache(view_shapes)
_expand_shapes = cache(expand_shapes)
_broadcastable_to = cache(broadcastable_to)


@cache
def _permutations(rank: int) -> st.SearchStrategy:
    return st.permutations(range(rank)).map(tuple)


@dataclass
class Growth:
    """A program being grown, with the oracle's state after its steps."""

    devices: tuple[str, ...]
    dtypes: tuple[str, ...]
    engine: Engine = field(default_factory=Engine)
    pool: list[OTensor] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    over: bool = False
    retired: set[int] = field(default_factory=set)  # gradients handed to backward

    def apply(self, step: Step) -> None:
        """Run a step on the oracle, keep it, and grow the pool."""
        self.steps.append(step)
        self.retired |= retired_by(step)
        try:
            if step.op == "leaf":
                leaf = step.leaf
                result = self.engine.leaf(leaf.values, leaf.dtype, leaf.requires_grad, leaf.device)
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


def _leaf(draw, g: Growth, shape=None, dtype=None, device=None, requires_grad=None) -> Step:
    if dtype is None:
        # two leaves in three can take part in autograd, when the run has such dtypes
        graded = tuple(d for d in g.dtypes if DTYPES[d].can_require_grad)
        dtype = draw(_one_of(graded if graded and draw(_ints(0, 2)) < 2 else g.dtypes))
    device = device or draw(_one_of(g.devices))
    if shape is None:
        shape = draw(_LEAF_SHAPES)
    values = seeded_values(dtype, tuple(shape), draw(_SEEDS))
    if requires_grad is None:
        requires_grad = DTYPES[dtype].can_require_grad and draw(_ints(0, 2)) < 2
    return Step("leaf", leaf=Leaf(values, dtype, device, requires_grad))


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
            params.append(draw(_indices(shape)))
        elif kind == "dim":
            top = rank if op == "unsqueeze" else rank - 1
            if top < 0:
                return None
            params.append(draw(_ints(0, top)))
        elif kind == "shape":
            params.append(draw(_expand_shapes(shape) if op == "expand" else _view_shapes(shape)))
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


def _second(draw, g: Growth, op: str, t: OTensor, params: tuple) -> tuple[list[Step], int] | None:
    """The second tensor operand: one from the pool that fits, or a new leaf."""
    if op in ("mm", "matmul"):
        if not 1 <= len(t.shape) <= 2:
            return None
        k = t.shape[-1]
        shape = (k, draw(_ints(1, 3))) if len(t.shape) == 2 or draw(_BOOLS) else (k,)
        fits = lambda u: u.shape == shape and u.dtype == t.dtype and u.device == t.device  # noqa: E731
        make = dict(shape=shape, dtype=t.dtype, device=t.device)
    elif op == "backward_g":
        fits = lambda u: u.shape == t.shape and u.dtype == t.dtype and not u.requires_grad  # noqa: E731
        make = dict(shape=t.shape, dtype=t.dtype, device=t.device, requires_grad=False)
    elif op in ("copy_", "setitem"):
        target = t.shape if op == "copy_" else indexed_shape(t.shape, params[0])
        other_device = op == "copy_"
        # torch 2.13 lets `x[i] = v` make an integer x require grad when v
        # does (grad_fn CopySlices); that quirk is reported in docs, not fuzzed
        plain = op == "setitem" and not DTYPES[t.dtype].can_require_grad

        def fits(u):
            return (
                _into(u.shape, target)
                and (other_device or u.device == t.device)
                and not (plain and u.requires_grad)
            )

        make = dict(
            shape=draw(_broadcastable_to(target)), device=None if other_device else t.device
        )
        if plain:
            make["requires_grad"] = False
    elif op == "set_data":
        fits = lambda u: u.dtype == t.dtype and u.device == t.device  # noqa: E731
        make = dict(dtype=t.dtype, device=t.device, requires_grad=False)
    elif OPS[op].inplace:
        fits = lambda u: _into(u.shape, t.shape) and u.dtype == t.dtype and u.device == t.device  # noqa: E731
        make = dict(shape=draw(_broadcastable_to(t.shape)), dtype=t.dtype, device=t.device)
    else:

        def fits(u):
            return _broadcasts(u.shape, t.shape) and u.dtype == t.dtype and u.device == t.device

        make = dict(shape=draw(_broadcastable_to(t.shape)), dtype=t.dtype, device=t.device)
    # mostly from the pool; a gradient is always new (see lockstep.retired_by)
    index = _pick(draw, g, fits) if op != "backward_g" and draw(_ints(0, 3)) else None
    if index is not None:
        return [], index
    return [_leaf(draw, g, **make)], len(g.pool)


def _step(draw, g: Growth, family: str) -> list[Step]:
    if family == "leaf" or not g.pool:
        return [_leaf(draw, g)] if len(g.pool) < MAX_POOL else []
    if family == "backward":
        index = _pick(draw, g, lambda t: t.requires_grad) if draw(_ints(0, 5)) else None
        if index is None:
            index = _pick(draw, g)
        t = g.pool[index]
        retain = draw(_BOOLS)
        implicit = t.shape == () or (int(np.prod(t.shape)) == 1 and draw(_BOOLS))
        if implicit or not draw(_ints(0, 7)):
            return [Step("backward", (index,), (retain,))]
        second = _second(draw, g, "backward_g", t, ())
        return second[0] + [Step("backward_g", (index, second[1]), (retain,))]
    op = draw(_one_of(FAMILIES[family]))
    index = _pick(draw, g, lambda t: _kind(t) in OPS[op].dtypes)
    if index is None:
        return []
    t = g.pool[index]
    params = _params(draw, op, t)
    if params is None:
        return []
    no_grad = draw(_ints(0, 5)) == 5  # shrinks towards grad mode on
    if OPS[op].arity == 1:
        return [Step(op, (index,), params, no_grad)]
    second = _second(draw, g, op, t, params)
    if second is None:
        return []
    return second[0] + [Step(op, (index, second[1]), params, no_grad)]


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
    for step in [_leaf(draw, g) for _ in range(draw(_ints(1, 2)))]:
        g.apply(step)
    for _ in range(draw(_ints(4, max_steps))):
        if g.over:
            break
        for step in _step(draw, g, draw(_one_of(choices))):
            g.apply(step)
            if g.over:
                break
    return Program(g.steps, render=listing)
