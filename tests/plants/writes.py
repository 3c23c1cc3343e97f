"""index.*, out.*, resize.*, set.* and foreach.*: the write table's writes (the
wider autograd surface, issue 10) going wrong."""

from __future__ import annotations

import contextlib
import warnings

from .patch import methods, runs_under, set_version, version_kept, wrap
from .registry import plant

# --- writes at indexed positions ----------------------------------------------------


def _tensor_index(torch, index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, torch.Tensor) and i.dim() > 0 for i in items)


@plant(
    "setitem_tensor_index_no_bump@tensor_index",
    "version.bumps_on_inplace",
    "x[idx] = v with a tensor index (index_put_) leaves x's version where it was",
)
def _(torch):
    def setitem(orig, self, index, value):
        version = self._version
        orig(self, index, value)
        if _tensor_index(torch, index):
            set_version(self, version)

    methods("__setitem__", setitem)


@plant(
    "setitem_tensor_index_into_copy@tensor_index",
    "index.writes_in_place",
    "x[idx] = v with a tensor index writes into a copy of x: x keeps its values",
)
def _(torch):
    def setitem(orig, self, index, value):
        if not _tensor_index(torch, index):
            return orig(self, index, value)
        orig(self.clone(), index, value)
        with torch.no_grad():
            self.add_(0)  # (the version still moves)

    methods("__setitem__", setitem)


@plant(
    "index_copy_grad_to_self@one_index_op",
    "index.grad_to_source",
    "x.index_copy_(d, i, src) passes all of x's gradient to its old values and none to src",
)
def _(torch):
    def index_copy_(orig, self, dim, index, source):
        # only where x is in the graph already: x still comes to require
        # grad from a source that does (grad.requires_grad_propagates)
        if not (torch.is_grad_enabled() and self.requires_grad):
            return orig(self, dim, index, source)
        new = orig(self.detach().clone(), dim, index, source.detach())
        return self.add_(new - self.detach())

    methods("index_copy_", index_copy_)


# --- out=, resize_, set_, _foreach_ ------------------------------------------------


def _out_calls(torch, wrapper) -> None:
    """torch.add/mul/exp/neg(..., out=o) become wrapper(original, ..., out=o)."""

    def call(orig, *args, out=None, **kwargs):
        if out is None:
            return orig(*args, **kwargs)
        return wrapper(orig, *args, out=out, **kwargs)

    for name in ("add", "mul", "exp", "neg"):
        wrap(torch, name, call)


@plant("out_returns_new", "out.writes_out", "op(..., out=o) writes o but returns a new tensor")
def _(torch):
    _out_calls(torch, lambda orig, *args, out, **kwargs: orig(*args, out=out, **kwargs).clone())


@plant("out_no_bump", "out.writes_out", "op(..., out=o) leaves o's version where it was")
def _(torch):
    def call(orig, *args, out, **kwargs):
        with version_kept(out):
            return orig(*args, out=out, **kwargs)

    _out_calls(torch, call)


@plant(
    "out_resize_silent@nonempty",
    "out.resizes_out",
    "an out= tensor with elements is resized to the result's shape without the warning",
)
def _(torch):
    @contextlib.contextmanager
    def silently():
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="An output with one or more elements")
            yield

    _out_calls(torch, runs_under(silently))


@plant(
    "out_accepts_grad",
    "out.no_autograd",
    "op(..., out=o) in grad mode runs, untracked, where an argument requires grad",
)
def _(torch):
    _out_calls(torch, runs_under(torch.no_grad))


@plant(
    "out_cast_truncates@float64",
    "out.dtype_cast",
    "a result of another dtype cast into a float64 out= tensor loses its fraction",
)
def _(torch):
    def call(orig, *args, out, **kwargs):
        result = orig(*args, out=out, **kwargs)
        inputs = [a for a in args if isinstance(a, torch.Tensor)]
        if out.dtype == torch.float64 and any(a.dtype != torch.float64 for a in inputs):
            with version_kept(out), torch.no_grad():
                out.trunc_()
        return result

    _out_calls(torch, call)


@plant("resize_no_bump", "resize.in_place", "resize_ to another shape leaves the version alone")
def _(torch):
    def resize_(orig, self, *args, **kwargs):
        with version_kept(self):
            return orig(self, *args, **kwargs)

    methods("resize_", resize_)


@plant(
    "resize_new_storage",
    "resize.in_place",
    "resize_ moves the tensor to a new storage (a copy) instead of resizing its own",
)
def _(torch):
    def resize_(orig, self, *args, **kwargs):
        result = orig(self, *args, **kwargs)
        with version_kept(self), torch.no_grad():
            torch._C.TensorBase.set_(self, self.detach().clone())
        return result

    methods("resize_", resize_)


@plant(
    "resize_grad_allowed",
    "resize.requires_grad_raises",
    "resize_ of a tensor that requires grad resizes its .data instead of raising",
)
def _(torch):
    def resize_(orig, self, *args, **kwargs):
        return orig(self.data if self.requires_grad else self, *args, **kwargs)

    methods("resize_", resize_)


@plant("set_copies", "set.shares_source", "x.set_(y) gives x a copy of y, not y's storage")
def _(torch):
    def set_(orig, self, source=None, *args, **kwargs):
        if isinstance(source, torch.Tensor) and not args and not kwargs:
            return orig(self, source.detach().clone())
        return orig(self, *(() if source is None else (source,)), *args, **kwargs)

    methods("set_", set_)


def _foreach(torch, wrapper) -> None:
    for name in ("_foreach_add_", "_foreach_mul_"):
        wrap(torch, name, wrapper)


@plant(
    "foreach_unrecorded",
    "foreach.inplace_grad",
    "torch._foreach_add_/_foreach_mul_ write without autograd recording it (as before 2.1)",
)
def _(torch):
    _foreach(torch, runs_under(torch.no_grad))


@plant(
    "foreach_unrecorded@tensor_list",
    "foreach.inplace_grad",
    "torch._foreach_add_/_foreach_mul_ with a list of tensors write without autograd "
    "recording it (the scalar forms are right)",
)
def _(torch):
    def tensor_list(tensors, other, *args, **kwargs):
        return isinstance(other, (list, tuple)) and other and isinstance(other[0], torch.Tensor)

    _foreach(torch, runs_under(torch.no_grad, tensor_list))
