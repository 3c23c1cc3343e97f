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
up once and o is returned. A view that requires grad, resized so (under
no_grad), is undefined: resize_ refuses such a tensor, and the view's
CopySlices may no longer fit it over its base (torch raises in backward).
Nothing is recorded by autograd: o keeps its requires_grad and grad_fn.

resize_: refused for a tensor that requires grad (in any grad mode); else
the same shape is a no-op (no version bump), and another one makes the
tensor contiguous at its offset over the same storage, grown in place when
too small (the new elements are uninitialized: the model leaves them
undefined); the version goes up (torch 2.0 did not bump it: a known failure,
pytorch/pytorch#93776, fixed in 2.1).

set_(y): x takes y's storage, offset, sizes and strides; it keeps its own
version counter (bumped once) and its _base (a view stays a view of its old
base, measured on 2.13.0), and shares nothing with y but memory. In grad
mode a leaf that requires grad is refused as any in-place op refuses it; a
target or a source in the graph gets a grad_fn torch cannot differentiate
(not modelled: Engine.undefined).

torch._foreach_add_/_foreach_mul_ over two tensors, with a scalar or a list
of two tensors: each tensor is written as add_/mul_ writes it, in order, and
autograd records each write as add_/mul_ would: a grad_fn of its own,
gradients as theirs, and a leaf that requires grad refused, before anything
is written (torch 2.0 recorded nothing: a known failure, fixed in 2.1 by
pytorch/pytorch#96405). A shape error on the second tensor comes after the
first was written (measured on 2.13.0).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from . import geometry as geo
from .dtypes import kind, op_values, round_to
from .errors import ErrorKind, OracleError
from .nodes import flat_index
from .ops import OPS, OpSpec, out_dtype
from .write_rows import FOREACH, OUT_OPS, SAME_DTYPE, can_cast

if TYPE_CHECKING:
    from .engine import Engine
    from .tensor import OTensor


def input_kinds(name: str) -> tuple[str, ...]:
    """The dtype kinds an out= row's inputs may have (those of the op it computes)."""
    return OPS[OUT_OPS[name][0]].dtypes


def run(engine: Engine, spec: OpSpec, ts: list, p: tuple) -> OTensor | None:
    engine.warned = False  # (the lockstep compares out='s resize warning)
    if spec.name in OUT_OPS:
        return _out(engine, spec, ts, p)
    if spec.name == "resize_":
        return _resize_(engine, ts[0], tuple(p[0]))
    if spec.name == "set_":
        return _set_(engine, *ts)
    if spec.name in FOREACH:
        return _foreach(engine, spec, ts, p)
    raise TypeError(f"no write op {spec.name}")


def _out(engine: Engine, spec: OpSpec, ts: list, p: tuple) -> OTensor:
    out, inputs = ts[0], ts[1:]
    base = OPS[OUT_OPS[spec.name][0]]
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
        if out.base is not None and out.requires_grad:
            # resize_ refuses a tensor that requires grad; out= resizes it, and a
            # view's CopySlices then lays its geometry over its base's gradient,
            # which it may no longer fit (torch: "setStorage ... out of bounds")
            engine.undefined = "out= resized a view that requires grad"
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


def _resize_(engine: Engine, t: OTensor, shape: tuple) -> OTensor:
    if t.requires_grad:
        raise OracleError(ErrorKind.RESIZE_REQUIRES_GRAD)
    if t.counterless:
        raise OracleError(ErrorKind.INFERENCE_INPLACE)
    if tuple(t.shape) == shape:
        return t  # left as it is, strides included, and not bumped
    had = t.storage.buf.size
    resize(t, shape, geo.contiguous_strides(shape))
    if t.offset + math.prod(shape) > had and math.prod(shape):
        engine.undefined = "resize_ grew the storage: its new elements are uninitialized"
    t.counter.value += 1
    return t


def _set_(engine: Engine, t: OTensor, src: OTensor) -> OTensor:
    if src.dtype != t.dtype or src.device != t.device:
        raise TypeError("set_ takes a source of the same dtype and device")
    if engine.grad_enabled and t.requires_grad:
        engine._check_inplace(t, True)  # a leaf, or a view of one, is refused
    if engine.grad_enabled and (t.requires_grad or src.requires_grad):
        engine.undefined = "set_ recorded by autograd (a grad_fn it cannot differentiate)"
    if t.counterless:
        raise OracleError(ErrorKind.INFERENCE_INPLACE)
    t.storage, t.offset, t.shape, t.strides = src.storage, src.offset, src.shape, src.strides
    t.counter.value += 1
    return t


def _share_elements(a: OTensor, b: OTensor) -> bool:
    """a and b hold an element of the same memory (another dtype's view: any)."""
    if a is b:
        return True
    if a.storage is not b.storage:
        return False
    if a.dtype != b.dtype:
        return True
    mine = flat_index(a.offset, a.shape, a.strides)
    return bool(np.intersect1d(mine, flat_index(b.offset, b.shape, b.strides)).size)


def _foreach(engine: Engine, spec: OpSpec, ts: list, p: tuple) -> None:
    each = FOREACH[spec.name]
    pairs = [[t] for t in ts[:2]] if p else [[ts[0], ts[2]], [ts[1], ts[3]]]
    # the scalar overloads keep the scalar in the node (MulBackward1), where
    # x.mul_(c) saves it as a wrapped 0-d tensor: a second backward through
    # it does not raise (measured on 2.13.0)
    row = OPS[each] if not p else dataclasses.replace(OPS[each], saves=())
    undefined = None
    if engine._needs_grad(ts):
        # every node takes its edges and saves its operands before any write
        if pairs[0][0] is pairs[1][0]:  # the graph records one of the two writes
            undefined = "the same tensor twice in a recorded _foreach_ list"
        elif pairs[0][0].storage is pairs[1][0].storage:
            # two views of the memory both written: each node took its edge (its
            # base's history) before either write, as with the same tensor twice;
            # with no element in common, the first view's history still misses the
            # second write (a leaf reached only through it: .grad None, not zeros)
            undefined = "two written tensors of a recorded _foreach_ list share memory"
        elif row.saves and any(_share_elements(pairs[0][0], t) for t in pairs[1]):
            # the second node saved, as it was before the call, memory the first wrote
            undefined = "a recorded _foreach_ list whose second pair reads memory the first writes"
    for pair in pairs:  # every tensor is checked before any is written
        engine._check_inplace(pair[0], engine._needs_grad(pair))
    if any(pair[0].conj or pair[0].neg for pair in pairs):
        # the conjugate/negative-bit fallback refuses a written list holding
        # such a view, before any write (measured on 2.13.0; the other list may)
        raise OracleError(ErrorKind.MUTABLE_LIST_BIT)
    notes = []
    for pair in pairs:
        engine.undefined = None
        engine._op_inplace(row, pair, p)
        notes.append(engine.undefined)
    engine.undefined = "; ".join(n for n in (undefined, *notes) if n) or None
