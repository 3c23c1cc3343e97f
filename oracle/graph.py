"""Graph nodes, saved tensors, and the backward engine."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

import numpy as np

from . import dtype_views, geometry, gradapi
from .bits import apply_bits, between
from .dtype_views import through_bytes
from .dtypes import compute_dtype, op_values, round_to
from .errors import ErrorKind, OracleError
from .geometry import Shape, broadcast_shapes, has_internal_overlap, is_dense
from .tensor import Accumulator, OTensor, strided

_seq = itertools.count()
Meta = tuple[Shape, str]  # (shape, dtype) of the tensor a node produced: its input metadata


class Saved:
    """A SavedVariable: the version at save time, and what to read back at backward.

    torch keeps an input as the tensor object itself (a later `.data =` on it is seen),
    an output as a shallow copy fixed at save time; copy=True is a private clone.
    """

    def __init__(self, t: OTensor, copy: bool = False, output: bool = False) -> None:
        self.copy = t.values() if copy else None
        self.tensor, self.was_leaf = (None if output else t), t._fn is None
        self.geom, self.dtype = (t.storage, t.offset, t.shape, t.strides), t.dtype
        self.bits = (t.conj, t.neg)
        self.counter, self.version, self.released = t.counter, t.counter.value, False

    def unpack(self) -> np.ndarray:
        if self.released:
            raise OracleError(ErrorKind.BACKWARD_TWICE)
        if self.copy is not None:
            return op_values(self.copy, self.dtype)
        # torch reads a saved input's grad_fn first (which may regenerate it, or raise)
        if self.tensor is not None and self.tensor.grad_fn() is None and not self.was_leaf:
            raise OracleError(ErrorKind.SAVED_TENSOR_DETACHED)
        if self.counter.value != self.version:
            raise OracleError(
                ErrorKind.SAVED_TENSOR_MODIFIED,
                f"is at version {self.counter.value}; expected {self.version}",
            )
        if self.tensor is not None:
            return op_values(self.tensor.values(), self.tensor.dtype)
        return op_values(self.memory(), self.dtype)

    def memory(self) -> np.ndarray:
        """The saved geometry's elements as its memory holds them now, read in the
        saved dtype (a real or imag view of complex memory, a view through bytes)."""
        storage = self.geom[0]
        if through_bytes(self.dtype, storage.dtype):  # x.view(dtype): through its bytes
            window = dtype_views.read(storage.buf, storage.dtype, *self.geom[1:], self.dtype)
        else:
            window = strided(*self.geom, compute_dtype(self.dtype))
        return apply_bits(window, *self.bits)


class Node:
    """A grad_fn: backward(g, saved values, needs) gives one gradient per edge.
    An edge is a Node, an Accumulator (a leaf's AccumulateGrad) or None."""

    def __init__(
        self,
        name: str,
        edges: list,
        backward: Callable,
        out: Meta | None,
        saved: dict[str, Saved] | None = None,
        inner: Node | None = None,
    ) -> None:
        self.seq, self.name, self.edges, self.backward = next(_seq), name, edges, backward
        self.out, self.saved, self.inner, self.released = out, saved or {}, inner, False

    # |g|, |saved| -> the terms a formula that cancels sums (OpSpec.grad_terms),
    # and those of its last backward: a gradient's tolerance reads them
    terms_of: Callable | None = None
    terms: np.ndarray | None = None

    def apply(self, g: np.ndarray) -> list:
        values = {k: s.unpack() for k, s in self.saved.items()}
        g0, g = g, op_values(g, self.out[1]) if self.out else g
        if self.terms_of is not None and values:
            self.terms = self.terms_of(np.abs(g), np.abs(next(iter(values.values()))))
        try:
            with np.errstate(all="ignore"):
                out = self.backward(g, values, [e is not None for e in self.edges])
            return [g0 if x is g else x for x in out]  # (a gradient passed on unchanged)
        except ValueError as e:  # a saved input whose `.data =` changed its shape
            raise OracleError(ErrorKind.NOT_BROADCASTABLE, str(e)) from None

    def release(self) -> None:
        self.released = True
        for s in self.saved.values():
            s.released = True
        if self.inner is not None:
            self.inner.release()

    def __repr__(self) -> str:
        return f"<{self.name} #{self.seq}>"


def sum_to(g: np.ndarray, shape: Shape) -> np.ndarray:
    """Reduce a broadcast gradient back to `shape`."""
    if g.shape == tuple(shape):
        return g
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def flat_index(offset: int, shape: Shape, strides: Shape) -> np.ndarray:
    """The storage index of every element of a geometry."""
    idx = np.full(shape, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides, strict=True)):
        idx += (np.arange(n) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
    return idx


def _buffer(dtype: type, *indices: np.ndarray) -> np.ndarray:
    return np.zeros(max((int(i.max()) + 1 for i in indices if i.size), default=0), dtype)


def _pair(vt: type, bt: type, vidx: np.ndarray, bidx: np.ndarray) -> tuple:
    """Zeroed memory that covers a view and its base of another dtype (view_as_real,
    real, imag, view_as_complex), as the view's and the base's arrays over it."""
    vt, bt = np.dtype(vt), np.dtype(bt)
    spans = [(int(i.max()) + 1) * t.itemsize for i, t in ((vidx, vt), (bidx, bt)) if i.size]
    unit = max(vt.itemsize, bt.itemsize)
    raw = np.zeros(-(-max(spans, default=0) // unit) * unit, np.uint8)
    return raw.view(vt), raw.view(bt)


def as_strided_node(view: OTensor, base: OTensor) -> Node:
    """AsStridedBackward0: a view's grad_fn regenerated after its base was rewritten."""
    vidx = flat_index(view.offset, view.shape, view.strides)
    bidx = flat_index(base.offset, base.shape, base.strides)
    through = between(view, base)  # a conj view's gradient reaches the base conjugated
    vt, bt = compute_dtype(view.dtype), compute_dtype(base.dtype)

    def backward(g: np.ndarray, _: dict, needs: list) -> list:
        if vt is not bt:  # a view of another dtype: the gradient laid out in shared memory
            vbuf, bbuf = _pair(vt, bt, vidx, bidx)
            np.add.at(vbuf, vidx, through(g))
            return [bbuf[bidx]]
        buf = _buffer(g.dtype, vidx, bidx)
        np.add.at(buf, vidx, through(g))
        return [buf[bidx]]

    return Node("AsStridedBackward0", [base.edge()], backward, (view.shape, view.dtype))


def copy_slices(base: OTensor, view: OTensor, inner: Node) -> Node:
    """CopySlices: the base's grad_fn after an in-place op (`inner`) on one of its views.
    The gradient is laid out in the base's memory; the view's part goes through inner."""
    vidx = flat_index(view.offset, view.shape, view.strides)
    bidx = flat_index(base.offset, base.shape, base.strides)
    vshape, vdtype = view.shape, view.dtype
    overlaps = has_internal_overlap(view.shape, view.strides)
    through = between(view, base)  # the view's part of the gradient, as the view reads it
    vt, bt = compute_dtype(view.dtype), compute_dtype(base.dtype)

    def backward(g: np.ndarray, _: dict, needs: list) -> list:
        if inner.released:  # torch drops CopySlices' fn on release, saved tensors or not
            raise OracleError(ErrorKind.BACKWARD_TWICE)
        if vt is not bt:  # a view of another dtype: its part read from the shared memory
            vbuf, buf = _pair(vt, bt, vidx, bidx)
            buf[bidx] = g
            res = inner.apply(through(vbuf[vidx]))
        else:
            vbuf = buf = _buffer(g.dtype, vidx, bidx)
            buf[bidx] = g
            res = inner.apply(through(buf[vidx]))
        if res[0] is None:
            return [None] + res[1:]
        if overlaps:  # copying the gradient back through an expanded view
            raise OracleError(ErrorKind.OVERLAPPING_WRITE)
        if vt is bt:
            vbuf = buf = buf.astype(np.result_type(buf, res[0]))
        vbuf[vidx] = through(round_to(np.broadcast_to(res[0], vshape), vdtype))
        return [buf[bidx]] + res[1:]

    edges = [base.edge()] + inner.edges[1:]
    return Node("CopySlices", edges, backward, (base.shape, base.dtype), inner=inner)


def target_meta(e: Node | Accumulator) -> Meta | None:
    """The input metadata of an edge's target: what its gradient must look like."""
    return e.out


def validate(g: np.ndarray, meta: Meta | None) -> np.ndarray:
    """validate_outputs: reduce a gradient to the target's shape, cast it to its dtype."""
    if meta is None:
        return g
    shape, dtype = meta
    if g.shape != shape:
        if broadcast_shapes(shape, g.shape) != g.shape:
            raise OracleError(ErrorKind.GRAD_SHAPE_MISMATCH, "invalid gradient at index 0")
        g = sum_to(g, shape).reshape(shape)
    return round_to(g, dtype)


class _Unpredictable(Exception):
    pass


def _accumulate(leaf: OTensor, g: np.ndarray, is_root: bool, dtype: str) -> None:
    """AccumulateGrad. Shapes differ only after `.data =` changed the leaf's shape: torch
    then keeps (steals) a fresh gradient when the leaf is not dense or the gradient fits
    its layout, and otherwise copies it into the leaf's shape. backward's own gradient
    argument (also when passed on unchanged) is never stolen."""
    if leaf.grad_fn() is not None:
        raise OracleError(ErrorKind.LEAF_MOVED)
    if not leaf.requires_grad:
        return
    have = leaf.shape if leaf.grad is None else leaf.grad.shape
    if g.shape != have and (leaf.grad is not None or _copied_into_layout(g, leaf, is_root)):
        if broadcast_shapes(have, g.shape) != have:
            raise OracleError(ErrorKind.NOT_BROADCASTABLE, "doesn't match the broadcast shape")
        g = np.broadcast_to(g, have)
    leaf.add_grad(g, dtype)


def _copied_into_layout(g: np.ndarray, leaf: OTensor, is_root: bool) -> bool:
    if not is_dense(leaf.shape, leaf.strides):
        return False
    if is_root:
        return True
    # numpy views keep torch's layouts (not for empty arrays: take them as contiguous)
    strides = (
        tuple(st // g.itemsize for st in g.strides)
        if g.size
        else geometry.contiguous_strides(g.shape)
    )
    # past the leaf's last dim torch reads stale stride slots: slot 0 of a 0-d tensor is 1
    known = leaf.strides or (1,)
    for i, (n, st) in enumerate(zip(g.shape, strides, strict=True)):
        if n == 1 and st == 0 or n != 1 and i < len(known) and st != known[i]:
            return True
    if any(n != 1 for n in g.shape[len(known) :]):
        raise _Unpredictable
    return False


def _leads_to(root: Node | Accumulator, target: object) -> set[int]:
    """The nodes from which `target` can be reached (torch's exec_info for
    autograd.grad: only these run)."""
    memo: dict[int, bool] = {}

    def visit(n: object) -> bool:
        if id(n) not in memo:
            memo[id(n)] = n is target
            # every edge is visited (no short circuit): a node past the first
            # edge that reaches target may lead there too, and must run
            reached = [visit(e) for e in getattr(n, "edges", ()) if e is not None]
            memo[id(n)] = n is target or any(reached)
        return memo[id(n)]

    visit(root)
    return {k for k, v in memo.items() if v}


def run_backward(
    root: Node | Accumulator,
    grad: np.ndarray,
    keep_graph: bool,
    retainers: list[OTensor],
    capture: list | None = None,
) -> list[str]:
    """The engine: run every node reachable from root once all its inputs have arrived,
    highest sequence number first (AccumulateGrad before all). Returns notes on results
    torch leaves unpredictable (see Engine.undefined).

    capture=[target] is torch.autograd.grad: only the nodes that lead to target run, the
    gradient arriving at target is appended to capture, and nothing accumulates."""
    needed = None if capture is None else _leads_to(root, capture[0])
    notes, deps, stack, seen = [], {}, [root], {id(root)}
    while stack:
        for e in getattr(stack.pop(), "edges", ()):
            if e is not None and (needed is None or id(e) in needed):
                deps[id(e)] = deps.get(id(e), 0) + 1
                if id(e) not in seen:
                    seen.add(id(e))
                    stack.append(e)
    if needed is not None and id(root) not in needed:
        return notes
    hooks: dict[int, list[OTensor]] = {}
    for t in retainers:
        if t.retain_node is not None:
            hooks.setdefault(id(t.retain_node), []).append(t)
    tie = itertools.count()

    def ready_entry(n: Node | Accumulator) -> tuple:
        return (-np.inf if isinstance(n, Accumulator) else -n.seq, next(tie), n)

    buffers, is_root = {id(root): grad}, {id(root): True}  # is_root: backward's own argument
    ready = [ready_entry(root)]
    while ready:
        node = heapq.heappop(ready)[2]
        g, g_is_root = buffers.pop(id(node)), is_root.pop(id(node))
        g, hooked = gradapi.pre_hooks(node, g, node.out[1] if node.out else None)
        g_is_root = g_is_root and not hooked  # (a hook's result is no longer backward's own)
        for t in hooks.get(id(node), ()):  # retain_grad hooks see the node's input
            t.add_grad(g, node.out[1])
        if capture is not None and node is capture[0]:
            capture.append(g)
            continue
        g, hooked = gradapi.node_hooks(node, "node_prehooks", g, node.out[1] if node.out else None)
        g_is_root = g_is_root and not hooked  # Node pre-hooks: only on a node that runs
        if isinstance(node, Accumulator):
            try:
                _accumulate(node.leaf, g, g_is_root, node.out[1])
            except _Unpredictable:  # (usually stolen as it is)
                notes.append("AccumulateGrad of a leaf whose `.data =` dropped dimensions")
                node.leaf.add_grad(g, node.out[1])
            gradapi.post_accumulate_hooks(node.leaf)
            continue
        grads = node.apply(g)
        if not keep_graph:
            node.release()
        for e, gi in zip(node.edges, grads, strict=True):
            if e is None or (needed is not None and id(e) not in needed):
                continue
            if gi is not None:
                same = g_is_root and gi is g and target_meta(e) == node.out
                gi = validate(np.asarray(gi), target_meta(e))
                meta = target_meta(e)  # Node post hooks, on what validate_outputs left
                gi, posted = gradapi.node_hooks(node, "node_posthooks", gi, meta and meta[1])
                same = same and not posted
                if id(e) in buffers:
                    buffers[id(e)], is_root[id(e)] = buffers[id(e)] + gi, False
                else:
                    buffers[id(e)], is_root[id(e)] = gi, same
            deps[id(e)] -= 1
            if deps[id(e)] == 0 and id(e) in buffers:
                heapq.heappush(ready, ready_entry(e))
    return notes
