"""schema.*: kernels that break their operator's schema.

Planted where a backend's bug would be: the operator's CPU kernel (or, for
the version counter, its ADInplaceOrView kernel) is replaced through
torch.library (`kernel_plant`). A kernel calls other operators than its own,
so that it never re-enters itself."""

from __future__ import annotations

from .registry import crash_kernel, kernel_plant


@kernel_plant(
    "schema_fresh@neg",
    "schema.fresh_output",
    "aten::neg's CPU kernel returns its input instead of a new tensor",
    "neg",
)
def _(torch):
    return lambda self: self


@kernel_plant(
    "schema_alias@transpose",
    "schema.alias_shares_storage",
    "aten::transpose.int's CPU kernel returns a copy instead of a view",
    "transpose.int",
)
def _(torch):
    def transpose(self, dim0, dim1):
        order = list(range(self.dim()))
        if order:
            order[dim0], order[dim1] = order[dim1], order[dim0]
        return self.permute(order).clone()

    return transpose


@kernel_plant(
    "schema_unchanged@sin",
    "schema.input_unchanged",
    "aten::sin's CPU kernel computes in place into its input and returns a copy",
    "sin",
)
def _(torch):
    def sin(self):
        torch.ops.aten.sin_.default(self)
        return self.clone()

    return sin


@kernel_plant(
    "schema_out@abs.out",
    "schema.out_returns_out",
    "aten::abs.out's CPU kernel returns a new tensor and leaves out alone",
    "abs.out",
)
def _(torch):
    def abs_out(self, *, out):
        return torch.where(self < 0, torch.ops.aten.neg.default(self), self.clone())

    return abs_out


@kernel_plant(
    "schema_inplace@neg_",
    "schema.inplace_returns_self",
    "aten::neg_'s CPU kernel writes self but returns a copy of it",
    "neg_",
)
def _(torch):
    def neg_(self):
        self.copy_(torch.ops.aten.neg.default(self))
        return self.clone()

    return neg_


@kernel_plant(
    "schema_version@add_",
    "schema.mutable_bumps_version",
    "aten::add_.Tensor's ADInplaceOrView kernel writes self without bumping its version",
    "add_.Tensor",
    key="ADInplaceOrView",
)
def _(torch):
    def add_(self, other, *, alpha=1):
        with torch._C._AutoDispatchBelowADInplaceOrView():
            return torch.ops.aten.add_.Tensor(self, other, alpha=alpha)

    return add_


@crash_kernel("crash@sin", "sin")
def _(torch):
    import os
    import signal

    def sin(self):
        os.kill(os.getpid(), signal.SIGSEGV)

    return sin
