"""Engine: runs OPS rows against the model, checking everything before it writes."""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from . import geometry as geo
from . import gradapi, graph, modes, view_geometry, view_ops, write_ops
from .complex_views import ComplexViews, ReinterpretingViews, byte_overlap_status
from .dtype_views import DtypeViews
from .dtypes import DTYPES, REAL_OF, compute_dtype, differentiable, kind, op_values, round_to
from .errors import ErrorKind, OracleError
from .functions import FunctionOps
from .graph import run_backward
from .nodes import Node, Saved, copy_slices, flat_index, shares_elements
from .ops import OPS, OpSpec, matmul_layout, meant, out_dtype
from .releases import NEWEST, Release
from .storage import Storage, VersionCounter
from .tensor import OTensor, new_tensor


def _geom(t: OTensor) -> tuple:
    return (t.storage, t.offset, t.shape, t.strides)


def _shares_elements(t: OTensor) -> bool:
    return shares_elements(t.offset, t.shape, t.strides)


class Engine(FunctionOps, ComplexViews, ReinterpretingViews, DtypeViews):
    """A model of torch's eager autograd state: grad mode plus the tensors it made."""

    def __init__(self, release: Release = NEWEST) -> None:
        self.release = release  # where torch releases differ (oracle.releases)
        self.grad_enabled = True
        self.inference_enabled = False  # inside torch.inference_mode() (oracle/modes.py)
        self.undefined: str | None = None  # why torch's result of the last call is unpredictable
        # an error torch may raise instead of doing what the last call did:
        # neither outcome is promised (set with `undefined`)
        self.may_refuse: ErrorKind | None = None
        # sticky: some memory's bits, read as another dtype, are unpredictable (NaN
        # payloads, kernels' last bits: oracle/dtype_views.py), so no two runs of the
        # program need agree on values read through it (the compiled differential)
        self.bits_undefined = False
        self._retainers: weakref.WeakSet[OTensor] = weakref.WeakSet()
        # unsafe_split and co.: (input's counter and version, output's) at each call
        self._unsafe_splits: list[tuple] = []

    @contextlib.contextmanager
    def no_grad(self) -> Iterator[None]:
        prev, self.grad_enabled = self.grad_enabled, False
        try:
            yield
        finally:
            self.grad_enabled = prev

    @contextlib.contextmanager
    def inference_mode(self) -> Iterator[None]:
        """torch.inference_mode(): grad mode off, views of normal tensors marked as
        made in inference mode, inference tensors writable (oracle/modes.py)."""
        prev = self.grad_enabled, self.inference_enabled
        self.grad_enabled, self.inference_enabled = False, True
        try:
            yield
        finally:
            self.grad_enabled, self.inference_enabled = prev

    def leaf(
        self,
        values: object,
        dtype: str,
        requires_grad: bool = False,
        device: str = "cpu",
        inference: bool = False,
        geometry: tuple[tuple[int, ...], int, int] | None = None,
    ) -> OTensor:
        """A new leaf; `inference`: made under torch.inference_mode();
        `geometry`: (strides, storage offset, storage size) of a leaf laid out
        non-contiguously on a storage of its own (zeros where it has no values)."""
        if dtype not in DTYPES:
            raise ValueError(f"unknown dtype {dtype}")
        if requires_grad and not differentiable(dtype):
            raise OracleError(ErrorKind.DTYPE_CANNOT_REQUIRE_GRAD)
        values = round_to(values, dtype)
        if geometry is None:
            t = new_tensor(values, dtype, geo.contiguous_strides(values.shape), device)
        else:
            strides, offset, size = geometry
            storage = Storage(np.zeros(size, compute_dtype(dtype)), dtype)
            t = OTensor(
                storage,
                offset,
                tuple(values.shape),
                tuple(strides),
                dtype,
                VersionCounter(),
                device,
            )
            t.array()[...] = values
        t._rg, t.inference, t.counterless = requires_grad, inference, inference
        return t

    def call(
        self, op: str, tensors: Sequence[OTensor], params: Sequence[object] = ()
    ) -> OTensor | None:
        spec, ts, p = OPS[op], list(tensors), tuple(params)
        if len(ts) == spec.arity - 1 and len(p) == 1:  # mul with a python scalar: mul_s
            alt = op[:-1] + "_s_" if op.endswith("_") else op + "_s"
            spec = OPS.get(alt, spec)
        if spec.strict_bwd is not None and not self.release.clamp_grad_at_bounds:
            spec = dataclasses.replace(spec, bwd=spec.strict_bwd)
        p = meant(spec, p)
        if len(ts) != spec.arity or len(p) != len(spec.params):
            raise TypeError(f"{op} takes {spec.arity} tensors and params {spec.params}")
        if kind(ts[0].dtype) not in spec.dtypes:
            raise TypeError(f"{op} does not take {ts[0].dtype}")
        self.undefined, self.may_refuse = None, None
        try:
            out = getattr(self, "_op_" + spec.impl)(spec, ts, p)
            if spec.inplace and spec.impl != "inplace_view" and ts[0].storage.byte_viewed:
                self._written_under_dtype_view(spec, ts[0])  # (oracle.dtype_views)
            return out
        except OracleError as error:
            # an inference tensor is written, then refused (_write): what was
            # written stays, and may be as undefined as any other write's
            if error.kind is not ErrorKind.INFERENCE_INPLACE:
                self.undefined = None
            raise

    # ---- shared steps ---------------------------------------------------------
    def _needs_grad(self, ts: Sequence[OTensor]) -> bool:
        return self.grad_enabled and any(t.requires_grad for t in ts)

    def _edge_once(self, t: OTensor) -> Callable[[], list | None]:
        """[t's gradient edge] if an op on t records a node, else None; the edge is taken
        (which may regenerate t's grad_fn) at the first call only."""
        got: list = []

        def edge() -> list | None:
            if not got:
                got.append([t.edge()] if self._needs_grad([t]) else None)
            return got[0]

        return edge

    @staticmethod
    def _node(spec: OpSpec, ts: list, p: tuple, edges: list, saves: dict, out: OTensor) -> Node:
        shapes, bwd = [t.shape for t in ts], spec.bwd
        node = Node(
            spec.name,
            edges,
            lambda g, sv, needs: bwd(g, sv, p, needs, shapes),
            (out.shape, out.dtype),
            saves,
        )
        node.params = p  # (oracle.gradapi: create_graph reads pow's exponent)
        node.terms_of = spec.grad_terms
        return node

    @staticmethod
    def _saves(spec: OpSpec, ts: list, p: tuple, edges: list, copies: tuple) -> dict:
        """Save what torch saves, before the op runs ('result' is saved after it).
        copies[i]: operand i is saved as a private copy (in place: the original self)."""
        out = {}
        for token in spec.saves:
            what, _, cond = token.partition("_if_")
            if what.startswith("result") or (
                cond and edges[0 if cond.startswith("self") else 1] is None
            ):
                continue
            if what == "other" and spec.scalar_operand:  # the wrapped-number tensor
                t = new_tensor(round_to(np.asarray(p[0]), ts[0].dtype), ts[0].dtype, ())
                out[what] = Saved(t, copy=True)
            else:
                i = 0 if what == "self" else 1
                if ts[i].inference and not copies[i]:
                    raise OracleError(ErrorKind.INFERENCE_SAVED)
                out[what] = Saved(ts[i], copy=copies[i], by_ctx=spec.by_ctx)
        return out

    def _result(
        self,
        spec: OpSpec,
        ts: list,
        p: tuple,
        values: np.ndarray,
        dtype: str,
        strides: tuple,
        edges: list | None,
        saves: dict,
    ) -> OTensor:
        out = new_tensor(round_to(values, dtype), dtype, strides, ts[0].device)
        if edges is not None and differentiable(dtype):
            if "result" in spec.saves:
                saves["result"] = Saved(out, output=True)
            out._fn = self._node(spec, ts, p, edges, saves, out)
        return out

    def _check_unstable(self, spec: OpSpec, ts: list) -> None:
        """Values far from zero where torch's kernel and numpy's last digits part ways."""
        if kind(ts[0].dtype) in spec.inexact_beyond_1e6:
            v = ts[0].values()
            parts = np.concatenate([v.real.ravel(), v.imag.ravel()])
            if np.any(np.abs(parts[np.isfinite(parts)]) > 1e6):
                self.undefined = f"{spec.name} of values beyond 1e6"

    # ---- out of place ------------------------------------------------------------
    def _op_pointwise(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        if spec.composite:  # these checks come before any autograd op
            if not all(t.shape for t in ts):
                raise OracleError(ErrorKind.SHAPE_MISMATCH, "need to be at least 1D")
            if geo.broadcast_shapes(ts[0].shape[:-2], ts[1].shape[:-2]) is None:
                raise OracleError(ErrorKind.NOT_BROADCASTABLE, "must match the size")
        edges = [t.edge() for t in ts] if self._needs_grad(ts) else None  # before the kernel
        early = None  # torch's autograd wrapper saves its inputs before the kernel checks them
        if edges is not None and not spec.composite:
            early = self._saves(spec, ts, p, edges, (False, False))
        shape = spec.check([t.shape for t in ts], p) if spec.check else ts[0].shape
        with np.errstate(all="ignore"):
            values = np.asarray(
                spec.fwd([op_values(t.values(), t.dtype) for t in ts], p, ts[0].dtype)
            ).reshape(shape)
        version, copies = 0, (False, False)
        if spec.layout == "matmul":
            strides, version, copies = matmul_layout(
                *[(t.shape, t.strides) for t in ts], [t.requires_grad for t in ts], shape
            )
        elif spec.layout == "contiguous":
            strides = geo.contiguous_strides(shape)
        elif spec.layout == "preserve" or (
            spec.real_of_complex and kind(ts[0].dtype) == "complex"  # empty_like(self)
        ):
            strides = geo.preserve_strides(ts[0].shape, ts[0].strides)
        else:
            operands = [(t.shape, t.strides) for t in ts] + [((), ())] * spec.scalar_operand
            strides = geo.elementwise_strides(shape, operands)
        if early is not None:
            saves = early
        else:
            saves = self._saves(spec, ts, p, edges, copies) if edges is not None else {}
        dtype = out_dtype(spec, ts[0].dtype)
        self._check_unstable(spec, ts)
        if version < 0:  # matmul hands back the transposed view of its real result
            bwd = spec.bwd
            spec = dataclasses.replace(spec, bwd=lambda g, *a: bwd(np.swapaxes(g, -1, -2), *a))
            hidden = self._result(
                spec,
                ts,
                p,
                np.swapaxes(values, -1, -2),
                dtype,
                geo.contiguous_strides(shape[:-2] + shape[:-3:-1]),
                edges,
                saves,
            )
            geom = (shape, strides, 0, lambda g, in_shape: np.swapaxes(g, -1, -2))
            return self._view_result("mT", hidden, geom, self._edge_once(hidden)())
        out = self._result(spec, ts, p, values, dtype, strides, edges, saves)
        out.counter.value = version  # 1 where torch finished with an in-place squeeze_
        return out

    def _op_multi(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        """Output p[-1] of an op that returns several new tensors (max(dim), std_mean):
        one node for the call, recorded on its differentiable output; `resultN` in
        the row's saves is output N, saved as an output (the others are not returned,
        but the node holds what it saved of them)."""
        t = ts[0]
        edges = [t.edge()] if self._needs_grad(ts) else None
        saves = self._saves(spec, ts, p, edges, (False, False)) if edges is not None else {}
        if spec.check is not None:
            spec.check([t.shape], p)
        with np.errstate(all="ignore"):
            arrays = spec.fwd([op_values(t.values(), t.dtype)], p, t.dtype)
        outs = []
        for values, dtype in zip(arrays, spec.outputs, strict=True):
            dtype = {"self": t.dtype, "real": REAL_OF.get(t.dtype, t.dtype)}.get(dtype, dtype)
            values = np.asarray(values)
            outs.append(
                new_tensor(
                    round_to(values, dtype), dtype, geo.contiguous_strides(values.shape), t.device
                )
            )
        for k, o in enumerate(outs):
            o.outputs, o.output_nr = outs, k
        out = outs[p[-1]]
        if edges is not None and differentiable(out.dtype):
            for token in spec.saves:
                if token.startswith("result"):
                    saves[token] = Saved(outs[int(token[len("result") :])], output=True)
            out._fn = self._node(spec, ts, p, edges, saves, out)
        return out

    def _op_unsafe_split(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        """An output of unsafe_split, unsafe_chunk, unsafe_split_with_sizes: split's
        piece of t's memory, but no view (measured: _base None), with a version
        counter of its own, so autograd lets it be written; its node
        (UnsafeSplitBackward0) puts the gradient into the piece and saves nothing."""
        t = ts[0]
        edges = [t.edge()] if self._needs_grad(ts) else None
        src = t
        if t.conj or t.neg:  # torch's conj/neg fallback resolves self into new memory
            # first, laid out as self (measured, 2.0.1 to 2.14.1): pieces of that copy
            src = new_tensor(t.values(), t.dtype, geo.preserve_strides(t.shape, t.strides))
        shape, strides, offset, back = spec.geom(src.shape, src.strides, src.offset, *p)
        out = OTensor(src.storage, offset, shape, strides, t.dtype, VersionCounter(), t.device)
        out.inference = out.counterless = t.counterless  # an inference tensor's: one too
        out.output_nr = view_ops.piece_number(spec.geom, src.shape, p)
        if edges is not None:
            in_shape = t.shape
            out._fn = Node(spec.name, edges, lambda g, sv, n: [back(g, in_shape)], (shape, t.dtype))
        if not t.counterless and src is t:
            self._unsafe_splits.append((t.storage, t.counter, t.counter.value, out.counter, 0))
        return out

    def _unsafe_split_written(self, t: OTensor) -> None:
        """unsafe_split's docs: "If both the input and one or more of the outputs are
        modified inplace, gradients computed by autograd will be silently incorrect"."""
        for storage, c_in, v_in, c_out, v_out in self._unsafe_splits:
            if storage is t.storage and c_in.value != v_in and c_out.value != v_out:
                self.undefined = "the input and an output of unsafe_split both written"

    def _op_clone(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        t = ts[0]
        edges = [t.edge()] if self._needs_grad(ts) else None
        strides = geo.preserve_strides(t.shape, t.strides)
        out = self._result(spec, ts, p, t.values(), t.dtype, strides, edges, {})
        out.counter.value = int(t.inference)  # an inference tensor's clone is at version 1
        return out

    def _op_zeros_like(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        t = ts[0]
        strides = geo.preserve_strides(t.shape, t.strides)
        return new_tensor(np.zeros_like(t.values()), t.dtype, strides, t.device)

    # ---- aliasing ----------------------------------------------------------------
    def _op_detach(self, spec: OpSpec, ts: list, p: tuple, counter: object = None) -> OTensor:
        t = ts[0]
        if t.counterless:  # no counter to share: a fresh one
            counter = VersionCounter()
        out = OTensor(
            t.storage, t.offset, t.shape, t.strides, t.dtype, counter or t.counter, t.device
        )
        out.inference, out.conj, out.neg = t.inference, t.conj, t.neg
        return out

    def _op_data(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        return self._op_detach(spec, ts, p, VersionCounter())  # .data: a fresh counter

    def _op_detach_(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        t = ts[0]
        if t.base is not None:
            raise OracleError(ErrorKind.DETACH_VIEW_INPLACE)
        t._rg, t._fn = False, None
        return t

    def _op_set_data(self, spec: OpSpec, ts: list, p: tuple) -> None:
        a, b = ts
        if a.requires_grad and not differentiable(b.dtype):
            raise OracleError(ErrorKind.DTYPE_CANNOT_REQUIRE_GRAD, "must be floating point")
        if b.dtype != a.dtype:
            a._acc = None  # torch drops the leaf's AccumulateGrad
        a.storage, a.offset, a.shape, a.strides, a.dtype = (*_geom(b), b.dtype)
        a.conj, a.neg = b.conj, b.neg

    def _op_view(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        t, edge = ts[0], self._edge_once(ts[0])
        edge()  # view ops record their node before the kernel checks
        geom = spec.geom(t.shape, t.strides, t.offset, *p)
        return self._view_result(spec.name, t, geom, edge(), spec.multi_output)

    def _op_getitem(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        """x[index]: its steps (select, slice, unsqueeze...) take the edge as they record."""
        t, edge = ts[0], self._edge_once(ts[0])
        open_slices = self.release.open_slice_is_identity
        geom = view_geometry.getitem(t.shape, t.strides, t.offset, p[0], edge, open_slices)
        return self._view_result(spec.name, t, geom, edge(), spec.multi_output)

    def _op_reshape(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        """A view of contiguous memory; else infer_size checks the shape before any op."""
        t = ts[0]
        if geo.is_contiguous(t.shape, t.strides):
            return self._op_view(spec, ts, p)
        edge = self._edge_once(t)
        geom = spec.geom(t.shape, t.strides, t.offset, *p)
        return self._view_result(spec.name, t, geom, edge(), spec.multi_output)

    def _view_result(
        self, name: str, t: OTensor, geom: tuple, edges: list | None, multi: bool = False
    ) -> OTensor:
        shape, strides, offset, back = geom
        node = None
        if edges is not None:
            in_shape = t.shape
            node = Node(name, edges, lambda g, sv, needs: [back(g, in_shape)], (shape, t.dtype))
        if strides is None:  # a reshape that cannot be a view: a contiguous copy
            out = new_tensor(
                t.values().reshape(shape), t.dtype, geo.contiguous_strides(shape), t.device
            )
            out._fn = node
            return out
        v = OTensor(t.storage, offset, shape, strides, t.dtype, t.counter, t.device)
        v.conj, v.neg = t.conj, t.neg  # a view of a conj (neg) view reads through its bit
        if t.counterless:  # inference tensors' views are not tracked as views
            v.inference = v.counterless = True
            return v
        v.base = t.base if t.base is not None else t
        # torch's CreationMeta: made under no_grad, or one output of several (in grad
        # mode, whether or not t requires grad); a view of a view inherits its base
        # view's unless it has its own
        fresh_no_grad = not self.grad_enabled
        fresh_multi = multi and not fresh_no_grad
        inherit = t.base is not None and not (fresh_no_grad or fresh_multi)
        v.no_grad_view = fresh_no_grad or (inherit and t.no_grad_view)
        v.multi_output = fresh_multi or (inherit and t.multi_output)
        modes.mark_view(v, t, self.inference_enabled)
        v.custom_view = inherit and t.custom_view  # made in a custom Function
        v.attr_version, v._fn = t.counter.value, node
        return v

    # ---- in place ------------------------------------------------------------------
    def _check_inplace(self, t: OTensor, needs_grad: bool) -> None:
        """torch's check_inplace; it reads the raw grad_fn fields (no regeneration)."""
        if not needs_grad:
            return
        if t.base is not None:
            modes.check_view_inplace(t)
            if t.refused_as_no_grad:
                raise OracleError(ErrorKind.NO_GRAD_VIEW_INPLACE, "created in no_grad mode")
            if t.multi_output:
                raise OracleError(ErrorKind.MULTI_OUTPUT_VIEW_INPLACE)
            if t.custom_view:
                raise OracleError(ErrorKind.CUSTOM_FUNCTION_VIEW)
            if t.requires_grad and t.base._fn is None:
                raise OracleError(ErrorKind.INPLACE_ON_LEAF_VIEW)
        if t.requires_grad and t._fn is None:
            raise OracleError(ErrorKind.INPLACE_ON_LEAF)

    def _check_write(self, t: OTensor, src: OTensor | None) -> None:
        if geo.has_internal_overlap(t.shape, t.strides):
            raise OracleError(ErrorKind.OVERLAPPING_WRITE)
        if _shares_elements(t):  # unfold, as_strided: torch does not check
            self.undefined = "a write into a view whose elements overlap, unchecked by torch"
        if src is None or src is t:
            return
        if src.storage is t.storage and src.dtype != t.dtype:
            status = byte_overlap_status(t, src)  # (view_as_real, x.view(dtype)...)
            if status == "partial":
                raise OracleError(ErrorKind.PARTIAL_OVERLAP)
            if status != "no":
                self.undefined = "a write from the same memory read as another dtype"
            return
        status = geo.overlap_status(_geom(t), _geom(src))
        if status == "partial":
            raise OracleError(ErrorKind.PARTIAL_OVERLAP)
        if status == "too_hard" and src.storage is t.storage and _geom(src) != _geom(t):
            mine = flat_index(t.offset, t.shape, t.strides)
            if np.intersect1d(mine, flat_index(src.offset, src.shape, src.strides)).size:
                self.undefined = "the written tensor overlaps an input unchecked by torch"

    def _write(self, t: OTensor, values: np.ndarray) -> None:
        with np.errstate(all="ignore"):
            t.store(np.broadcast_to(values, t.shape))
        if t.counterless:  # torch writes, then finds no counter to bump
            if self.inference_enabled:
                return  # inside inference_mode: allowed, no version bump
            raise OracleError(ErrorKind.INFERENCE_INPLACE)
        t.counter.value += 1
        self._unsafe_split_written(t)

    def _rebase(self, t: OTensor, node: Node) -> None:
        """rebase_history: the in-place node becomes t's history (its base's, for a view)."""
        if t.base is None:
            t.replace_grad_fn(node)
            return
        t.base.replace_grad_fn(copy_slices(t.base, t, node))
        t.grad_fn()  # torch regenerates the view's grad_fn right away

    def _op_inplace(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        t, other = ts[0], (ts[1] if len(ts) > 1 else None)
        need = self._needs_grad(ts)
        self._check_inplace(t, need)
        edges = [x.edge() for x in ts] if need else None
        # torch's autograd wrapper saves the operands before the kernel checks them
        saves = self._saves(spec, ts, p, edges, (True, False)) if need else {}
        # an operand with a conjugate or negative bit is resolved into new memory first
        # (torch's fallback); self with a bit is computed on such a copy and written
        # back by copy_, which checks self's own overlap after the op's own checks
        written_back, resolved = t.conj or t.neg, any(x.conj or x.neg for x in ts[1:])
        if spec.overlap_check and not written_back:
            self._check_write(t, None if resolved else other)
        if other is not None and geo.broadcast_shapes(t.shape, other.shape) != t.shape:
            bad = geo.broadcast_shapes(t.shape, other.shape) is None
            raise OracleError(
                ErrorKind.NOT_BROADCASTABLE,
                "must match the size" if bad else "doesn't match the broadcast shape",
            )
        with np.errstate(all="ignore"):
            values = spec.fwd([op_values(x.values(), x.dtype) for x in ts], p, t.dtype)
        if written_back:
            self._check_write(t, None)
        self._check_unstable(spec, ts)
        self._write(t, values)
        if need:
            if "result" in spec.saves:
                saves["result"] = Saved(t, output=True)
            self._rebase(t, self._node(spec, ts, p, edges, saves, t))
        return t

    def _op_inplace_view(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        """transpose_, t_, squeeze_, unsqueeze_, swapdims_, as_strided_ (measured on
        2.13.0): refused where any in-place op on t is (check_inplace, first); t's
        own shape, strides and offset become the twin view's, over the same storage,
        its view relation (base, CreationMeta) kept; its version goes up once (an
        inference tensor's, outside inference_mode: changed, then refused). With
        grad recorded, t's grad_fn becomes the twin's node on its old history
        (set_history, not rebase_history: the base's grad_fn stays, a retains_grad
        hook stays on the old node) and a view's is current, not to regenerate."""
        t = ts[0]
        need = self._needs_grad(ts)
        self._check_inplace(t, need)
        edges = [t.edge()] if need else None  # collect_next_edges: may regenerate
        shape, strides, offset, back = spec.geom(t.shape, t.strides, t.offset, *p)
        in_shape = t.shape
        t.shape, t.strides, t.offset = shape, strides, offset
        if t.counterless:  # (as _write: no counter to bump)
            if not self.inference_enabled:
                raise OracleError(ErrorKind.INFERENCE_INPLACE)
        else:
            t.counter.value += 1
        if need:
            bwd = lambda g, sv, needs: [back(g, in_shape)]  # noqa: E731
            t._fn = Node(spec.name, edges, bwd, (shape, t.dtype))
            t.attr_version = t.counter.value
        return t

    def _op_index_write(self, spec: OpSpec, ts: list, p: tuple) -> OTensor | None:
        """index_put_, masked_fill_, index_add_...: an in-place op whose source fills
        some of self's elements; self is never saved, the source as the row says."""
        t = ts[0]
        need = self._needs_grad(ts) and differentiable(t.dtype)
        self._check_inplace(t, need)
        edges = [x.edge() for x in ts] if need else None
        # torch's autograd wrapper saves the operands before the kernel checks them
        saved = self._saves(spec, ts, p, edges, (False, False)) if need else {}
        written_back = t.conj or t.neg  # computed on a resolved copy, written back by copy_
        if spec.overlap_check and not written_back:
            self._check_write(t, None)
        elif _shares_elements(t) and not written_back:
            self.undefined = f"{spec.name} into elements that share memory"  # which lands last
        with np.errstate(all="ignore"):
            values = spec.fwd([op_values(x.values(), x.dtype) for x in ts], p, t.dtype)
        if written_back:
            self._check_write(t, None)
        self._write(t, values)
        if need:  # each saves its index (or mask) tensor: a second backward raises;
            # index_add_ only for its source's gradient (self's is grad itself)
            if not spec.saves_index_for_source_only or edges[1] is not None:
                saved["index"] = Saved(new_tensor(np.zeros(1), "int64", (1,)), copy=True)
            self._rebase(t, self._node(spec, ts, p, edges, saved, t))
        return None if not spec.returns else t

    def _op_copy_(self, spec: OpSpec, ts: list, p: tuple, fill: bool = False) -> OTensor:
        t, src = ts
        need = self._needs_grad(ts) and differentiable(t.dtype)
        self._check_inplace(t, need)
        edges = [x.edge() for x in ts] if need else None
        if fill and geo.has_internal_overlap(t.shape, t.strides):
            # x[index] = scalar on memory several elements share: no promise.
            # expand() leaves writes to such memory undefined and fill_ is
            # exempt; up to 2.1 this fill was fill_(Scalar), from 2.2 it goes
            # through copy_, whose overlap check refuses it (pytorch/pytorch#109533)
            self.undefined = "x[index] = scalar on memory several elements share"
            self.may_refuse = ErrorKind.OVERLAPPING_WRITE
        elif not (src is t or (_geom(src) == _geom(t) and src.dtype == t.dtype)):
            self._check_write(t, None if fill else src)  # (the same data: no checks at all)
            if geo.broadcast_shapes(t.shape, src.shape) != t.shape:
                raise OracleError(ErrorKind.NOT_BROADCASTABLE, "must match the size")
        if kind(t.dtype) == "int" and kind(src.dtype) in ("float", "complex"):
            self._note_unrepresentable(src.values(), t.dtype)
        self._write(t, src.values())
        if need:
            bwd = lambda g, sv, needs: [np.zeros_like(g), g]  # noqa: E731
            self._rebase(t, Node("CopyBackwards", edges, bwd, (t.shape, t.dtype)))
        return t

    def _note_unrepresentable(self, values: np.ndarray, dtype: str) -> None:
        """A float cast to an integer dtype it does not fit (nan, inf, out of
        range) is undefined behaviour in C++: torch's result is whatever the
        CPU gives."""
        v = np.real(values)
        info = np.iinfo(np.dtype(dtype))
        with np.errstate(invalid="ignore"):
            if not np.all(np.isfinite(v)) or np.any((v <= info.min - 1) | (v >= info.max + 1.0)):
                self.undefined = f"copy_ of nan, inf or a value out of range into {dtype}"

    def _op_setitem(self, spec: OpSpec, ts: list, p: tuple) -> None:
        """x[index] = v: slice item by item, then copy_ (a 0-d v: fill_, which clones v)."""
        t, index = ts[0], p[0] if isinstance(p[0], tuple) else (p[0],)
        src = ts[1] if len(ts) > 1 else new_tensor(round_to(np.asarray(p[1]), t.dtype), t.dtype, ())
        edge = self._edge_once(t)
        open_slices = self.release.open_slice_is_identity
        geom = view_geometry.getitem(t.shape, t.strides, t.offset, index, edge, open_slices)
        # torch hands back t itself
        identity = view_geometry.index_is_identity(t.shape, index, open_slices)
        dst = t if identity else self._view_result("getitem", t, geom, edge())
        fill = src.shape != dst.shape and not src.shape
        if src.shape != dst.shape and src.shape:  # drop leading 1-dims, expand to dst
            lead = next((i for i, n in enumerate(src.shape) if n != 1), len(src.shape))
            src = self._op_view(OPS["view"], [src], (src.shape[lead:],))
            src = self._op_view(OPS["expand"], [src], (dst.shape,))
        self._op_copy_(OPS["copy_"], [dst, src], (), fill)

    def _op_writes(self, spec: OpSpec, ts: list, p: tuple) -> OTensor | None:
        """out=, resize_, set_, _foreach_ in place: oracle/write_ops.py."""
        return write_ops.run(self, spec, ts, p)

    # ---- autograd --------------------------------------------------------------------
    def _op_backward(self, spec: OpSpec, ts: list, p: tuple) -> None:
        t = ts[0]
        if len(ts) > 1:  # torch.autograd._make_grads checks first
            if ts[1].shape != t.shape:
                raise OracleError(ErrorKind.GRAD_SHAPE_MISMATCH, "Mismatch in shape")
            if (kind(ts[1].dtype) == "complex") != (kind(t.dtype) == "complex"):
                raise OracleError(ErrorKind.GRAD_SHAPE_MISMATCH, "Mismatch in dtype")
            grad = ts[1].values()
        else:
            if t.requires_grad and (t.values().size != 1 or kind(t.dtype) != "float"):
                raise OracleError(ErrorKind.NONSCALAR_BACKWARD)
            grad = np.ones(t.shape)
        root = t.edge()
        if root is None:
            raise OracleError(ErrorKind.NO_GRAD_FN)
        grad = graph.validate(round_to(grad, t.dtype), graph.target_meta(root))
        self._noted(run_backward(root, grad, bool(p[0]), list(self._retainers)))

    def _noted(self, notes: graph.BackwardNotes) -> None:
        """What a backward left to torch: results it leaves undefined, an error it may raise."""
        self.may_refuse = self.may_refuse or notes.may_raise
        self.undefined = self.undefined or "; ".join(notes.undefined) or None

    def _op_autograd_grad(self, spec: OpSpec, ts: list, p: tuple) -> OTensor | None:
        """torch.autograd.grad(out, inp, g, retain_graph, allow_unused)[0]: the gradient
        of out with respect to inp, computed through the nodes that lead to inp alone; no
        .grad changes. Where out does not depend on inp (or inp's gradient is undefined):
        None with allow_unused, else an error, raised once the backward has run."""
        out, inp, gout = ts
        if gout.shape != out.shape:
            raise OracleError(ErrorKind.GRAD_SHAPE_MISMATCH, "Mismatch in shape")
        if (kind(gout.dtype) == "complex") != (kind(out.dtype) == "complex"):
            raise OracleError(ErrorKind.GRAD_SHAPE_MISMATCH, "Mismatch in dtype")
        root = out.edge()
        if root is None:
            raise OracleError(ErrorKind.NO_GRAD_FN)
        if not inp.requires_grad:
            raise OracleError(ErrorKind.INPUT_NO_GRAD)
        target = inp.edge()
        grad = graph.validate(round_to(gout.values(), out.dtype), graph.target_meta(root))
        captured = [target]
        # retain_grad hooks run on the nodes that run, the input's own included
        # (measured on 2.13.0: a retained tensor off the path keeps its .grad)
        self._noted(run_backward(root, grad, bool(p[0]), list(self._retainers), capture=captured))
        if len(captured) == 1 or captured[1] is None:
            if not p[1]:
                raise OracleError(ErrorKind.UNUSED_INPUT)
            return None  # out does not depend on inp (or its gradient is undefined)
        g = graph.validate(np.asarray(captured[1]), graph.target_meta(target))
        return new_tensor(g, inp.dtype, geo.contiguous_strides(np.shape(g)), inp.device)

    def _op_requires_grad_(self, spec: OpSpec, ts: list, p: tuple) -> OTensor:
        t, flag = ts[0], bool(p[0])
        if t._fn is not None and not flag:  # (the raw field: torch's C++ is_leaf)
            raise OracleError(ErrorKind.NONLEAF_REQUIRES_GRAD)
        if flag and not differentiable(t.dtype):
            raise OracleError(ErrorKind.DTYPE_CANNOT_REQUIRE_GRAD)
        if flag and t.inference:
            raise OracleError(ErrorKind.INFERENCE_REQUIRES_GRAD)
        t._rg = flag
        return t

    def _op_retain_grad(self, spec: OpSpec, ts: list, p: tuple) -> None:
        t = ts[0]
        if not t.requires_grad:
            raise OracleError(ErrorKind.RETAIN_GRAD_NO_GRAD)
        if t._fn is not None and t.retain_node is None:  # a no-op for (raw) leaves
            t.retain_node = t.grad_fn()
            self._retainers.add(t)

    def _op_set_grad(self, spec: OpSpec, ts: list, p: tuple) -> None:
        t, g = ts
        if g.shape != t.shape:
            raise OracleError(ErrorKind.GRAD_ASSIGN_MISMATCH, f"of size {g.shape} to {t.shape}")
        if g.dtype != (t.grad_dtype or t.dtype) or g.device != t.device:
            raise OracleError(ErrorKind.GRAD_ASSIGN_MISMATCH, f"with dtype {g.dtype}")
        t.grad, t.grad_dtype = g.values(), g.dtype

    def _op_zero_grad(self, spec: OpSpec, ts: list, p: tuple) -> None:
        ts[0].grad = None

    # ---- the gradient APIs (oracle.gradapi) ------------------------------------------
    def _op_register_hook(self, spec: OpSpec, ts: list, p: tuple) -> None:
        gradapi.register_hook(ts[0], spec.hook.effect, p[0] if p else None)

    def _op_register_post_hook(self, spec: OpSpec, ts: list, p: tuple) -> None:
        gradapi.register_post_hook(ts[0], spec.hook.effect, p[0])

    def _op_register_node_hook(self, spec: OpSpec, ts: list, p: tuple) -> None:
        gradapi.register_node_hook(ts[0], spec.hook, p[0] if p else None)

    def _op_grad_cg(self, spec: OpSpec, ts: list, p: tuple) -> OTensor | None:
        """torch.autograd.grad(out, inp, v, create_graph=True)[0]: the gradient, as
        autograd_grad computes it (the graph kept), in a graph of its own when its
        formula reads a tensor that requires grad (oracle.gradapi.double_node)."""
        out, inp, v = ts
        node = out.grad_fn()
        d = self._op_autograd_grad(spec, ts, (True, True))
        if d is None:
            return d
        try:
            d._fn = gradapi.double_node(node, out, inp, v, d)
        except gradapi.NotModelled as why:
            self.undefined = str(why)
        return d
