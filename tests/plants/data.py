"""data.*: .data copying, sharing the version, keeping grad, or writes through it seen."""

from __future__ import annotations

from .patch import in_graph_of, methods, saving_results, wrap_property, written_through
from .registry import plant


@plant("data_copies@0d", "data.shares_storage", ".data of a 0-d tensor is a copy")
def _(torch):
    wrap_property("data", get=lambda get, self: get(self).clone() if self.dim() == 0 else get(self))


@plant("data_shares_version", "data.own_version", ".data shares the version counter")
def _(torch):
    wrap_property("data", get=lambda get, self: self.detach())


@plant("data_requires_grad", "data.never_requires_grad", ".data keeps requires_grad")
def _(torch):
    wrap_property(
        "data",
        get=lambda get, self: get(self).requires_grad_() if self.requires_grad else get(self),
    )


@plant(
    "data_writes_raise",
    "data.write_is_silent",
    "backward raises 'modified by an inplace operation' when a tensor in its graph "
    "was written through .data",
)
def _(torch):
    written = written_through("data", lambda name, alias: wrap_property(name, get=alias))

    def backward(orig, self, *a, **k):
        if self.grad_fn is not None and in_graph_of(self.grad_fn, written):
            raise RuntimeError(
                "one of the variables needed for gradient computation has been "
                "modified by an inplace operation"
            )
        return orig(self, *a, **k)

    methods("backward", backward)


@plant(
    "data_write_ignored",
    "data.write_changes_gradient",
    "exp, tanh and sigmoid compute their gradient from a snapshot of their result",
)
def _(torch):
    saving_results(snapshot=True, class_name="Snapshot")


@plant(
    "set_data_casts@dtypes",
    "data.shares_storage",
    "x.data = y with y of another dtype gives x a copy of y cast to x's dtype",
)
def _(torch):
    def put(write, self, value):
        refused = self.requires_grad and not (value.is_floating_point() or value.is_complex())
        if value.dtype != self.dtype and not refused:  # (the refusal stays as it is)
            value = value.detach().to(self.dtype)
        write(self, value)

    wrap_property("data", put=put)
