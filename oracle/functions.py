"""Custom autograd.Functions and saved-tensor hooks in the model (issue 10).

The suite's Functions (their torch source is conformance/differential/functions.py)
and the ops it runs under torch.autograd.graph.saved_tensors_hooks, each one
short method of the Engine (mixed in). What was measured on torch 2.13.0:

- Scale (x * c, save_for_backward(x)): its backward reads ctx.saved_tensors, so
  a saved input written in place since makes backward raise, as a built-in op's.
- MulDirty (x.mul_(c), mark_dirty(x)): returns x itself; x's version goes up
  twice (the write, then mark_dirty); a leaf that requires grad raises after
  the write (raw grad_fn field), a view goes through rebase_history's checks,
  else the Function's node becomes x's history (its base's, for a view).
  When the node is recorded, x's .grad is reset to None first (a view refused
  by rebase_history's checks loses it too); x.mul_(c) itself keeps .grad.
  Under no_grad, an x that requires grad comes back as x.detach().
- AddDirty (x.add_(y * c), mark_dirty(x)): as MulDirty, with a second input y
  that gets g * c; x that requires no grad, with y that does, gets the
  Function's node as its history (its base gets CopySlices, for a view); x a
  leaf that requires grad raises after the write (2.0.1 to 2.14.1 alike).
- SignND (x.sign(), mark_non_differentiable): the output requires no grad.
- ViewFn (x.view_as(x)): a view of x whose grad_fn is the Function's node;
  torch marks it made in a custom Function (under no_grad too, and when x
  requires no grad): writing it in place in grad mode raises (when x requires
  no grad: once the write needs grad, an operand that requires grad), and once
  it or its base was written, reading its grad_fn raises (when x required no
  grad: once its base requires grad).
- sin under hooks: pack runs once when sin saves x, unpack once at backward,
  and the gradient is computed from what unpack returned; a tensor saved
  through hooks has no version check (nor the detached-in-place check).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import geometry as geo
from .dtypes import op_values, round_to
from .errors import ErrorKind, OracleError
from .nodes import Node, Saved
from .ops import OPS, OpSpec
from .tensor import OTensor, new_tensor

# unpack(pack(x)) of the hook pairs the suite uses: "detach" packs x.detach()
# (the saved memory, read when unpacked) and unpacks it as it is; "x2_x2"
# packs 2 * x (a new tensor) and unpacks twice that
HOOKS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "detach": lambda v: v,
    "x2_x2": lambda v: v * 2,  # (pack's doubling is made when saving)
}


class HookedSaved(Saved):
    """A tensor saved while saved_tensors_hooks were active: what pack returned is
    kept (a detached alias reads the memory as it is at backward, a clone the
    values at save time), unpack's result is used, and nothing is checked."""

    def __init__(self, t: OTensor, hooks: str) -> None:
        super().__init__(t, copy=hooks != "detach")
        if self.copy is not None:  # pack's own result, rounded to the dtype
            self.copy = round_to(op_values(self.copy, t.dtype) * 2, t.dtype)
        self.hooks = hooks

    def unpack(self) -> np.ndarray:
        if self.released:
            raise OracleError(ErrorKind.BACKWARD_TWICE)
        packed = self.copy if self.copy is not None else self.memory().copy()
        unpacked = round_to(HOOKS[self.hooks](op_values(packed, self.dtype)), self.dtype)
        return op_values(unpacked, self.dtype)


class FunctionOps:
    """Engine methods for the custom Functions and the hooked ops (a mixin)."""

    def _op_fn_mul_(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        """MulDirty.apply(x, c): x.mul_(c) inside forward, mark_dirty(x), return x."""
        t, c = ts[0], p[0]
        with np.errstate(all="ignore"):
            values = op_values(t.values(), t.dtype) * c
        return self._marked_dirty(spec, ts, values, lambda g: [g * c])

    def _op_fn_add_dirty_(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        """AddDirty.apply(x, y, c): x.add_(y * c) inside forward, mark_dirty(x), return x;
        backward returns g for x and g * c for y (reduced to y's shape, as validate_outputs
        reduces a built-in op's)."""
        t, y, c = ts[0], ts[1], p[0]
        if geo.broadcast_shapes(t.shape, y.shape) != t.shape:  # x.add_ refuses, writing nothing
            bad = geo.broadcast_shapes(t.shape, y.shape) is None
            raise OracleError(
                ErrorKind.NOT_BROADCASTABLE,
                "must match the size" if bad else "doesn't match the broadcast shape",
            )
        with np.errstate(all="ignore"):  # y * c is a tensor of its own, read before the write
            scaled = round_to(op_values(y.values(), y.dtype) * c, y.dtype)
            values = op_values(t.values(), t.dtype) + op_values(scaled, y.dtype)
        return self._marked_dirty(spec, ts, values, lambda g: [g, g * c])

    def _marked_dirty(
        self, spec: OpSpec, ts: list, values: np.ndarray, bwd: Callable[[np.ndarray], list]
    ) -> OTensor:
        """A Function whose forward writes values into its first input and marks it
        dirty: every input's edge is collected before forward runs, the write bumps
        the version and mark_dirty again, and the Function's node (backward: bwd(g),
        one gradient per input) becomes the input's history."""
        t = ts[0]
        need = self._needs_grad(ts)
        edges = [u.edge() for u in ts] if need else None
        self._check_write(t, None)  # forward's own write
        self._write(t, values)
        t.counter.value += 1  # mark_dirty bumps the version again
        if not self.grad_enabled and t.requires_grad:  # nothing recorded: a detached alias
            return self._op_detach(OPS["detach"], [t], ())
        if need:
            if t._fn is None and t.requires_grad:  # torch reads the raw field
                raise OracleError(ErrorKind.INPLACE_ON_LEAF)
            # _wrap_outputs resets a recorded dirty input's .grad before rebase_history
            # (whose view checks may then refuse); a plain x.mul_(c) keeps it
            t.grad = t.grad_dtype = None
            self._check_inplace(t, True)  # rebase_history: a view's creation meta
            node = Node(spec.name, edges, lambda g, sv, needs: bwd(g), (t.shape, t.dtype))
            self._rebase(t, node)
        return t

    def _op_fn_nondiff(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        """SignND.apply(x): x.sign(), marked non-differentiable: no grad, no grad_fn."""
        t = ts[0]
        if self._needs_grad(ts):  # apply collects its inputs' edges all the same
            t.edge()
        strides = geo.elementwise_strides(t.shape, [(t.shape, t.strides)])
        v = op_values(t.values(), t.dtype)
        values = round_to(np.where(np.isnan(v), 0, np.sign(v)), t.dtype)  # sign(nan) is 0
        return new_tensor(values, t.dtype, strides, t.device)

    def _op_fn_view(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        """ViewFn.apply(x): x.view_as(x), returned as a view made in a custom Function."""
        t = ts[0]
        need = self._needs_grad(ts)
        edges = [t.edge()] if need else None
        geom = (t.shape, t.strides, t.offset, lambda g, in_shape: g)
        v = self._view_result(spec.name, t, geom, edges)
        # CreationMeta::IN_CUSTOM_FUNCTION for every view it returns, under no_grad too and
        # whether or not x requires grad (measured on 2.0.1, 2.4.1, 2.13.0, 2.14.1: a view of
        # a tensor that requires no grad, then written with an operand that requires grad,
        # raises "A view was created in no_grad mode ... inside a custom Function")
        if v.base is not None:
            # one creation meta: it replaces what the view inherited (inference mode too)
            v.no_grad_view = v.multi_output = v.inference_view = False
            v.custom_view = True
        return v

    def _op_hooked(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        """x.sin() under saved_tensors_hooks(pack, unpack): pack when sin saves x,
        and the gradient from unpack's result."""
        out = self._op_pointwise(spec, ts, p)
        self._check_unstable(OPS["sin"], ts)
        fn = out._fn
        if fn is not None and "self" in fn.saved:  # (an inference x raised before pack)
            fn.saved["self"] = HookedSaved(ts[0], spec.name.removeprefix("sin_hooked_"))
        return out
