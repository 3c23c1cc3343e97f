"""clone.*: clone() aliasing, scrambling, sharing or tracking what it should not."""

from __future__ import annotations

import weakref

from .patch import (
    INPLACE,
    Registry,
    after_writes,
    is_float,
    methods,
    overlapping,
    own_backward,
    remember,
    results,
    wrap_property,
)
from .registry import plant


@plant("clone_aliases", "clone.new_storage", "clone() returns a view of its source")
def _(torch):
    methods("clone", lambda orig, self, *a, **k: self.view_as(self))


@plant("clone_aliases@bfloat16", "clone.new_storage", "clone() of a bfloat16 tensor is a view")
def _(torch):
    def clone(orig, self, *a, **k):
        return self.view_as(self) if self.dtype == torch.bfloat16 else orig(self, *a, **k)

    methods("clone", clone)


@plant("clone_scrambles@rank3", "clone.same_values", "clone() of rank >= 3 reverses dim 0")
def _(torch):
    results("clone", lambda self, out: out.flip(0) if out.dim() >= 3 else out)


@plant("clone_cow_leaks", "clone.write_isolated", "writes to a clone reach its source")
def _(torch):
    sources = Registry()
    remember("clone", sources, weakref.ref)
    copy = torch.Tensor.copy_

    def mirror(self):
        source = sources.get(self)
        source = source() if source is not None else None
        if source is not None and source.shape == self.shape and not overlapping(source):
            with torch.no_grad():
                copy(torch._C.TensorBase.data.__get__(source), self)

    after_writes(mirror, INPLACE)


@plant(
    "clone_shares_version",
    "clone.own_version",
    "in-place writes to a clone's source also move the clone's version",
)
def _(torch):
    sources = Registry()
    remember("clone", sources, lambda self: (weakref.ref(self), self._version))

    def version(get, self):
        entry = sources.get(self)
        source = entry[0]() if entry is not None else None
        if source is None:
            return get(self)
        return get(self) + get(source) - entry[1]

    wrap_property("_version", get=version)


@plant("clone_contiguous", "clone.preserves_strides", "clone() always returns contiguous strides")
def _(torch):
    methods("clone", lambda orig, self, *a, **k: orig(self, memory_format=torch.contiguous_format))


@plant("clone_adds_grad", "clone.result_in_graph", "a clone of a plain float tensor requires grad")
def _(torch):
    def clone(self, out):
        if not self.requires_grad and is_float(out):
            out.requires_grad_()
        return out

    results("clone", clone)


@plant("clone_doubles_grad", "clone.grad_flows_to_source", "clone's backward doubles the gradient")
def _(torch):
    own_backward("clone", lambda ctx, orig, x: orig(x), lambda ctx, g: g * 2, "DoubledClone")
