"""Writes the core table lacks: `out=` arguments, resize_ and set_, and the
`_foreach_*_` in-place ops.

`out=`: torch.add(a, b, out=o) refuses, in grad mode, any argument that
requires grad (out included); then TensorIterator checks o's memory for
overlaps, the shapes for broadcasting, and whether the result's dtype can be
cast into o's (torch.can_cast: never to a lower kind, bool < int < float <
complex; neg takes only an o of its input's dtype, measured on torch
2.13: "Found dtype Char but expected Half"). An o of another shape is
resized (resize_: contiguous, or laid out as the inputs are; its storage
grows in place, keeping what it held, when it is too small), unless o is
itself an input (then the shapes must match), and written; o's version goes
up once and o is returned.
Nothing is recorded by autograd: o keeps its requires_grad and grad_fn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import geometry as geo
from .dtypes import kind, op_values, round_to
from .errors import ErrorKind, OracleError

if TYPE_CHECKING:
    from .engine import Engine
    from .ops import OpSpec
    from .tensor import OTensor

# name: (the out-of-place row it computes, its tensor inputs); t0 is `out`
OUT_OPS = {
    "add_out": ("add", 2),
    "mul_out": ("mul", 2),
    "exp_out": ("exp", 1),
    "neg_out": ("neg", 1),
}

# ops whose kernel checks that every operand has the same dtype (no cast into out)
SAME_DTYPE = ("neg",)

_TEMPLATES = {
    "add_out": "torch.add({t1}, {t2}, out={t0})",
    "mul_out": "torch.mul({t1}, {t2}, out={t0})",
    "exp_out": "torch.exp({t1}, out={t0})",
    "neg_out": "torch.neg({t1}, out={t0})",
}

# name: the table row's keyword arguments (oracle/ops.py adds them)
ROWS: dict[str, dict] = {
    name: dict(
        arity=1 + arity,
        params=(),
        torch=_TEMPLATES[name],
        impl="writes",
        inplace=True,  # out's version goes up once
        cross_dtype=True,  # out may have another dtype than the inputs
        overlap_check=True,
    )
    for name, (_, arity) in OUT_OPS.items()
}

_RANK = {"bool": 0, "int": 1, "float": 2, "complex": 3}


def can_cast(src: str, dst: str) -> bool:
    """torch.can_cast: a value of dtype src may be stored in dst (no lower kind)."""
    return _RANK[kind(src)] <= _RANK[kind(dst)]


def input_kinds(name: str) -> tuple[str, ...]:
    """The dtype kinds an out= row's inputs may have (those of the op it computes)."""
    from .ops import OPS

    return OPS[OUT_OPS[name][0]].dtypes


def run(engine: Engine, spec: OpSpec, ts: list, p: tuple) -> OTensor | None:
    if spec.name in OUT_OPS:
        return _out(engine, spec, ts, p)
    raise TypeError(f"no write op {spec.name}")


def _out(engine: Engine, spec: OpSpec, ts: list, p: tuple) -> OTensor:
    from .ops import OPS, out_dtype

    out, inputs = ts[0], ts[1:]
    base = OPS[OUT_OPS[spec.name][0]]
    engine.warned = False  # (the lockstep compares the resize warning)
    if any(kind(x.dtype) not in base.dtypes for x in inputs):
        raise TypeError(f"{spec.name} does not take {inputs[0].dtype}")
    if engine.grad_enabled and any(t.requires_grad for t in ts):  # the autograd kernel
        raise OracleError(ErrorKind.OUT_AUTOGRAD, f"{base.name}(): functions with out=...")
    for x in inputs:  # TensorIterator: memory overlaps, then shapes, then dtypes
        engine._check_write(out, x)
    shape = base.check([x.shape for x in inputs], p) if base.check else inputs[0].shape
    computed = out_dtype(base, inputs[0].dtype)
    if base.name in SAME_DTYPE and out.dtype != computed:
        raise OracleError(ErrorKind.OUT_DTYPE, f"Found dtype {out.dtype} but expected {computed}")
    if not can_cast(computed, out.dtype):
        raise OracleError(ErrorKind.OUT_CAST, f"result type {computed} ... {out.dtype}")
    with np.errstate(all="ignore"):
        values = np.asarray(
            base.fwd([op_values(x.values(), x.dtype) for x in inputs], p, inputs[0].dtype)
        ).reshape(shape)
    values = round_to(values, computed)
    engine._check_unstable(base, inputs)
    if tuple(out.shape) != tuple(shape) and any(x is out for x in inputs):
        # out is also an input: TensorIterator does not resize it (is_read_write)
        raise OracleError(ErrorKind.NOT_BROADCASTABLE, "doesn't match the broadcast shape")
    if tuple(out.shape) != tuple(shape):
        strides = geo.elementwise_strides(shape, [(x.shape, x.strides) for x in inputs])
        engine.warned = 0 not in out.shape  # a non-empty out: a UserWarning
        resize(out, shape, strides)
        if any(x.storage is out.storage for x in inputs):
            engine.undefined = "out= resized over memory an input reads"
    engine._write(out, values)
    # compared at the tolerance of the dtype the op computed in (a complex64 exp
    # stored into complex128 carries complex64's rounding)
    out.computed_in = computed if computed != out.dtype else None
    return out


def resize(t: OTensor, shape: tuple, strides: tuple) -> None:
    """resize_ (then restrided): the storage grows in place, keeping its values,
    when t's new extent does not fit; the offset is kept."""
    shape, strides = tuple(shape), tuple(strides)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) if all(shape) else 0
    need = t.offset + span if span else 0
    buf = t.storage.buf
    if need > buf.size:
        grown = np.zeros(need, buf.dtype)
        grown[: buf.size] = buf
        t.storage.buf = grown
    t.shape, t.strides = shape, strides
