"""The backward engine: run_backward over the nodes of oracle.nodes."""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

import numpy as np

from . import geometry, gradapi
from .dtypes import compute_dtype, round_to
from .errors import ErrorKind, OracleError
from .geometry import broadcast_shapes, is_dense
from .nodes import Meta, Node, sum_to
from .tensor import Accumulator, OTensor


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


@dataclass
class BackwardNotes:
    """What a backward leaves to torch: results it leaves unpredictable (see
    Engine.undefined), and an error torch may raise or not, releases differing,
    where either outcome holds (Engine.may_refuse)."""

    undefined: list[str] = field(default_factory=list)
    may_raise: ErrorKind | None = None


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


def _undefined(
    node: Node | Accumulator, keep_graph: bool, capture: list | None, notes: BackwardNotes
) -> np.ndarray | None:
    """A node whose every incoming gradient was undefined (measured on 2.0.1, 2.13.0,
    2.14.1): the engine still runs it. AccumulateGrad accumulates nothing and
    retain_grad keeps nothing; autograd.grad's input gets None (allow_unused); a custom
    Function's node gets zeros (materialize_grads, the default), returned here to run
    as any gradient; a built-in node unpacks what it saved (a version check may
    raise), is released, and passes the undefined gradient on (None returned).
    CopySlices returns at once. Hooks are called with None: not modelled."""
    if capture is not None and node is capture[0]:
        capture.append(None)
        return None
    owner = getattr(node, "leaf", node)
    hooked = ("tensor_hooks", "node_prehooks", "node_posthooks", "post_hooks")
    if any(getattr(owner, a, ()) or getattr(node, a, ()) for a in hooked):
        notes.undefined.append("a hook called with an undefined gradient (None): not modelled")
    if isinstance(node, Accumulator):
        if node.leaf.grad_fn() is not None:
            # a leaf moved into the graph interior: 2.0.1 and 2.4.1 pass the undefined
            # gradient by, 2.13.0 and 2.14.1 raise as for a defined one (measured; the
            # older AccumulateGrad::apply returned on an undefined gradient before its
            # grad_fn check). The documentation says nothing of either: both hold
            notes.may_raise = notes.may_raise or ErrorKind.LEAF_MOVED
        return None
    zeros = np.zeros(node.out[0], compute_dtype(node.out[1])) if node.out else None
    if node.name.startswith("fn_"):  # the custom Functions' rows (oracle/ops.py)
        return zeros
    if node.name != "CopySlices" and zeros is not None:
        node.apply(zeros)  # (its gradients are not used: undefined ones go on)
    if not keep_graph:
        node.release()
    return None


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
) -> BackwardNotes:
    """The engine: run every node reachable from root once all its inputs have arrived,
    highest sequence number first (AccumulateGrad before all). Returns what it leaves
    to torch (BackwardNotes).

    capture=[target] is torch.autograd.grad: only the nodes that lead to target run, the
    gradient arriving at target is appended to capture, and nothing accumulates."""
    needed = None if capture is None else _leads_to(root, capture[0])
    notes, deps, stack, seen = BackwardNotes(), {}, [root], {id(root)}
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

    # is_root: backward's own argument. A buffer of None: every gradient that arrived
    # was undefined (a custom Function's backward returned None for that input)
    buffers, is_root = {id(root): grad}, {id(root): True}
    ready = [ready_entry(root)]
    while ready:
        node = heapq.heappop(ready)[2]
        g, g_is_root = buffers.pop(id(node)), is_root.pop(id(node))
        materialized = g is None
        if materialized:
            g = _undefined(node, keep_graph, capture, notes)
            if g is None:  # passed on undefined, to every edge
                for e in getattr(node, "edges", ()):
                    if e is not None and (needed is None or id(e) in needed):
                        buffers.setdefault(id(e), None)
                        is_root.setdefault(id(e), False)
                        deps[id(e)] -= 1
                        if deps[id(e)] == 0:
                            heapq.heappush(ready, ready_entry(e))
                continue
        g, hooked = gradapi.pre_hooks(node, g, node.out[1] if node.out else None)
        g_is_root = g_is_root and not hooked  # (a hook's result is no longer backward's own)
        for t in () if materialized else hooks.get(id(node), ()):
            t.add_grad(g, node.out[1])  # retain_grad hooks see the node's input (not zeros)
        if capture is not None and node is capture[0]:
            capture.append(g)
            continue
        g, hooked = gradapi.node_hooks(node, "node_prehooks", g, node.out[1] if node.out else None)
        g_is_root = g_is_root and not hooked  # Node pre-hooks: only on a node that runs
        if isinstance(node, Accumulator):
            if not node.leaf.requires_grad and getattr(node.leaf, "post_hooks", ()):
                # the hook runs "after the gradients have been accumulated": here none
                # are, and releases differ (2.4.1 skips the hook, 2.13.0 runs it)
                notes.undefined.append(
                    "a post-accumulate-grad hook of a leaf that no longer requires grad"
                )
            try:
                _accumulate(node.leaf, g, g_is_root, node.out[1])
            except _Unpredictable:  # (usually stolen as it is)
                notes.undefined.append(
                    "AccumulateGrad of a leaf whose `.data =` dropped dimensions"
                )
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
                if buffers.get(id(e)) is not None:
                    buffers[id(e)], is_root[id(e)] = buffers[id(e)] + gi, False
                else:
                    buffers[id(e)], is_root[id(e)] = gi, same
            else:  # undefined: the node still runs once its inputs are in
                buffers.setdefault(id(e), None)
                is_root.setdefault(id(e), False)
            deps[id(e)] -= 1
            if deps[id(e)] == 0 and id(e) in buffers:
                heapq.heappush(ready, ready_entry(e))
    return notes
