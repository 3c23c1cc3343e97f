"""Attribution for custom autograd.Functions and saved-tensor hooks: the rule a
discrepancy breaks when it happens at one of their steps, or at a backward
whose graph goes through one. None: not theirs (attribution goes on)."""

from __future__ import annotations

FUNCTION_RULES = {  # a discrepancy at the step itself
    "fn_scale": "function.saved_version_check",
    "fn_mul_": "function.mark_dirty_returns_input",
    "fn_add_dirty_": "function.mark_dirty_returns_input",
    "fn_none_grad": "function.backward_none_gradient",
    "fn_nondiff": "function.non_differentiable_output",
    "fn_view": "function.view_output",
    "sin_hooked_detach": "saved_hooks.pack_unpack",
    "sin_hooked_x2_x2": "saved_hooks.pack_unpack",
}
HOOKED = ("sin_hooked_detach", "sin_hooked_x2_x2")
DIRTY = ("fn_mul_", "fn_add_dirty_")  # they return their (written) input: no new tensor
_BACKWARD = ("backward", "backward_g", "autograd_grad")


def function_rule(f) -> str | None:
    """f: facts.Facts."""
    d, op = f.d, f.step.op
    if d.kind == "raise" and "CUSTOM_FUNCTION_VIEW" in (d.expected, d.actual):
        return "function.view_output"
    if op in FUNCTION_RULES:
        return FUNCTION_RULES[op]
    if op not in _BACKWARD:
        return None
    feeding = {f.origins[k].op for k in f.ancestry(f.step.tensors[0])}
    dirty = any(s.op in DIRTY for s in f.steps[: d.step])  # (it makes no tensor)
    if not feeding & set(FUNCTION_RULES) and not dirty:
        return None
    hooked = bool(feeding & set(HOOKED))
    if d.kind == "raise" and "SAVED_TENSOR_MODIFIED" in (d.expected, d.actual):
        if hooked and d.actual == "SAVED_TENSOR_MODIFIED":  # torch checked a hooked one
            return "saved_hooks.pack_unpack"
        if "fn_scale" in feeding:
            return "function.saved_version_check"
        return None
    if d.kind == "grad":
        if hooked:
            return "saved_hooks.pack_unpack"
        if dirty:
            return "function.mark_dirty_returns_input"
    if "fn_none_grad" in feeding and _none_gradient(f):
        return "function.backward_none_gradient"
    return None


def _none_gradient(f) -> bool:
    """A .grad, or autograd.grad's result, differs after a backward through AddNoGrad;
    not where a leaf's .grad shares memory with backward's gradient argument
    (pytorch/pytorch#34082, conformance.differential.grad_argument's)."""
    from conformance.differential import grad_argument  # (it imports torch)

    d = f.d
    if grad_argument.rule(f.run, d) is not None:
        return False
    if d.kind == "grad":
        return True
    return f.step.op == "autograd_grad" and d.kind in ("values", "shape", "dtype")
