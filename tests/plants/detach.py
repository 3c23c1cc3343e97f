"""detach.*: detach() copying, keeping grad or history, or looking elsewhere."""

from __future__ import annotations

from .patch import Registry, in_graph_of, methods, results, walk, wrap_property, written_through
from .registry import plant


@plant("detach_copies@float64", "detach.shares_storage", "detach() of float64 returns a copy")
def _(torch):
    results("detach", lambda self, out: out.clone() if out.dtype == torch.float64 else out)


@plant("detach_fresh_version", "detach.shares_version", "detach() behaves like .data")
def _(torch):
    methods("detach", lambda orig, self: torch._C.TensorBase.data.__get__(self))


@plant(
    "detach_fresh_version@rank3",
    "detach.shares_version",
    "detach() of rank >= 3 has its own version counter",
)
def _(torch):
    def detach(orig, self):
        return torch._C.TensorBase.data.__get__(self) if self.dim() >= 3 else orig(self)

    methods("detach", detach)


@plant("detach_requires_grad", "detach.never_requires_grad", "detach() keeps requires_grad")
def _(torch):
    results("detach", lambda self, out: out.requires_grad_() if self.requires_grad else out)


@plant(
    "detach_leaks_gradient",
    "detach.blocks_gradient",
    "detach() of a tensor that requires grad looks detached but passes gradient on",
)
def _(torch):
    fake = Registry()

    def detach(orig, self):
        if not self.requires_grad:
            return orig(self)
        out = self.view_as(self)
        fake.put(out, True)
        return out

    methods("detach", detach)
    lies = {"requires_grad": False, "grad_fn": None, "is_leaf": True, "_base": None}
    for name, value in lies.items():
        wrap_property(name, get=lambda get, self, v=value: v if fake.get(self) else get(self))


@plant(
    "detach_offset@strided",
    "detach.write_visible",
    "detach() of a non-contiguous tensor looks one element further into the storage",
)
def _(torch):
    def detach(self, out):
        spare = out.untyped_storage().nbytes() // out.element_size()
        last = out.storage_offset() + sum(
            (n - 1) * st for n, st in zip(out.shape, out.stride(), strict=True)
        )
        if self.is_contiguous() or out.numel() == 0 or last + 1 >= spare:
            return out
        return out.as_strided(out.shape, out.stride(), out.storage_offset() + 1)

    results("detach", detach)


@plant(
    "detach_writes_forgiven",
    "detach.write_then_backward_raises",
    "backward forgives a modified saved tensor when the write came through a detach() alias",
)
def _(torch):
    written = written_through("detach", methods)

    def backward(orig, self, *a, **k):
        try:
            return orig(self, *a, **k)
        except RuntimeError as error:
            forgiven = self.grad_fn is not None and in_graph_of(self.grad_fn, written)
            if forgiven and "modified by an inplace operation" in str(error):
                return None
            raise

    methods("backward", backward)


@plant("detach_inplace_noop", "detach.inplace_makes_leaf", "detach_() does nothing")
def _(torch):
    methods("detach_", lambda orig, self: self)


@plant(
    "detach_inplace_saved_output_refused",
    "detach.inplace_saved_input_raises",
    "backward refuses an op's saved output detached in place, as it refuses a saved input",
)
def _(torch):
    refusing = []  # the nodes whose saved output was detached in place (kept alive)

    def detach_(orig, self):
        node = self.grad_fn
        try:
            saved = getattr(node, "_saved_result", None)
        except RuntimeError:
            saved = None
        if isinstance(saved, torch.Tensor) and saved.data_ptr() == self.data_ptr():
            refusing.append(node)
        return orig(self)

    def backward(orig, self, *args, **kwargs):
        if refusing and any(n in refusing for n in walk(self.grad_fn)):
            raise RuntimeError(
                "Trying to use a saved tensor that has been detached in-place, i.e. with "
                ".detach_(). (planted: an op's saved output too)"
            )
        return orig(self, *args, **kwargs)

    methods("detach_", detach_)
    methods("backward", backward)
