"""leaf.*, nograd.*, dtype.* and inference.*: in-place writes on leaves, grad
mode, which dtypes may require grad, and inference mode going wrong."""

from __future__ import annotations

from .patch import INPLACE, is_float, methods, results, retried_under, runs_under, wrap_property
from .registry import plant

# --- leaves and grad mode --------------------------------------------------------


@plant("leaf_inplace_allowed", "leaf.inplace_raises", "in-place on a grad leaf is allowed")
def _(torch):
    def grad_leaf(self, *a, **k):
        # (a view is never a leaf here; asking a view made under no_grad
        # whether it is one can itself raise)
        leaf = self._base is None and self.is_leaf
        return torch.is_grad_enabled() and self.requires_grad and leaf

    methods(INPLACE, runs_under(torch.no_grad, grad_leaf))


@plant(
    "leaf_view_inplace_allowed@views",
    "leaf.view_inplace_raises",
    "in-place on a view of a grad leaf is allowed",
)
def _(torch):
    def of_grad_leaf(self, *a, **k):
        base = self._base
        return base is not None and base.is_leaf and base.requires_grad

    methods(INPLACE, runs_under(torch.no_grad, of_grad_leaf))


@plant(
    "no_grad_leaf_refused",
    "nograd.inplace_on_leaf_allowed",
    "in-place on a grad leaf raises even under no_grad",
)
def _(torch):
    def op(orig, self, *a, **k):
        if self.is_leaf and self.requires_grad and not torch.is_grad_enabled():
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation."
            )
        return orig(self, *a, **k)

    methods(INPLACE, op)


@plant(
    "no_grad_result_requires_grad",
    "nograd.results_dont_require_grad",
    "x.exp() and x * c under no_grad require grad when x does",
)
def _(torch):
    def result(self, out):
        if not torch.is_grad_enabled() and self.requires_grad and is_float(out):
            out.requires_grad_()
        return out

    results(("exp", "__mul__"), result)


@plant(
    "no_grad_view_writable",
    "nograd.view_inplace_raises",
    "a view made under no_grad can be written with grad on",
)
def _(torch):
    # (only no_grad's views: not those made under inference_mode)
    methods(INPLACE, retried_under(torch.no_grad, "created in no_grad mode"))


@plant(
    "enable_grad_no_record",
    "nograd.enable_grad_restores",
    "torch.enable_grad() inside no_grad leaves grad mode off: nothing is recorded",
)
def _(torch):
    def __enter__(self):
        self.prev = torch.is_grad_enabled()

    torch.enable_grad.__enter__ = __enter__


@plant(
    "enable_grad_exit_leaks",
    "nograd.enable_grad_restores",
    "leaving torch.enable_grad() inside no_grad leaves grad mode on: the rest of the no_grad "
    "block records",
)
def _(torch):
    def __exit__(self, *exc):
        torch._C._set_grad_enabled(True)

    torch.enable_grad.__exit__ = __exit__


@plant(
    "set_grad_enabled_fn_ignored",
    "nograd.set_grad_enabled",
    "torch.set_grad_enabled(mode) called as a function does nothing; only the context "
    "manager (and the decorator) set grad mode",
)
def _(torch):
    original = torch.set_grad_enabled

    class set_grad_enabled(original):
        def __init__(self, mode):
            self.prev, self.mode = torch.is_grad_enabled(), mode

        def __call__(self, orig_func):
            return original(self.mode)(orig_func)

    def __enter__(self):  # no_grad calls set_grad_enabled as a function: keep it working
        self.prev = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)

    def __exit__(self, *exc):
        torch._C._set_grad_enabled(self.prev)

    torch.no_grad.__enter__, torch.no_grad.__exit__ = __enter__, __exit__
    torch.set_grad_enabled = torch.autograd.set_grad_enabled = set_grad_enabled
    torch.autograd.grad_mode.set_grad_enabled = set_grad_enabled


# --- dtypes and inference mode -----------------------------------------------------


@plant(
    "int_requires_grad",
    "dtype.only_float_complex_require_grad",
    "requires_grad_() on an integer tensor is silently ignored",
)
def _(torch):
    def requires_grad_(orig, self, requires_grad=True):
        return orig(self, requires_grad) if is_float(self) else self

    methods("requires_grad_", requires_grad_)


@plant(
    "half_cannot_require_grad@float16",
    "dtype.only_float_complex_require_grad",
    "requires_grad_() on float16 raises",
)
def _(torch):
    def requires_grad_(orig, self, requires_grad=True):
        if self.dtype == torch.float16 and requires_grad:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        return orig(self, requires_grad)

    methods("requires_grad_", requires_grad_)


@plant(
    "copy_into_int_records",
    "dtype.inplace_keeps_int_out_of_graph",
    "copy_ of a 0-d source that requires grad into an integer tensor goes through fill_",
)
def _(torch):
    def copy_(orig, self, src, *a, **k):
        if src.dim() == 0 and src.requires_grad and not is_float(self):
            return self.fill_(src)
        return orig(self, src, *a, **k)

    methods("copy_", copy_)


@plant("inference_version", "inference.no_version_counter", "inference tensors report version 0")
def _(torch):
    wrap_property("_version", get=lambda get, self: 0 if self.is_inference() else get(self))


@plant(
    "inference_saved",
    "inference.not_saved_for_backward",
    "x * t clones an inference t so it can be saved",
)
def _(torch):
    def op(orig, self, other, *a, **k):
        if isinstance(other, torch.Tensor) and other.is_inference():
            other = other.clone()
        if self.is_inference() and isinstance(other, torch.Tensor) and other.requires_grad:
            self = self.clone()
        return orig(self, other, *a, **k)

    methods(("__mul__", "__rmul__", "__truediv__", "mul", "div"), op)


@plant(
    "inference_inplace_allowed",
    "inference.inplace_outside_raises",
    "in-place ops on an inference tensor outside inference_mode run as if inside it",
)
def _(torch):
    def outside(self, *a, **k):
        return self.is_inference() and not torch.is_inference_mode_enabled()

    methods(INPLACE, runs_under(torch.inference_mode, outside))


@plant(
    "inference_view_writable@views",
    "inference.view_inplace_raises",
    "a view of a normal tensor made under inference_mode can be written in place with grad on "
    "(the write is not recorded)",
)
def _(torch):
    message = "created in inference mode and is being modified"
    methods(INPLACE, retried_under(torch.no_grad, message))
