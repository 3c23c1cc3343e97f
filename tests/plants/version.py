"""version.*: version counters not moving, moving when they should not, and
saved tensors checked wrongly."""

from __future__ import annotations

from .patch import (
    INPLACE,
    is_float,
    keeps_version,
    methods,
    results,
    saving_results,
    set_version,
)
from .registry import plant


@plant("mul_no_bump", "version.bumps_on_inplace", "mul_ does not bump the version")
def _(torch):
    methods("mul_", keeps_version(lambda t: True))


@plant(
    "inplace_no_bump@complex",
    "version.bumps_on_inplace",
    "in-place ops on complex tensors do not bump the version",
)
def _(torch):
    methods(INPLACE, keeps_version(lambda t: t.is_complex()))


@plant("sum_bumps", "version.unchanged_out_of_place", "x.sum() bumps x's version")
def _(torch):
    def total(self, out):
        set_version(self, self._version + 1)
        return out

    results("sum", total)


@plant(
    "saves_copies",
    "version.saved_modified_raises",
    "exp, tanh and sigmoid save a private copy of their result",
)
def _(torch):
    saving_results(snapshot=False, class_name="SavesCopy")


def _sum_to(g, like):
    while g.dim() > like.dim():
        g = g.sum(0)
    for d, n in enumerate(like.shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(d, keepdim=True)
    return g


@plant(
    "add_checks_inputs",
    "version.unsaved_modified_ok",
    "x + y, x - y and -x check their inputs' versions in backward, as if they saved them",
)
def _(torch):
    modified = (
        "one of the variables needed for gradient computation has been modified by an "
        "inplace operation"
    )

    def version(tensor):
        return None if tensor.is_inference() else tensor._version

    def check(ctx):
        for tensor, seen in ctx.inputs:
            if seen is not None and tensor._version != seen:
                raise RuntimeError(modified)

    class CheckedAdd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, sign):
            ctx.inputs = [(x, version(x)), (y, version(y))]
            ctx.shapes, ctx.sign = (x, y), sign
            return x + y * sign

        @staticmethod
        def backward(ctx, g):
            check(ctx)
            x, y = ctx.shapes
            return _sum_to(g, x), _sum_to(g * ctx.sign, y), None

    class CheckedNeg(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.inputs = [(x, version(x))]
            return -x

        @staticmethod
        def backward(ctx, g):
            check(ctx)
            return -g

    def binary(sign):
        def op(orig, self, other):
            if (
                torch.is_grad_enabled()
                and isinstance(other, torch.Tensor)
                and (self.requires_grad or other.requires_grad)
                and self.dtype == other.dtype
                and is_float(self)
            ):
                return CheckedAdd.apply(self, other, sign)
            return orig(self, other)

        return op

    methods(("__add__", "add"), binary(1))
    methods(("__sub__", "sub"), binary(-1))

    def neg(orig, self):
        if torch.is_grad_enabled() and self.requires_grad:
            return CheckedNeg.apply(self)
        return orig(self)

    methods(("__neg__", "neg"), neg)


@plant("no_grad_no_bump", "version.no_grad_bumps", "in-place ops under no_grad do not bump")
def _(torch):
    methods(INPLACE, keeps_version(lambda t: not torch.is_grad_enabled()))
