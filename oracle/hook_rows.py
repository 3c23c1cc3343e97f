"""The hook family's rows of the op table, one per op: the torch call (what the
differential runs and prints in its listings and repro scripts), the hook it
registers (oracle.gradapi.Hook: where, on which node, what it does) and the
argument space of its constant (strategies.hook_args).

oracle/ops.py adds them to the table in this order. The rows that run a
value-changing hook:
- Tensor.register_hook, bound to the tensor's grad_fn now (a leaf's: itself);
- Tensor.register_post_accumulate_grad_hook (torch 2.1 on), leaves only: it
  gets the leaf after its .grad was accumulated, and replaces .grad, scaled.
  It also runs on a leaf that stopped requiring grad, whose .grad stays None;
- torch.autograd.graph.Node.register_prehook / register_hook on t0.grad_fn
  (the `acc_` rows: on the node its first edge reaches, next_functions[0][0]:
  a leaf's AccumulateGrad for y = op(leaf), held by y's graph). A pre-hook
  maps the node's grad_outputs, a (post) hook its grad_inputs; each maps
  every gradient of the tuple (None stays None).
"""

from __future__ import annotations

from strategies.argspace import ArgSpace
from strategies.hook_args import FACTOR, TERM, space

from .gradapi import Hook

_IMPLS = {
    "tensor": "register_hook",
    "post_accumulate": "register_post_hook",
    "node_pre": "register_node_hook",
    "node_post": "register_node_hook",
}
_CONSTANT = {"mul": ("factor", FACTOR), "add": ("term", TERM), "removed": ("factor", FACTOR)}


def _hook(name: str, torch: str, hook: Hook) -> dict:
    param, of = _CONSTANT.get(hook.effect, (None, None))
    args: ArgSpace | None = None if of is None else space(name, of)
    params = () if param is None else (param,)
    return dict(
        arity=1,
        params=params,
        torch=torch,
        impl=_IMPLS[hook.on],
        dtypes=("float", "complex"),
        returns=False,
        param_kinds=("scalar",) * len(params),
        hook=hook,
        args=args,
    )


# torch calls a tensor hook with None where the gradient is undefined (a custom
# Function's backward returned None for that input): a hook must take it, as a
# Node hook takes None in its tuples
_TENSOR = "{t0}.register_hook(lambda g: g if g is None else %s)"
_MAP = "tuple(g if g is None else g {} {{p0}} for g in {})"
_PRE = "{t0}.grad_fn.register_prehook(lambda go: %s)"
_ACC = "{t0}.grad_fn.next_functions[0][0].register_prehook(lambda go: %s)"
_POST = "{t0}.grad_fn.register_hook(lambda gi, go: %s)"
_POST_ACC = (
    "{t0}.register_post_accumulate_grad_hook("
    "lambda t: t.grad is None or setattr(t, 'grad', t.grad * {p0}))"
)


def _node_family(prefix: str, template: str, grads: str, on: str) -> dict[str, dict]:
    """A Node hook's four rows, `prefix`_mul, _add, _none and _removed: `template`
    registers a hook mapping each gradient of the tuple `grads` (or returning None)."""
    rows = {
        "mul": template % _MAP.format("*", grads),
        "add": template % _MAP.format("+", grads),
        "none": template % "None",
        "removed": (template % _MAP.format("*", grads)) + ".remove()",
    }
    return {f"{prefix}_{e}": _hook(f"{prefix}_{e}", t, Hook(on, e)) for e, t in rows.items()}


ROWS: dict[str, dict] = {
    "hook_mul": _hook("hook_mul", _TENSOR % "g * {p0}", Hook("tensor", "mul")),
    "hook_add": _hook("hook_add", _TENSOR % "g + {p0}", Hook("tensor", "add")),
    "hook_none": _hook("hook_none", "{t0}.register_hook(lambda g: None)", Hook("tensor", "none")),
    "hook_removed": _hook(
        "hook_removed",
        (_TENSOR % "g * {p0}") + ".remove()",
        Hook("tensor", "removed"),
    ),
    "post_hook_mul": _hook("post_hook_mul", _POST_ACC, Hook("post_accumulate", "mul")),
    **_node_family("node_prehook", _PRE, "go", "node_pre"),
    "acc_prehook_mul": _hook(
        "acc_prehook_mul", _ACC % _MAP.format("*", "go"), Hook("node_pre", "mul", "first_edge")
    ),
    "acc_prehook_add": _hook(
        "acc_prehook_add", _ACC % _MAP.format("+", "go"), Hook("node_pre", "add", "first_edge")
    ),
    **_node_family("node_hook", _POST, "gi", "node_post"),
}


def hooking(*on: str) -> tuple[str, ...]:
    """The rows whose hook is registered `on` one of these (Hook.on)."""
    return tuple(name for name, row in ROWS.items() if row["hook"].on in on)


# ops only the gradapi motifs draw, and the compiled differential leaves to eager
GRADAPI_OPS = (*ROWS, "grad_cg")
