"""A program being grown against the oracle: its pool, its leaves, and single
ops applied to pool tensors with operands and parameters that fit.

The motif modules build their scenarios with this public API: `Growth` (the
pool, `g.apply(step)`), `new_leaf`, `pick` and `pick_graded` (a pool index),
`apply_op` (one op of a family, operands and parameters drawn to fit),
`add_backward`, `fitting_ops`, `broadcasts_into` and `tensor_kind`; their
choices are those of `conformance.differential.choices` (`BOOLS`, `ints`,
`one_of`, `scalars`, `SEEDS`), each a function of the step's seeded Random."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from conformance import build
from conformance.differential.choices import BOOLS, SEEDS, ints, one_of, scalars
from conformance.differential.index_params import INDEX_WRITES, index_params, source_shape
from conformance.differential.lockstep import retired_by
from conformance.differential.modes import oracle_mode
from conformance.differential.row_params import row_params
from oracle import OPS, Engine, OracleError, OTensor
from oracle.hook_rows import GRADAPI_OPS
from strategies.dtypes import DTYPES, seeded_values
from strategies.programs import (
    LEAF_LAYOUTS,
    Leaf,
    Step,
    basic_index,
    broadcastable_to,
    indexed_shape,
    leaf_shape,
)

ALIASES = ("clone", "detach", "data", "detach_", "set_data", "zeros_like")
WRITES_FROM = ("copy_", "setitem", "setitem_s")  # in-place writes of another tensor's values
AUTOGRAD = ("requires_grad_", "retain_grad", "zero_grad", "set_grad")
BACKWARD = ("backward", "backward_g")
LAZY = ("conj", "neg_view", "resolve_conj", "resolve_neg")
LAZY += ("view_as_real", "view_as_complex", "real", "imag", "view_dtype")


def _family(name: str) -> str:
    spec = OPS[name]
    if name in ALIASES:
        return "alias"
    if name in WRITES_FROM:
        return "copy"
    if name in AUTOGRAD or name in BACKWARD:
        return "autograd" if name in AUTOGRAD else "backward"
    if name in INDEX_WRITES:
        return "index"
    if name == "autograd_grad" or name in GRADAPI_OPS:  # only their motifs make them
        return "gradapi"
    if name.startswith(("fn_", "sin_hooked_")):  # custom Functions, hooks: their motifs
        return "function"
    if spec.impl == "writes":  # out=, resize_, set_, _foreach_: only their motifs
        return "writes"
    if spec.impl == "inplace_view":  # transpose_, t_...: only their motif makes them
        return "inplace_view"
    if name in LAZY:  # conj(), _neg_view(), view_as_real()...: only their motifs make them
        return "lazy"
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
    "index": 2,
    "backward": 3,
    "autograd": 2,
    "motif": 8,
}
_CHOICES = tuple(f for f, w in WEIGHTS.items() for _ in range(w))
MAX_POOL = 14


@dataclass
class Growth:
    """A program being grown, with the oracle's state after its steps."""

    devices: tuple[str, ...]
    dtypes: tuple[str, ...]
    engine: Engine = field(default_factory=lambda: Engine(build.ORACLE_RELEASE))
    pool: list[OTensor] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    over: bool = False
    retired: set[int] = field(default_factory=set)  # tensors made .grad (lockstep.retired_by)
    # how grad_fn is read after each step (Program.reads): a lazy program keeps its
    # lazy reads whatever it draws (a hook on a stale view crashes torch up to 2.14:
    # crash_patterns.py sends such a program to a child process, not the generator)
    reads: str = ""

    def apply(self, step: Step) -> None:
        """Run a step on the oracle, keep it, and grow the pool."""
        if self.over:
            return  # a failed backward ends the program
        self.steps.append(step)
        self.retired |= retired_by(step)
        try:
            if step.op == "leaf":
                result = step.leaf.made_by(self.engine)
            else:
                tensors = [self.pool[i] for i in step.tensors]
                if step.no_grad or step.mode:
                    with oracle_mode(self.engine, step):
                        result = self.engine.call(step.op, tensors, step.params)
                else:
                    result = self.engine.call(step.op, tensors, step.params)
        except OracleError:
            self.over = step.op in BACKWARD or step.op in ("autograd_grad", "grad_cg")
            return
        if self.engine.undefined:
            self.over = True
        if isinstance(result, OTensor) and all(result is not t for t in self.pool):
            self.pool.append(result)


def new_leaf(
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
        dtype = draw(one_of(graded if graded and draw(ints(0, 2)) < 2 else g.dtypes))
    device = device or draw(one_of(g.devices))
    if shape is None:
        shape = draw(leaf_shape)
    values = seeded_values(dtype, tuple(shape), draw(SEEDS))
    if nonzero:
        values = np.where(values == 0, 1, values).astype(values.dtype)
    if requires_grad is None:
        requires_grad = DTYPES[dtype].can_require_grad and draw(ints(0, 2)) < 2
    # now and then a tensor made under inference_mode (never one that requires grad)
    if inference is None:
        inference = not requires_grad and draw(ints(0, 11)) == 11
    # one leaf in five laid out non-contiguously: transposed, strided, offset
    layout = draw(one_of(LEAF_LAYOUTS)) if not draw(ints(0, 4)) else ""
    return Step("leaf", leaf=Leaf(values, dtype, device, requires_grad, inference, layout))


def pick(draw, g: Growth, fits=lambda t: True) -> int | None:
    """A pool index whose tensor fits: mostly the latest, so that steps build
    on each other into chains, else any."""
    candidates = [i for i, t in enumerate(g.pool) if i not in g.retired and fits(t)]
    if not candidates:
        return None
    if draw(ints(0, 2)) < 2:
        return candidates[-1]
    return candidates[-1 - draw(ints(0, len(candidates) - 1))]


def tensor_kind(t: OTensor) -> str:
    return DTYPES[t.dtype].kind


def _scalar(draw, op: str, name: str, t: OTensor):
    if op == "pow_s":
        return draw(one_of((0, 1, 2, 3)))
    return draw(scalars(t.dtype, op.startswith("div_s")))


def _params(draw, op: str, t: OTensor) -> tuple | None:
    """Parameters for `op` on `t`, or None if it has none that fit."""
    spec, shape, rank = OPS[op], t.shape, len(t.shape)
    if spec.args is not None:  # a row with its argument space (the view family)
        return row_params(draw, op, t)
    if op in INDEX_WRITES:
        return index_params(draw, op, t)
    if op == "clamp_":
        lo, hi = sorted([_scalar(draw, op, "min", t), _scalar(draw, op, "max", t)])
        return (lo, hi)
    params: list = []
    for name, kind in zip(spec.params, spec.param_kinds, strict=True):
        if kind == "index":
            params.append(draw(basic_index, shape))
        elif kind == "dim":
            if rank == 0:
                return None
            params.append(draw(ints(0, rank - 1)))
        elif kind == "scalar":
            params.append(_scalar(draw, op, name, t))
        elif kind == "bool":
            params.append(draw(BOOLS))
        else:
            return None
    return tuple(params)


def _broadcasts(a: tuple, b: tuple) -> bool:
    return all(x == y or x == 1 or y == 1 for x, y in zip(reversed(a), reversed(b), strict=False))


def broadcasts_into(src: tuple, dst: tuple) -> bool:
    return len(src) <= len(dst) and all(
        s in (1, d) for s, d in zip(reversed(src), reversed(dst), strict=False)
    )


def _mismatched(draw, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """A shape that does not broadcast with `shape`, or None if none is near."""
    sized = [d for d, n in enumerate(shape) if n != 1]
    if not sized:
        return None
    d = draw(one_of(tuple(sized)))
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
        shape = (k, draw(ints(1, 3))) if len(t.shape) == 2 or draw(BOOLS) else (k,)

        def fits(u):
            return u.shape == shape and alike(u)

        make = dict(shape=shape, **same)
    elif op == "set_grad":  # always a new tensor: it becomes .grad (see lockstep.retired_by)
        fits = None
        make = dict(shape=t.shape, requires_grad=False, inference=False, **same)
        if not draw(ints(0, 7)):  # now and then one that must be refused
            bad = _mismatched(draw, tuple(t.shape)) if t.shape else (2,)
            make["shape"] = bad or (len(t.shape) + 1) * (2,)
        elif not draw(ints(0, 7)):
            make["dtype"] = draw(one_of(g.dtypes))
    elif op in INDEX_WRITES:  # always a new source: it must not alias what it writes
        fits = None
        make = dict(shape=source_shape(draw, op, tuple(t.shape), params), **same)
    elif op == "backward_g":  # a tensor of the program's, or a new one (lockstep.retired_by)

        def fits(u):
            return u.shape == t.shape and alike(u) and not u.requires_grad

        make = dict(shape=t.shape, requires_grad=False, **same)
    elif op in ("copy_", "setitem"):
        target = t.shape if op == "copy_" else indexed_shape(t.shape, params[0])
        other_device = op == "copy_"
        # setitem of a 0-d value goes through fill_, whose backward hands a real
        # value a complex gradient in torch 2.13 (docs/findings.md): setitem
        # writes values of the tensor's own dtype, copy_ crosses dtypes
        own_dtype = op == "setitem"
        # (torch lets `x[i] = v` make an integer x require grad when v does,
        # pytorch/pytorch#76008: drawn, and a known failure)

        def fits(u):
            return (
                broadcasts_into(u.shape, target)
                and (other_device or u.device == t.device)
                and not (own_dtype and u.dtype != t.dtype)
            )

        make = dict(shape=draw(broadcastable_to, target))
        if own_dtype:
            make["dtype"] = t.dtype
        if not other_device:
            make["device"] = t.device
    elif op == "set_data":
        # the same shape: after `x.data = y` changes a leaf's shape, whether its
        # gradient still fits depends on when torch made its accumulator

        # now and then a source of another dtype (an integer one into a tensor
        # that requires grad must be refused) or one that requires grad itself
        cross = not draw(ints(0, 2))
        graded = not draw(ints(0, 2))

        def fits(u):
            return (
                (alike(u) or (cross and u.device == t.device))
                and not u.inference
                and u.shape == t.shape
            )

        make = dict(shape=t.shape, requires_grad=False, inference=False, **same)
        if cross:
            make["dtype"] = draw(one_of(g.dtypes))
        if graded and DTYPES[make["dtype"]].can_require_grad:
            make["requires_grad"] = True
    else:  # pointwise, in place or not
        divides = op.startswith("div")
        into = OPS[op].inplace

        def fits(u):
            shaped = broadcasts_into(u.shape, t.shape) if into else _broadcasts(u.shape, t.shape)
            return shaped and alike(u) and not (divides and not _nonzero(u))

        make = dict(shape=draw(broadcastable_to, t.shape), nonzero=divides, **same)
        if t.shape and not draw(ints(0, 11)):  # now and then shapes that must not fit
            bad = _mismatched(draw, tuple(t.shape))
            if bad is not None:
                make["shape"] = bad
                g.apply(new_leaf(draw, g, **make))
                return [], len(g.pool) - 1
    if op in ("copy_", "setitem", "set_data"):  # writing a tensor into itself shows little
        own, inner = g.pool.index(t), fits
        fits = lambda u: u is not g.pool[own] and inner(u)  # noqa: E731
    # mostly from the pool
    index = pick(draw, g, fits) if fits is not None and draw(ints(0, 3)) else None
    if index is not None:
        return [], index
    return [new_leaf(draw, g, **make)], len(g.pool)


def apply_op(
    draw,
    g: Growth,
    op: str,
    index: int | None = None,
    other: int | None = None,
    no_grad: bool | None = None,
    mode: str = "",  # see modes.py
) -> int | None:
    """Apply `op` to pool tensor `index` (picked if None), with `other` as its
    second operand when given. Returns the index of its result, or of its
    operand for ops that return it; None if the op does not fit."""
    spec = OPS[op]
    if index is None:
        index = pick(draw, g, lambda t: tensor_kind(t) in spec.dtypes)
        if index is None:
            return None
    t = g.pool[index]
    if tensor_kind(t) not in spec.dtypes:
        return None
    if index in g.retired:
        return None  # a tensor made .grad, or autograd.grad's gradient: never touched again
    if t.inference and (
        op in UNMODELLED_ON_INFERENCE or (not t.counterless and _family(op) != "math")
    ):
        return None  # the model covers inference tensors and their views, not the rest
    if op == "matmul" and t.refused_as_no_grad:
        return None  # which tensors matmul saves for a view made under no_grad: not modelled
    params = _params(draw, op, t)
    if params is None:
        return None
    if no_grad is None:
        no_grad = draw(ints(0, 5)) == 5  # shrinks towards grad mode on
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
    g.apply(Step(op, tensors, params, no_grad, mode=mode))
    return len(g.pool) - 1 if len(g.pool) > before else index


def add_backward(draw, g: Growth, index: int | None = None, retain: bool | None = None) -> None:
    if index is None:
        index = pick(draw, g, lambda t: t.requires_grad) if draw(ints(0, 5)) else None
        if index is None:
            index = pick(draw, g)
    t = g.pool[index]
    implicit = t.shape == () or (int(np.prod(t.shape)) == 1 and draw(BOOLS))
    op = "backward" if implicit or not draw(ints(0, 7)) else "backward_g"
    # retain_graph: True, False or left out (the row's space), unless the caller
    # needs the graph kept
    flags = (retain,) if retain is not None else row_params(draw, op, t)
    if op == "backward":
        g.apply(Step("backward", (index,), flags))
        return
    second = _second(draw, g, "backward_g", t, ())
    for step in second[0]:
        g.apply(step)
    g.apply(Step("backward_g", (index, second[1]), flags))


def pick_graded(draw, g: Growth) -> int:
    """A floating or complex tensor that requires grad: from the pool or new."""
    index = pick(draw, g, lambda t: t.requires_grad and tensor_kind(t) in ("float", "complex"))
    if index is None or not draw(ints(0, 3)):
        graded = tuple(d for d in g.dtypes if DTYPES[d].can_require_grad)
        dtype = draw(one_of(graded or g.dtypes))
        g.apply(new_leaf(draw, g, dtype=dtype, requires_grad=bool(graded)))
        index = len(g.pool) - 1
    return index


def fitting_ops(ops: tuple[str, ...], t: OTensor) -> tuple[str, ...]:
    return tuple(op for op in ops if tensor_kind(t) in OPS[op].dtypes)


SAVERS = tuple(n for n in FAMILIES["math"] if OPS[n].saves)
NON_SAVERS = tuple(n for n in FAMILIES["math"] if not OPS[n].saves)
SAVERS_OF_ONE = tuple(n for n in SAVERS if OPS[n].arity == 1)
# ops whose behaviour on inference tensors the model leaves out
UNMODELLED_ON_INFERENCE = ("set_data", "detach_", "retain_grad", "zeros_like", "set_grad")
# write through: itself, or an alias; .data and detach() are what the rules contrast
ALIAS_FOR_WRITE = (None, "data", "detach", "data", "detach", "getitem", "transpose", "select")
