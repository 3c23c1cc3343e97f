"""The gradient APIs beyond backward and torch.autograd.grad: tensor hooks
(register_hook), post-accumulate-grad hooks, and create_graph.

A tensor hook is bound to the tensor's grad_fn when it is registered (a leaf's
to the leaf itself): a later in-place write gives the tensor a new grad_fn,
and the hooks registered before it stay with the old one (notes/autograd.rst,
"Behavior of Tensor hooks when Tensor is modified in-place"). The engine runs
a node's hooks on the gradient arriving at it, in registration order, each on
the previous one's result (None: unchanged), before the retain_grad hooks and
before the node itself; a leaf's hooks run before its AccumulateGrad, and its
post-accumulate-grad hooks after it, on the tensor with its new .grad.

Node hooks (torch.autograd.graph.Node.register_prehook / register_hook) belong
to the node they were registered on, and run only where it runs: pre-hooks
after the tensor hooks and the retain_grad hooks (torch 2.0.1 to 2.13.0; the
notes list them before retain_grad, docs/findings.md), on the gradient the
node gets; post hooks after it, on each gradient it passes on (AccumulateGrad:
after the post-accumulate-grad hooks, with nothing to pass on).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dtypes import round_to
from .errors import ErrorKind, OracleError
from .nodes import Node, Saved


@dataclass(frozen=True)
class Hook:
    """What a hook row registers: where (`on`: "tensor" for Tensor.register_hook,
    "post_accumulate" for register_post_accumulate_grad_hook, "node_pre" and
    "node_post" for Node.register_prehook / register_hook), on which node
    (`node`: "grad_fn", or "first_edge": grad_fn.next_functions[0][0]), and
    what it does to each gradient (`effect`: "mul" or "add" its constant,
    "none": returns None, "removed": its handle removed at once, it never runs)."""

    on: str
    effect: str
    node: str = "grad_fn"


def run_hook(kind: str, const: object, g: np.ndarray, dtype: str) -> np.ndarray | None:
    """One hook's result on gradient g (of `dtype`), or None (g goes on unchanged)."""
    if kind == "mul":
        return round_to(g * const, dtype)
    if kind == "add":
        return round_to(g + const, dtype)
    return None


def pre_hooks(node: object, g: np.ndarray, dtype: str) -> tuple[np.ndarray, bool]:
    """The tensor hooks bound to `node` (a Node, or an Accumulator: its leaf's),
    run in order on g. Returns the gradient that goes on, and whether a hook
    replaced it."""
    owner = getattr(node, "leaf", node)
    replaced = False
    for kind, const in getattr(owner, "tensor_hooks", ()):
        out = run_hook(kind, const, g, dtype)
        if out is not None:
            g, replaced = out, True
    return g, replaced


def post_accumulate_hooks(leaf: object) -> None:
    """A leaf's post-accumulate-grad hooks, in order, once its .grad was accumulated."""
    for kind, const in getattr(leaf, "post_hooks", ()):
        if leaf.grad is not None:
            out = run_hook(kind, const, leaf.grad, leaf.grad_dtype or leaf.dtype)
            if out is not None:
                leaf.grad = out


def register_hook(t: object, kind: str, const: object) -> None:
    """Tensor.register_hook: bound to t's grad_fn, or to t itself for a leaf.

    torch keeps one dict of hooks per grad_fn (t._backward_hooks, None again
    whenever t's grad_fn changes) and reads t.grad_fn just after making it: so
    the first hook since the last change reads it (a removed hook too), and a
    later one joins the dict where it is, on the grad_fn as it was, without
    reading it. A view's stale grad_fn read there raises (made under no_grad,
    one output of several...: the dict stays, empty), or is regenerated (which
    crashes torch up to 2.14, pytorch/pytorch#196459)."""
    if not t.requires_grad:
        raise OracleError(ErrorKind.HOOK_NO_GRAD)
    made_for = getattr(t, "hook_dict_for", None)
    if made_for is None or made_for[0] is not t._fn:
        t.hook_dict_for = (t._fn,)
        t.grad_fn()
        t.hook_dict_for = (t._fn,)
    if kind == "removed":
        return
    fn = t._fn
    owner = t if fn is None else fn
    if not hasattr(owner, "tensor_hooks"):
        owner.tensor_hooks = []
    owner.tensor_hooks.append((kind, const))


def register_post_hook(t: object, kind: str, const: object) -> None:
    """Tensor.register_post_accumulate_grad_hook: leaves only."""
    if not t.requires_grad:
        raise OracleError(ErrorKind.HOOK_NO_GRAD)
    if t.grad_fn() is not None:
        raise OracleError(ErrorKind.POST_HOOK_NON_LEAF)
    if not hasattr(t, "post_hooks"):
        t.post_hooks = []
    t.post_hooks.append((kind, const))


# ---- Node hooks: torch.autograd.graph.Node.register_prehook / register_hook ----
def register_node_hook(t: object, hook: Hook, const: object) -> None:
    """Node.register_prehook / register_hook on t.grad_fn (hook.node
    "first_edge": on the node t.grad_fn's first edge reaches). The hook stays
    with that node: a later in-place write to t gives t another grad_fn, not
    this one its hooks."""
    node = t.grad_fn()
    if node is not None and hook.node == "first_edge":
        edges = getattr(node, "edges", ())
        node = edges[0] if edges else None
    if node is None:  # t.grad_fn (or next_functions[0][0]) is None
        raise OracleError(ErrorKind.NO_NODE)
    if hook.effect == "removed":
        return
    attr = "node_prehooks" if hook.on == "node_pre" else "node_posthooks"
    if not hasattr(node, attr):
        setattr(node, attr, [])
    getattr(node, attr).append((hook.effect, const))


def node_hooks(node: object, attr: str, g: np.ndarray, dtype: str) -> tuple[np.ndarray, bool]:
    """A node's pre-hooks (attr "node_prehooks", on its grad_outputs) or post
    hooks ("node_posthooks", on one of its grad_inputs), in registration order,
    each on the previous result (None: unchanged). Returns the gradient that
    goes on, and whether a hook replaced it."""
    replaced = False
    for kind, const in getattr(node, attr, ()):
        out = run_hook(kind, const, g, dtype)
        if out is not None:
            g, replaced = out, True
    return g, replaced


# ---- create_graph: a gradient in a graph of its own --------------------------------
class NotModelled(Exception):
    """A create_graph gradient whose graph the model does not build."""


def _pow2(x: np.ndarray, r: np.ndarray, p: tuple) -> np.ndarray:
    c = p[0]
    return np.zeros_like(x) if c in (0, 1) else c * (c - 1) * x ** (c - 2)


# op -> the derivative of its gradient formula g * f'(...) with respect to what
# the formula reads, per unit of g: of x (sin, cos, pow: op''(x)), or of op's
# result r (exp, tanh, sigmoid: the formula reads r, so the gradient's graph
# runs on through op's own node). None: the formula reads no tensor that
# requires grad (g * c, -g), and the gradient is outside any graph
SECOND: dict[str, object] = {
    "exp": lambda x, r, p: np.ones_like(r),  # g * r
    "sin": lambda x, r, p: -np.sin(x),
    "cos": lambda x, r, p: -np.cos(x),
    "tanh": lambda x, r, p: -2 * r,  # g * (1 - r * r)
    "sigmoid": lambda x, r, p: 1 - 2 * r,  # g * (r - r * r)
    "pow_s": _pow2,
    "mul_s": None,
    "neg": None,
}
# ops whose create_graph gradient the differential draws (real dtypes)
SECOND_OPS = tuple(SECOND)


def double_node(node: object, out: object, inp: object, v: object, d: object) -> object | None:
    """The grad_fn of d = dout/dinp * v, for out = op(inp) with op in SECOND
    (real dtypes): backward through d gives gg * v * op''(inp) to inp; None
    where d is outside any graph (a linear op, or pow with exponent 0).

    Its graph saves v, and inp where op's formula reads it (cos(x) for sin: a
    node of its own, saving x now); where the formula reads op's result (exp,
    tanh, sigmoid) its edge is op's own node (the gradient with respect to the
    result goes there; that node runs once, whichever way it is reached, and
    is freed as any node is)."""
    edges = getattr(node, "edges", ())
    if node is None or node.name not in SECOND or len(edges) != 1 or edges[0] is not inp.edge():
        raise NotModelled("create_graph through anything but one op of oracle.gradapi.SECOND")
    second, params = SECOND[node.name], getattr(node, "params", ())
    if second is None or (node.name == "pow_s" and params[0] == 0):
        return None
    if np.iscomplexobj(d.values()):
        raise NotModelled("create_graph of a complex gradient")
    saved = {"grad": Saved(v, copy=True)}
    if "self" in node.saved:
        saved["self"] = Saved(inp)
    through_result = "result" in node.saved
    if node.name in ("tanh", "sigmoid"):  # saved again, on its own (their backward's
        saved["result"] = Saved(out, output=True)  # backward saves it; exp's g * r does not)
    zero = node.name == "pow_s" and params[0] == 1  # x.pow(0)'s gradient: zeros, never nan

    def backward(gg: np.ndarray, sv: dict, needs: list) -> list:
        if zero:
            return [np.zeros_like(gg)]
        result = sv.get("result", np.ones_like(gg))
        return [gg * sv["grad"] * second(sv.get("self"), result, params)]

    return Node(
        f"{node.name}_backward_backward",
        [node if through_result else inp.edge()],
        backward,
        (d.shape, d.dtype),
        saved,
    )
