"""function.* and saved_hooks.*: custom autograd.Functions and
saved_tensors_hooks going wrong (issue 10)."""

from __future__ import annotations

from .patch import wrap
from .registry import plant


def _saved_as_data(torch, when) -> None:
    """A custom Function's save_for_backward saves t.data for each t where when(t)."""

    def save_for_backward(orig, self, *tensors):
        return orig(self, *(t.data if t is not None and when(t) else t for t in tensors))

    wrap(torch.autograd.function.FunctionCtx, "save_for_backward", save_for_backward)


@plant(
    "function_saved_unchecked",
    "function.saved_version_check",
    "a custom Function's save_for_backward saves x.data: a later in-place write goes unseen",
)
def _(torch):
    _saved_as_data(torch, lambda t: True)


@plant(
    "function_saved_unchecked@float64",
    "function.saved_version_check",
    "as function_saved_unchecked, for float64 tensors only",
)
def _(torch):
    _saved_as_data(torch, lambda t: t.dtype == torch.float64)


@plant(
    "mark_dirty_ignored",
    "function.mark_dirty_returns_input",
    "mark_dirty does nothing: the written input is returned as a new alias, its history "
    "(grad_fn) unchanged, its version bumped once",
)
def _(torch):
    torch.autograd.function.FunctionCtx.mark_dirty = lambda self, *args, **kwargs: None


@plant(
    "non_differentiable_requires_grad",
    "function.non_differentiable_output",
    "mark_non_differentiable does nothing: the output requires grad",
)
def _(torch):
    torch.autograd.function.FunctionCtx.mark_non_differentiable = lambda self, *a, **k: None


@plant(
    "function_view_copied",
    "function.view_output",
    "a view a custom Function returns comes back as a copy: no _base, memory of its own",
)
def _(torch):
    function = torch.autograd.function.Function
    original = function.__dict__["apply"].__func__

    def apply(cls, *args, **kwargs):
        out = original(cls, *args, **kwargs)
        inputs = [a for a in args if isinstance(a, torch.Tensor)]
        if isinstance(out, torch.Tensor) and out._base is not None:
            if all(out is not a for a in inputs):  # (not a dirty input returned)
                return out.clone()
        return out

    function.apply = classmethod(apply)


def _wrap_saved_hooks(torch, make_pack, make_unpack) -> None:
    """torch.autograd.graph.saved_tensors_hooks(pack, unpack) with the hooks rewrapped."""
    graph = torch.autograd.graph
    original = graph.saved_tensors_hooks

    class saved_tensors_hooks(original):
        def __init__(self, pack_hook, unpack_hook):
            super().__init__(make_pack(pack_hook), make_unpack(unpack_hook))

    graph.saved_tensors_hooks = saved_tensors_hooks


@plant(
    "saved_hooks_unpack_ignored",
    "saved_hooks.pack_unpack",
    "unpack's result is dropped: backward uses the tensor as it was saved (a detached alias)",
)
def _(torch):
    def make_unpack(unpack):
        return lambda packed: (unpack(packed[1]), packed[0])[1]

    _wrap_saved_hooks(torch, lambda pack: lambda t: (t.detach(), pack(t)), make_unpack)


@plant(
    "saved_hooks_pack_twice",
    "saved_hooks.pack_unpack",
    "pack runs twice, the second time on what the first returned",
)
def _(torch):
    _wrap_saved_hooks(torch, lambda pack: lambda t: pack(pack(t)), lambda unpack: unpack)


@plant(
    "mark_dirty_drops_other_grads",
    "function.mark_dirty_returns_input",
    "a Function that marks an input dirty hands its other inputs no gradient: its node "
    "drops every gradient but the dirty input's (AddDirty's y gets none)",
)
def _(torch):
    def mark_dirty(orig, self, *args, **kwargs):
        orig(self, *args, **kwargs)
        # ctx is the Function's node: a node hook may replace its grad_inputs
        self.register_hook(lambda gi, go: (gi[0],) + (None,) * (len(gi) - 1))

    wrap(torch.autograd.function.FunctionCtx, "mark_dirty", mark_dirty)


@plant(
    "function_view_of_plain_ordinary",
    "function.view_output",
    "a view a custom Function returns of inputs that require no grad comes back as an "
    "ordinary view (as_strided of its base): writing it with an operand that requires grad "
    "goes through",
)
def _(torch):
    function = torch.autograd.function.Function
    original = function.__dict__["apply"].__func__

    def apply(cls, *args, **kwargs):
        out = original(cls, *args, **kwargs)
        inputs = [a for a in args if isinstance(a, torch.Tensor)]
        if isinstance(out, torch.Tensor) and out._base is not None:
            plain = not any(a.requires_grad for a in inputs)
            if plain and all(out is not a for a in inputs):
                return out._base.as_strided(out.size(), out.stride(), out.storage_offset())
        return out

    function.apply = classmethod(apply)


@plant(
    "function_none_grad_passed_through",
    "function.backward_none_gradient",
    "a None a custom Function's backward returns, for an input that needs a gradient, is "
    "replaced by the gradient of its output (AddNoGrad's input gets g after all)",
)
def _(torch):
    def apply(orig, self, *args):
        out = orig(self, *args)
        grads = out if isinstance(out, tuple) else (out,)
        needs = self.needs_input_grad
        return tuple(
            args[0] if g is None and i < len(needs) and needs[i] else g for i, g in enumerate(grads)
        )

    wrap(torch.autograd.function.BackwardCFunction, "apply", apply)
