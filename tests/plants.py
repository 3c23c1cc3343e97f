"""Planted violations: monkeypatches that make torch break one rule.

Each plant names the invariant it breaks. `install(name)` patches the torch
of the running process; `tests/site/sitecustomize.py` installs the plant named
in CONFORMANCE_PLANT at interpreter start, so a whole suite run (xdist workers
included) and a standalone repro script see the same broken torch.

Some plants break a rule for every input; the ones with an `@` in their name
break it only for some inputs (one dtype, one layout, rank >= 3, only views,
0-d), the kind of bug a suite that only tried float32 contiguous vectors
would miss.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Plant:
    name: str
    breaks: str  # the invariant ID the suite must report violated
    what: str
    install: Callable[[], None]


PLANTS: dict[str, Plant] = {}


def plant(name: str, breaks: str, what: str):
    def register(install: Callable[[], None]) -> Callable[[], None]:
        PLANTS[name] = Plant(name, breaks, what, install)
        return install

    return register


def install(name: str) -> None:
    (PLANTS.get(name) or PLANTS_PROBLEMS.get(name) or LACKING[name]).install()


# --- helpers -----------------------------------------------------------------


def _torch():
    import torch

    return torch


def _replace(name: str, make: Callable[[Callable], Callable]) -> None:
    """torch.Tensor.<name> = make(original)."""
    torch = _torch()
    original = getattr(torch.Tensor, name)
    patched = make(original)
    functools.update_wrapper(patched, original, updated=())
    setattr(torch.Tensor, name, patched)


def _replace_property(name: str, getter=None, setter=None) -> None:
    torch = _torch()
    descriptor = getattr(torch._C.TensorBase, name)
    get = getter(descriptor.__get__) if getter else descriptor.__get__
    put = setter(descriptor.__set__) if setter else descriptor.__set__
    setattr(torch.Tensor, name, property(lambda self: get(self), lambda self, v: put(self, v)))


def _set_version(tensor, value: int) -> None:
    torch = _torch()
    try:
        torch._C._autograd._unsafe_set_version_counter((tensor,), (value,))
    except TypeError:  # before 2.7 it took one tensor and one int
        torch._C._autograd._unsafe_set_version_counter(tensor, value)


def _is_float(t) -> bool:
    return t.is_floating_point() or t.is_complex()


def _overlapping(t) -> bool:
    return t.numel() > 0 and any(s == 0 and n > 1 for n, s in zip(t.shape, t.stride(), strict=True))


_INPLACE = ("add_", "sub_", "mul_", "fill_", "zero_", "neg_", "copy_", "clamp_", "abs_")


class _Registry:
    """Tensors remembered by identity (tensors compare elementwise, so no
    WeakKeyDictionary), forgotten when they die."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[weakref.ref, object]] = {}

    def put(self, key, value) -> None:
        k = id(key)
        self._items[k] = (weakref.ref(key, lambda _: self._items.pop(k, None)), value)

    def get(self, key):
        entry = self._items.get(id(key))
        if entry is None or entry[0]() is not key:
            return None
        return entry[1]

    def items(self):
        for ref, value in list(self._items.values()):
            key = ref()
            if key is not None:
                yield key, value


def _writes_through(alias_maker: str, replace: Callable) -> _Registry:
    """Patch `alias_maker` (detach, or the data property via `replace`) and the
    in-place ops so that the returned registry holds every tensor written
    through one of its aliases (or a view of one)."""
    torch = _torch()
    sources, written = _Registry(), _Registry()

    def make(orig):
        def alias(self):
            out = orig(self)
            sources.put(out, self)
            return out

        return alias

    replace(alias_maker, make)
    originals = {name: getattr(torch.Tensor, name) for name in _INPLACE}

    def noted(name):
        def op(self, *a, **k):
            out = originals[name](self, *a, **k)
            base = torch._C.TensorBase._base.__get__(self)
            source = sources.get(self) if base is None else sources.get(base)
            if source is not None:
                written.put(source, True)
            return out

        return op

    for name in _INPLACE:
        setattr(torch.Tensor, name, noted(name))
    return written


def _in_graph_of(root, tensors: _Registry) -> bool:
    """Whether one of `tensors` is in the graph behind `root` (a grad_fn): a
    leaf that an AccumulateGrad feeds, or a non-leaf by its grad_fn."""
    nodes, leaves, stack = set(), set(), [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in nodes:
            continue
        nodes.add(id(node))
        if hasattr(node, "variable"):
            leaves.add(id(node.variable))
        stack.extend(n for n, _ in node.next_functions)
    return any(id(t) in leaves or id(t.grad_fn) in nodes for t, _ in tensors.items())


# --- clone -------------------------------------------------------------------


@plant("clone_aliases", "clone.new_storage", "clone() returns a view of its source")
def _():
    _replace("clone", lambda orig: lambda self, *a, **k: self.view_as(self))


@plant("clone_aliases@bfloat16", "clone.new_storage", "clone() of a bfloat16 tensor is a view")
def _():
    torch = _torch()

    def make(orig):
        def clone(self, *a, **k):
            return self.view_as(self) if self.dtype == torch.bfloat16 else orig(self, *a, **k)

        return clone

    _replace("clone", make)


@plant("clone_scrambles@rank3", "clone.same_values", "clone() of rank >= 3 reverses dim 0")
def _():
    def make(orig):
        def clone(self, *a, **k):
            out = orig(self, *a, **k)
            return out.flip(0) if out.dim() >= 3 else out

        return clone

    _replace("clone", make)


@plant("clone_cow_leaks", "clone.write_isolated", "writes to a clone reach its source")
def _():
    torch = _torch()
    sources = _Registry()

    def make_clone(orig):
        def clone(self, *a, **k):
            out = orig(self, *a, **k)
            sources.put(out, weakref.ref(self))
            return out

        return clone

    _replace("clone", make_clone)
    originals = {name: getattr(torch.Tensor, name) for name in _INPLACE}

    def mirrored(name):
        def op(self, *a, **k):
            out = originals[name](self, *a, **k)
            source = sources.get(self)
            source = source() if source is not None else None
            if source is not None and source.shape == self.shape and not _overlapping(source):
                with torch.no_grad():
                    originals["copy_"](torch._C.TensorBase.data.__get__(source), self)
            return out

        return op

    for name in _INPLACE:
        setattr(torch.Tensor, name, mirrored(name))


@plant(
    "clone_shares_version",
    "clone.own_version",
    "in-place writes to a clone's source also move the clone's version",
)
def _():
    sources = _Registry()

    def make(orig):
        def clone(self, *a, **k):
            out = orig(self, *a, **k)
            sources.put(out, (weakref.ref(self), self._version))
            return out

        return clone

    _replace("clone", make)

    def getter(get):
        def version(self):
            entry = sources.get(self)
            source = entry[0]() if entry is not None else None
            if source is None:
                return get(self)
            return get(self) + get(source) - entry[1]

        return version

    _replace_property("_version", getter=getter)


@plant("clone_contiguous", "clone.preserves_strides", "clone() always returns contiguous strides")
def _():
    torch = _torch()
    _replace(
        "clone",
        lambda orig: lambda self, *a, **k: orig(self, memory_format=torch.contiguous_format),
    )


@plant("clone_adds_grad", "clone.result_in_graph", "a clone of a plain float tensor requires grad")
def _():
    def make(orig):
        def clone(self, *a, **k):
            out = orig(self, *a, **k)
            if not self.requires_grad and _is_float(out):
                out.requires_grad_()
            return out

        return clone

    _replace("clone", make)


@plant("clone_doubles_grad", "clone.grad_flows_to_source", "clone's backward doubles the gradient")
def _():
    torch = _torch()

    def make(orig):
        class DoubledClone(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return orig(x)

            @staticmethod
            def backward(ctx, g):
                return g * 2

        def clone(self, *a, **k):
            if self.requires_grad and torch.is_grad_enabled():
                return DoubledClone.apply(self)
            return orig(self, *a, **k)

        return clone

    _replace("clone", make)


# --- copy_ -------------------------------------------------------------------


def _last_element(t):
    return t[(-1,) * t.dim()] if t.dim() else t


@plant("copy_misses_last", "copy.values_copied", "copy_ leaves dst's last element as it was")
def _():
    torch = _torch()

    def make(orig):
        def copy_(self, src, *a, **k):
            if self.numel() < 2:
                return orig(self, src, *a, **k)
            with torch.no_grad():
                keep = _last_element(self).clone()
            out = orig(self, src, *a, **k)
            with torch.no_grad():
                orig(_last_element(torch._C.TensorBase.data.__get__(self)), keep)
            return out

        return copy_

    _replace("copy_", make)


@plant(
    "copy_misses_last@strided",
    "copy.values_copied",
    "copy_ into a non-contiguous dst leaves its last element as it was",
)
def _():
    torch = _torch()

    def make(orig):
        def copy_(self, src, *a, **k):
            if self.numel() < 2 or self.is_contiguous():
                return orig(self, src, *a, **k)
            with torch.no_grad():
                keep = _last_element(self).clone()
            out = orig(self, src, *a, **k)
            with torch.no_grad():
                orig(_last_element(torch._C.TensorBase.data.__get__(self)), keep)
            return out

        return copy_

    _replace("copy_", make)


@plant("copy_moves_storage", "copy.keeps_storage", "copy_ gives dst a new storage")
def _():
    torch = _torch()
    data = torch._C.TensorBase.data

    def make(orig):
        def copy_(self, src, *a, **k):
            out = orig(self, src, *a, **k)
            data.__set__(self, data.__get__(self).clone())
            return out

        return copy_

    _replace("copy_", make)


@plant("copy_untracked", "copy.result_in_graph", "copy_ into a plain dst is not recorded")
def _():
    torch = _torch()

    def make(orig):
        def copy_(self, src, *a, **k):
            if not self.requires_grad:
                with torch.no_grad():
                    return orig(self, src, *a, **k)
            return orig(self, src, *a, **k)

        return copy_

    _replace("copy_", make)


@plant("copy_doubles_grad", "copy.grad_flows_to_src", "copy_'s gradient to src is doubled")
def _():
    torch = _torch()

    def make(orig):
        def copy_(self, src, *a, **k):
            if (
                torch.is_grad_enabled()
                and src.requires_grad
                and self.is_floating_point()
                and src.is_floating_point()
            ):
                orig(self, src * 2, *a, **k)
                with torch.no_grad():
                    torch._C.TensorBase.data.__get__(self).div_(2)
                return self
            return orig(self, src, *a, **k)

        return copy_

    _replace("copy_", make)


@plant("copy_leaks_grad", "copy.overwritten_gets_no_grad", "overwritten values still get gradient")
def _():
    torch = _torch()

    def make(orig):
        def copy_(self, src, *a, **k):
            if not (self.requires_grad and torch.is_grad_enabled() and not self.is_leaf):
                return orig(self, src, *a, **k)
            old = self + 0
            orig(self, src, *a, **k)
            version = self._version
            finite = torch.where(old.isfinite(), old, torch.zeros_like(old))
            self.add_(finite - finite.detach())  # adds zero, and a path to the old values
            _set_version(self, version)
            return self

        return copy_

    _replace("copy_", make)


@plant("copy_into_leaf", "copy.into_grad_leaf_raises", "copy_ into a grad leaf is allowed")
def _():
    torch = _torch()

    def make(orig):
        def copy_(self, src, *a, **k):
            if self.is_leaf and self.requires_grad:
                with torch.no_grad():
                    return orig(self, src, *a, **k)
            return orig(self, src, *a, **k)

        return copy_

    _replace("copy_", make)


# --- detach ------------------------------------------------------------------


@plant("detach_copies@float64", "detach.shares_storage", "detach() of float64 returns a copy")
def _():
    torch = _torch()

    def make(orig):
        def detach(self):
            out = orig(self)
            return out.clone() if out.dtype == torch.float64 else out

        return detach

    _replace("detach", make)


@plant("detach_fresh_version", "detach.shares_version", "detach() behaves like .data")
def _():
    torch = _torch()
    _replace("detach", lambda orig: lambda self: torch._C.TensorBase.data.__get__(self))


@plant(
    "detach_fresh_version@rank3",
    "detach.shares_version",
    "detach() of rank >= 3 has its own version counter",
)
def _():
    torch = _torch()

    def make(orig):
        def detach(self):
            return torch._C.TensorBase.data.__get__(self) if self.dim() >= 3 else orig(self)

        return detach

    _replace("detach", make)


@plant("detach_requires_grad", "detach.never_requires_grad", "detach() keeps requires_grad")
def _():
    def make(orig):
        def detach(self):
            out = orig(self)
            if self.requires_grad:
                out.requires_grad_()
            return out

        return detach

    _replace("detach", make)


@plant(
    "detach_leaks_gradient",
    "detach.blocks_gradient",
    "detach() of a tensor that requires grad looks detached but passes gradient on",
)
def _():
    fake = _Registry()

    def make(orig):
        def detach(self):
            if not self.requires_grad:
                return orig(self)
            out = self.view_as(self)
            fake.put(out, True)
            return out

        return detach

    _replace("detach", make)

    def lie(value):
        def getter(get):
            return lambda self: value if fake.get(self) is not None else get(self)

        return getter

    _replace_property("requires_grad", getter=lie(False))
    _replace_property("grad_fn", getter=lie(None))
    _replace_property("is_leaf", getter=lie(True))
    _replace_property("_base", getter=lie(None))


@plant(
    "detach_offset@strided",
    "detach.write_visible",
    "detach() of a non-contiguous tensor looks one element further into the storage",
)
def _():
    def make(orig):
        def detach(self):
            out = orig(self)
            spare = out.untyped_storage().nbytes() // out.element_size()
            last = out.storage_offset() + sum(
                (n - 1) * st for n, st in zip(out.shape, out.stride(), strict=True)
            )
            if self.is_contiguous() or out.numel() == 0 or last + 1 >= spare:
                return out
            return out.as_strided(out.shape, out.stride(), out.storage_offset() + 1)

        return detach

    _replace("detach", make)


@plant(
    "detach_writes_forgiven",
    "detach.write_then_backward_raises",
    "backward forgives a modified saved tensor when the write came through a detach() alias",
)
def _():
    written = _writes_through("detach", _replace)

    def make(orig):
        def backward(self, *a, **k):
            try:
                return orig(self, *a, **k)
            except RuntimeError as error:
                forgiven = self.grad_fn is not None and _in_graph_of(self.grad_fn, written)
                if forgiven and "modified by an inplace operation" in str(error):
                    return None
                raise

        return backward

    _replace("backward", make)


@plant("detach_inplace_noop", "detach.inplace_makes_leaf", "detach_() does nothing")
def _():
    _replace("detach_", lambda orig: lambda self: self)


# --- .data -------------------------------------------------------------------


@plant("data_copies@0d", "data.shares_storage", ".data of a 0-d tensor is a copy")
def _():
    _replace_property(
        "data", getter=lambda get: lambda self: get(self).clone() if self.dim() == 0 else get(self)
    )


@plant("data_shares_version", "data.own_version", ".data shares the version counter")
def _():
    _replace_property("data", getter=lambda get: lambda self: self.detach())


@plant("data_requires_grad", "data.never_requires_grad", ".data keeps requires_grad")
def _():
    def getter(get):
        def data(self):
            out = get(self)
            if self.requires_grad:
                out.requires_grad_()
            return out

        return data

    _replace_property("data", getter=getter)


@plant(
    "data_writes_raise",
    "data.write_is_silent",
    "backward raises 'modified by an inplace operation' when a tensor in its graph "
    "was written through .data",
)
def _():
    written = _writes_through("data", lambda name, make: _replace_property(name, getter=make))

    def make(orig):
        def backward(self, *a, **k):
            if self.grad_fn is not None and _in_graph_of(self.grad_fn, written):
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been "
                    "modified by an inplace operation"
                )
            return orig(self, *a, **k)

        return backward

    _replace("backward", make)


@plant(
    "data_write_ignored",
    "data.write_changes_gradient",
    "exp, tanh and sigmoid compute their gradient from a snapshot of their result",
)
def _():
    torch = _torch()

    def snapshot(name: str, grad: Callable) -> None:
        def make(orig):
            class Snapshot(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    out = orig(x)
                    ctx.save_for_backward(out)  # checked for in-place writes, as torch does
                    ctx.snapshot = out.detach().clone()
                    return out

                @staticmethod
                def backward(ctx, g):
                    _ = ctx.saved_tensors
                    return grad(g, ctx.snapshot)

            def op(self):
                if self.requires_grad and torch.is_grad_enabled():
                    return Snapshot.apply(self)
                return orig(self)

            return op

        _replace(name, make)

    snapshot("exp", lambda g, r: g * r.conj())
    snapshot("tanh", lambda g, r: g * (1 - r * r).conj())
    snapshot("sigmoid", lambda g, r: g * (r * (1 - r)).conj())


# --- gradients -----------------------------------------------------------------


def _leaves(root) -> list:
    """The leaf tensors a backward from `root` reaches."""
    found, seen, stack = [], set(), [root.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if hasattr(node, "variable"):
            found.append(node.variable)
        stack.extend(n for n, _ in node.next_functions)
    return found


@plant("grad_overwrites", "grad.accumulates_across_backward", "backward overwrites .grad")
def _():
    def make(orig):
        def backward(self, *a, **k):
            for leaf in _leaves(self):
                leaf.grad = None
            return orig(self, *a, **k)

        return backward

    _replace("backward", make)


@plant(
    "grad_is_the_gradient_argument",
    "grad.gradient_argument_kept",
    "y.backward(g) of a leaf y makes g itself y.grad (pytorch#34082 through no view at all)",
)
def _():
    def make(orig):
        def backward(self, *a, **k):
            gradient = a[0] if a else k.get("gradient")
            fresh = self.is_leaf and self.requires_grad and self.grad is None
            orig(self, *a, **k)
            if fresh and gradient is not None and gradient.shape == self.shape:
                self.grad = gradient.detach()  # g's own memory and version counter

        return backward

    _replace("backward", make)


@plant("grad_one_path", "grad.accumulates_across_paths", "a leaf gets one path's gradient")
def _():
    torch = _torch()

    def make(orig):
        def backward(self, *a, **k):
            # every node past the first that feeds a leaf's AccumulateGrad
            # passes it zeros instead
            fed: set[int] = set()
            seen, stack = set(), [self.grad_fn]
            while stack:
                node = stack.pop()
                if node is None or id(node) in seen:
                    continue
                seen.add(id(node))
                for index, (child, _) in enumerate(node.next_functions):
                    if child is not None and hasattr(child, "variable"):
                        if id(child) in fed:
                            node.register_hook(_zero_input(index, torch))
                        fed.add(id(child))
                    stack.append(child)
            return orig(self, *a, **k)

        return backward

    _replace("backward", make)


def _zero_input(index: int, torch):
    def hook(grad_inputs, grad_outputs):
        grads = list(grad_inputs)
        if grads[index] is not None:
            grads[index] = torch.zeros_like(grads[index])
        return tuple(grads)

    return hook


@plant("grad_upcast@half", "grad.matches_leaf", ".grad of a float16 leaf is float32")
def _():
    torch = _torch()

    def getter(get):
        def grad(self):
            g = get(self)
            return g.float() if g is not None and g.dtype == torch.float16 else g

        return grad

    _replace_property("grad", getter=getter)


@plant("grad_on_nonleaf", "grad.leaves_only", "a non-leaf's .grad reads as zeros")
def _():
    torch = _torch()

    def getter(get):
        def grad(self):
            g = get(self)
            if g is None and not self.is_leaf:
                return torch.zeros_like(self)
            return g

        return grad

    _replace_property("grad", getter=getter)


@plant("retain_grad_noop", "grad.retain_grad", "retain_grad() does nothing")
def _():
    _replace("retain_grad", lambda orig: lambda self: None)


@plant("backward_retains", "grad.backward_twice_raises", "backward always retains the graph")
def _():
    def make(orig):
        def backward(self, gradient=None, retain_graph=None, *a, **k):
            return orig(self, gradient, True, *a, **k)

        return backward

    _replace("backward", make)


@plant("backward_implicit_ones", "grad.nonscalar_needs_gradient", "backward() fills in ones")
def _():
    torch = _torch()

    def make(orig):
        def backward(self, gradient=None, *a, **k):
            if gradient is None and (self.numel() != 1 or self.is_complex()):
                gradient = torch.ones_like(self)
            return orig(self, gradient, *a, **k)

        return backward

    _replace("backward", make)


@plant("backward_without_graph_ok", "grad.requires_graph", "backward() of a plain tensor passes")
def _():
    def make(orig):
        def backward(self, *a, **k):
            if not self.requires_grad:
                return None
            return orig(self, *a, **k)

        return backward

    _replace("backward", make)


# --- version counters -----------------------------------------------------------


def _keep_version(name: str, when: Callable[[object], bool]) -> None:
    """torch.Tensor.<name> no longer moves the version counter when `when(self)`."""

    def make(orig):
        def op(self, *a, **k):
            if not when(self):
                return orig(self, *a, **k)
            before = self._version
            out = orig(self, *a, **k)
            _set_version(self, before)
            return out

        return op

    _replace(name, make)


@plant("mul_no_bump", "version.bumps_on_inplace", "mul_ does not bump the version")
def _():
    _keep_version("mul_", lambda t: True)


@plant(
    "inplace_no_bump@complex",
    "version.bumps_on_inplace",
    "in-place ops on complex tensors do not bump the version",
)
def _():
    for name in _INPLACE:
        _keep_version(name, lambda t: t.is_complex())


@plant("sum_bumps", "version.unchanged_out_of_place", "x.sum() bumps x's version")
def _():
    def make(orig):
        def total(self, *a, **k):
            out = orig(self, *a, **k)
            _set_version(self, self._version + 1)
            return out

        return total

    _replace("sum", make)


def _saving_copy_of_result(name: str, grad: Callable) -> None:
    torch = _torch()

    def make(orig):
        class SavesCopy(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = orig(x)
                ctx.save_for_backward(out.clone())
                return out

            @staticmethod
            def backward(ctx, g):
                (out,) = ctx.saved_tensors
                return grad(g, out)

        def op(self):
            if self.requires_grad and torch.is_grad_enabled():
                return SavesCopy.apply(self)
            return orig(self)

        return op

    _replace(name, make)


@plant(
    "saves_copies",
    "version.saved_modified_raises",
    "exp, tanh and sigmoid save a private copy of their result",
)
def _():
    _saving_copy_of_result("exp", lambda g, r: g * r.conj())
    _saving_copy_of_result("tanh", lambda g, r: g * (1 - r * r).conj())
    _saving_copy_of_result("sigmoid", lambda g, r: g * (r * (1 - r)).conj())


@plant(
    "add_checks_inputs",
    "version.unsaved_modified_ok",
    "x + y, x - y and -x check their inputs' versions in backward, as if they saved them",
)
def _():
    torch = _torch()
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

    def binary(orig, sign):
        def op(self, other):
            if (
                torch.is_grad_enabled()
                and isinstance(other, torch.Tensor)
                and (self.requires_grad or other.requires_grad)
                and self.dtype == other.dtype
                and _is_float(self)
            ):
                return CheckedAdd.apply(self, other, sign)
            return orig(self, other)

        return op

    for name, sign in (("__add__", 1), ("add", 1), ("__sub__", -1), ("sub", -1)):
        _replace(name, lambda orig, sign=sign: binary(orig, sign))

    def neg(orig):
        def op(self):
            if torch.is_grad_enabled() and self.requires_grad:
                return CheckedNeg.apply(self)
            return orig(self)

        return op

    _replace("__neg__", neg)
    _replace("neg", neg)


def _sum_to(g, like):
    while g.dim() > like.dim():
        g = g.sum(0)
    for d, n in enumerate(like.shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(d, keepdim=True)
    return g


@plant("no_grad_no_bump", "version.no_grad_bumps", "in-place ops under no_grad do not bump")
def _():
    torch = _torch()
    for name in _INPLACE:
        _keep_version(name, lambda t: not torch.is_grad_enabled())


# --- views ---------------------------------------------------------------------


@plant(
    "transpose_own_version",
    "view.shares_storage_and_version",
    "transpose(), t() and permute() views keep a version counter of their own",
)
def _():
    torch = _torch()
    own = _Registry()  # view -> the versions it reports, bumped by its own writes only

    for name in ("transpose", "t", "permute"):

        def make(orig):
            def view(self, *a, **k):
                out = orig(self, *a, **k)
                own.put(out, [self._version])
                return out

            return view

        _replace(name, make)
    originals = {name: getattr(torch.Tensor, name) for name in _INPLACE}

    def counted(name):
        def op(self, *a, **k):
            out = originals[name](self, *a, **k)
            mine = own.get(self)
            if mine is not None:
                mine[0] += 1
            return out

        return op

    for name in _INPLACE:
        setattr(torch.Tensor, name, counted(name))

    def getter(get):
        def version(self):
            mine = own.get(self)
            return mine[0] if mine is not None else get(self)

        return version

    _replace_property("_version", getter=getter)


@plant("select_off_by_one", "view.write_visible", "select(d, i) views element i + 1")
def _():
    def make(orig):
        def select(self, dim, index):
            size = self.shape[dim]
            return orig(self, dim, (index + 1) % size if size > 1 else index)

        return select

    _replace("select", make)


@plant("unsqueeze_base", "view.base_is_root", "_base of x.unsqueeze(d) is x")
def _():
    parents = _Registry()

    def make(orig):
        def unsqueeze(self, *a, **k):
            out = orig(self, *a, **k)
            parents.put(out, weakref.ref(self))
            return out

        return unsqueeze

    _replace("unsqueeze", make)

    def getter(get):
        def base(self):
            parent = parents.get(self)
            parent = parent() if parent is not None else None
            return parent if parent is not None else get(self)

        return base

    _replace_property("_base", getter=getter)


@plant(
    "view_inplace_untracked@views",
    "view.inplace_updates_base_grad",
    "in-place ops on a view that requires grad are not recorded",
)
def _():
    torch = _torch()
    for name in ("mul_", "add_", "neg_"):

        def make(orig):
            def op(self, *a, **k):
                base = self._base
                if (
                    base is not None
                    and base.grad_fn is not None  # a view of a non-leaf, made in grad mode
                    and self.grad_fn is not None
                    and torch.is_grad_enabled()
                ):
                    version = self._version
                    orig(torch._C.TensorBase.data.__get__(self), *a, **k)
                    _set_version(self, version + 1)
                    return self
                return orig(self, *a, **k)

            return op

        _replace(name, make)


@plant(
    "overlap_allowed",
    "view.overlapping_write_raises",
    "add_, mul_ and copy_ write to expanded memory without complaint",
)
def _():
    torch = _torch()
    for name in ("add_", "mul_", "copy_", "neg_", "sub_"):

        def make(orig):
            def op(self, *a, **k):
                if not _overlapping(self):
                    return orig(self, *a, **k)
                shape = [1 if s == 0 else n for n, s in zip(self.shape, self.stride(), strict=True)]
                unique = self.as_strided(shape, self.stride(), self.storage_offset())
                args = [x.reshape(-1)[0] if isinstance(x, torch.Tensor) else x for x in a]
                orig(unique, *args, **k)
                return self

            return op

        _replace(name, make)


# --- leaves and grad mode --------------------------------------------------------


@plant("leaf_inplace_allowed", "leaf.inplace_raises", "in-place on a grad leaf is allowed")
def _():
    torch = _torch()
    for name in _INPLACE:

        def make(orig):
            def op(self, *a, **k):
                # (a view is never a leaf here; asking a view made under
                # no_grad whether it is one can itself raise)
                leaf = self._base is None and self.is_leaf
                if torch.is_grad_enabled() and self.requires_grad and leaf:
                    with torch.no_grad():
                        return orig(self, *a, **k)
                return orig(self, *a, **k)

            return op

        _replace(name, make)


@plant(
    "leaf_view_inplace_allowed@views",
    "leaf.view_inplace_raises",
    "in-place on a view of a grad leaf is allowed",
)
def _():
    torch = _torch()
    for name in _INPLACE:

        def make(orig):
            def op(self, *a, **k):
                base = self._base
                if base is not None and base.is_leaf and base.requires_grad:
                    with torch.no_grad():
                        return orig(self, *a, **k)
                return orig(self, *a, **k)

            return op

        _replace(name, make)


@plant(
    "no_grad_leaf_refused",
    "nograd.inplace_on_leaf_allowed",
    "in-place on a grad leaf raises even under no_grad",
)
def _():
    torch = _torch()
    for name in _INPLACE:

        def make(orig):
            def op(self, *a, **k):
                if self.is_leaf and self.requires_grad and not torch.is_grad_enabled():
                    raise RuntimeError(
                        "a leaf Variable that requires grad is being used in an in-place operation."
                    )
                return orig(self, *a, **k)

            return op

        _replace(name, make)


@plant(
    "no_grad_result_requires_grad",
    "nograd.results_dont_require_grad",
    "x.exp() and x * c under no_grad require grad when x does",
)
def _():
    torch = _torch()
    for name in ("exp", "__mul__"):

        def make(orig):
            def op(self, *a, **k):
                out = orig(self, *a, **k)
                if not torch.is_grad_enabled() and self.requires_grad and _is_float(out):
                    out.requires_grad_()
                return out

            return op

        _replace(name, make)


@plant(
    "no_grad_view_writable",
    "nograd.view_inplace_raises",
    "a view made under no_grad can be written with grad on",
)
def _():
    torch = _torch()
    for name in _INPLACE:

        def make(orig):
            def op(self, *a, **k):
                try:  # (only no_grad's views: not those made under inference_mode)
                    return orig(self, *a, **k)
                except RuntimeError as error:
                    if "created in no_grad mode" not in str(error):
                        raise
                with torch.no_grad():
                    return orig(self, *a, **k)

            return op

        _replace(name, make)


# --- dtypes and inference mode -----------------------------------------------------


@plant(
    "int_requires_grad",
    "dtype.only_float_complex_require_grad",
    "requires_grad_() on an integer tensor is silently ignored",
)
def _():
    def make(orig):
        def requires_grad_(self, requires_grad=True):
            if not _is_float(self):
                return self
            return orig(self, requires_grad)

        return requires_grad_

    _replace("requires_grad_", make)


@plant(
    "half_cannot_require_grad@float16",
    "dtype.only_float_complex_require_grad",
    "requires_grad_() on float16 raises",
)
def _():
    torch = _torch()

    def make(orig):
        def requires_grad_(self, requires_grad=True):
            if self.dtype == torch.float16 and requires_grad:
                raise RuntimeError("only Tensors of floating point dtype can require gradients")
            return orig(self, requires_grad)

        return requires_grad_

    _replace("requires_grad_", make)


@plant("inference_version", "inference.no_version_counter", "inference tensors report version 0")
def _():
    def getter(get):
        def version(self):
            return 0 if self.is_inference() else get(self)

        return version

    _replace_property("_version", getter=getter)


@plant(
    "inference_saved",
    "inference.not_saved_for_backward",
    "x * t clones an inference t so it can be saved",
)
def _():
    torch = _torch()
    for name in ("__mul__", "__rmul__", "__truediv__", "mul", "div"):

        def make(orig):
            def op(self, other, *a, **k):
                if isinstance(other, torch.Tensor) and other.is_inference():
                    other = other.clone()
                if self.is_inference() and isinstance(other, torch.Tensor) and other.requires_grad:
                    self = self.clone()
                return orig(self, other, *a, **k)

            return op

        _replace(name, make)


@plant(
    "copy_into_int_records",
    "dtype.inplace_keeps_int_out_of_graph",
    "copy_ of a 0-d source that requires grad into an integer tensor goes through fill_",
)
def _():
    def make(orig):
        def copy_(self, src, *a, **k):
            if src.dim() == 0 and src.requires_grad and not _is_float(self):
                return self.fill_(src)
            return orig(self, src, *a, **k)

        return copy_

    _replace("copy_", make)


@plant(
    "enable_grad_no_record",
    "nograd.enable_grad_restores",
    "torch.enable_grad() inside no_grad leaves grad mode off: nothing is recorded",
)
def _():
    torch = _torch()

    def __enter__(self):
        self.prev = torch.is_grad_enabled()

    torch.enable_grad.__enter__ = __enter__


@plant(
    "enable_grad_exit_leaks",
    "nograd.enable_grad_restores",
    "leaving torch.enable_grad() inside no_grad leaves grad mode on: the rest of the no_grad "
    "block records",
)
def _():
    torch = _torch()

    def __exit__(self, *exc):
        torch._C._set_grad_enabled(True)

    torch.enable_grad.__exit__ = __exit__


@plant(
    "set_grad_enabled_fn_ignored",
    "nograd.set_grad_enabled",
    "torch.set_grad_enabled(mode) called as a function does nothing; only the context "
    "manager (and the decorator) set grad mode",
)
def _():
    torch = _torch()
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


@plant(
    "inference_inplace_allowed",
    "inference.inplace_outside_raises",
    "in-place ops on an inference tensor outside inference_mode run as if inside it",
)
def _():
    torch = _torch()
    for name in _INPLACE:

        def make(orig):
            def op(self, *a, **k):
                if self.is_inference() and not torch.is_inference_mode_enabled():
                    with torch.inference_mode():
                        return orig(self, *a, **k)
                return orig(self, *a, **k)

            return op

        _replace(name, make)


@plant(
    "inference_view_writable@views",
    "inference.view_inplace_raises",
    "a view of a normal tensor made under inference_mode can be written in place with grad on "
    "(the write is not recorded)",
)
def _():
    torch = _torch()
    for name in _INPLACE:

        def make(orig):
            def op(self, *a, **k):
                try:
                    return orig(self, *a, **k)
                except RuntimeError as error:
                    if "created in inference mode and is being modified" not in str(error):
                        raise
                with torch.no_grad():
                    return orig(self, *a, **k)

            return op

        _replace(name, make)


# --- ops in general ------------------------------------------------------------------


@plant("exp_doubles@bfloat16", "ops.values", "x.exp() of a bfloat16 tensor is 2 * exp(x)")
def _():
    torch = _torch()

    def make(orig):
        def exp(self):
            out = orig(self)
            return out + out if self.dtype == torch.bfloat16 else out

        return exp

    _replace("exp", make)


@plant("add_inplace_returns_copy", "ops.inplace_writes_self", "x.add_(y) returns a copy of x")
def _():
    def make(orig):
        def add_(self, *a, **k):
            return orig(self, *a, **k).clone()

        return add_

    _replace("add_", make)


@plant("neg_writes_input", "ops.out_of_place_new_tensor", "x.neg() negates x in place")
def _():
    def make(orig):
        def neg(self):
            return self.neg_() if not self.requires_grad else orig(self)

        return neg

    _replace("neg", make)


@plant(
    "add_forgives_shapes", "ops.shape_errors", "x.add(y) of shapes that do not broadcast gives x"
)
def _():
    def make(orig):
        def add(self, other, *a, **k):
            try:
                return orig(self, other, *a, **k)
            except RuntimeError as error:
                if "must match the size" in str(error):
                    return self.clone()
                raise

        return add

    for name in ("add", "__add__"):
        _replace(name, make)


@plant("sin_drops_graph", "grad.requires_grad_propagates", "x.sin() of a grad tensor is detached")
def _():
    def make(orig):
        def sin(self):
            out = orig(self)
            return out.detach() if self.requires_grad else out

        return sin

    _replace("sin", make)


@plant("sigmoid_grad_wrong", "grad.formula", "sigmoid's backward forgets the (1 - r) factor")
def _():
    torch = _torch()

    def make(orig):
        class Sigmoid(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = orig(x)
                ctx.save_for_backward(out)
                return out

            @staticmethod
            def backward(ctx, g):
                (r,) = ctx.saved_tensors
                return g * r.conj()

        def sigmoid(self):
            if self.requires_grad and torch.is_grad_enabled():
                return Sigmoid.apply(self)
            return orig(self)

        return sigmoid

    _replace("sigmoid", make)


@plant(
    "requires_grad_off_ignored",
    "grad.requires_grad_flag_on_leaves",
    "requires_grad_(False) on a non-leaf is silently ignored",
)
def _():
    def make(orig):
        def requires_grad_(self, requires_grad=True):
            if not requires_grad and not self.is_leaf:
                return self
            return orig(self, requires_grad)

        return requires_grad_

    _replace("requires_grad_", make)


# --- the wider autograd surface (issue 10): view ops ---------------------------------


# The in-place methods the property tests and the differential call (the
# oracle's in-place rows, the write table's, and setitem).
_WRITE_METHODS = ("__setitem__", "abs_", "add_", "clamp_", "copy_", "div_", "exp_", "fill_")
_WRITE_METHODS += ("index_add_", "index_copy_", "index_put_", "masked_fill_", "mul_", "neg_")
_WRITE_METHODS += ("relu_", "scatter_", "sigmoid_", "sin_", "sub_", "tanh_", "zero_")


def _creation_meta(t):
    """The view's CreationMeta, or None where t is no differentiable view."""
    try:
        return _torch()._C._autograd._get_creation_meta(t)
    except RuntimeError:
        return None


def _set_creation_meta(t, meta) -> None:
    _torch()._C._autograd._set_creation_meta(t, meta)


def _after_writes(hook: Callable[[object], None]) -> None:
    """Run hook(written tensor) after each of the write methods."""

    def make(orig):
        def write(self, *a, **k):
            out = orig(self, *a, **k)
            hook(self)
            return out

        return write

    for name in _WRITE_METHODS:
        _replace(name, make)


@plant(
    "unbind_outputs_ordinary@multi_output",
    "view.multi_output_base_written_raises",
    "an output of x.unbind(d) whose memory was written becomes an ordinary view: its grad_fn"
    " is regenerated instead of refused (in-place ops on it are still refused before that)",
)
def _():
    outputs = _Registry()  # unbind's outputs themselves -> their version when made
    metas = _torch()._C._autograd.CreationMeta
    ordinary = metas.DEFAULT

    def make(orig):
        # select()s marked as multi-output views: torch regenerates the
        # grad_fn of a view only for its first output (output_nr 0)
        def unbind(self, dim=0):
            # an inference tensor has no version counter to watch
            if self.dim() == 0 or self.is_inference():
                return orig(self, dim)
            pieces = tuple(self.select(dim, i) for i in range(self.shape[dim]))
            for piece in pieces:
                if _creation_meta(piece) == ordinary:
                    _set_creation_meta(piece, metas.MULTI_OUTPUT_NODE)
                outputs.put(piece, piece._version)
            return pieces

        return unbind

    _replace("unbind", make)

    def demote_stale(written) -> None:
        for piece, version in outputs.items():
            if piece._version != version and _creation_meta(piece) not in (None, ordinary):
                _set_creation_meta(piece, ordinary)

    _after_writes(demote_stale)


@plant(
    "split_outputs_writable@one_view_op",
    "view.multi_output_inplace_raises",
    "in-place ops in grad mode on an output of x.split(n, d) itself are allowed and rebased like"
    " an ordinary view's (chunk, unbind and views of the outputs keep the rule)",
)
def _():
    torch = _torch()
    outputs = _Registry()
    ordinary = torch._C._autograd.CreationMeta.DEFAULT

    def make_split(orig):
        def split(self, *a, **k):
            pieces = orig(self, *a, **k)
            for piece in pieces:
                outputs.put(piece, True)
            return pieces

        return split

    _replace("split", make_split)

    def writable(orig):
        def write(self, *a, **k):
            meta = _creation_meta(self) if torch.is_grad_enabled() and outputs.get(self) else None
            if meta != torch._C._autograd.CreationMeta.MULTI_OUTPUT_NODE:  # (not a no_grad one)
                return orig(self, *a, **k)
            _set_creation_meta(self, ordinary)
            try:
                return orig(self, *a, **k)
            finally:  # a later write to the base still makes it stale, as torch's are
                _set_creation_meta(self, meta)

        return write

    for name in _WRITE_METHODS:
        _replace(name, writable)


@plant(
    "multi_output_grad_fn_regenerated",
    "view.multi_output_base_written_raises",
    "a stale output of unbind/split/chunk reads grad_fn None instead of raising",
)
def _():
    def getter(get):
        def grad_fn(self):
            try:
                return get(self)
            except RuntimeError as error:
                if "returns multiple views" in str(error):
                    return None
                raise

        return grad_fn

    _replace_property("grad_fn", getter=getter)


@plant(
    "unfold_copies@one_view_op",
    "view.shares_storage_and_version",
    "x.unfold(d, size, step) returns a copy on new memory",
)
def _():
    def make(orig):
        def unfold(self, *a, **k):
            return orig(self, *a, **k).clone()

        return unfold

    _replace("unfold", make)


@plant(
    "conj_copies",
    "view.conj_lazy",
    "x.conj() returns the conjugate on new memory (no conjugate bit, no aliasing)",
)
def _():
    def make(orig):
        def conj(self):
            return orig(self).clone()

        return conj

    _replace("conj", make)


@plant(
    "resolve_conj_aliases",
    "view.conj_resolve",
    "x.resolve_conj() hands back x itself, bit and memory, even when x has the conjugate bit",
)
def _():
    def make(orig):
        def resolve_conj(self):
            return self

        return resolve_conj

    _replace("resolve_conj", make)


@plant(
    "mH_copies@complex",
    "view.conj_lazy",
    "x.mH of a complex tensor is the conjugate transpose on new memory (real ones: a view)",
)
def _():
    torch = _torch()
    original = torch.Tensor.mH

    def mH(self):  # noqa: N802 - torch's name
        t = original.__get__(self)
        return t.clone() if self.is_complex() else t

    torch.Tensor.mH = property(mH)


@plant(
    "reinterpret_own_version@view_as_real",
    "view.complex_reinterprets",
    "torch.view_as_real(x) reads x's memory but counts versions on its own (x.real, x.imag "
    "and view_as_complex keep x's counter)",
)
def _():
    torch = _torch()
    original = torch.view_as_real

    class OwnVersion(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return original(x.data)  # .data: the same memory, a counter of its own

        @staticmethod
        def backward(ctx, g):
            return torch.view_as_complex(g.contiguous())

    def view_as_real(x):
        if x.is_conj():
            return original(x)  # (it raises)
        return OwnVersion.apply(x)

    torch.view_as_real = view_as_real


@plant(
    "imag_of_real_zeros",
    "view.complex_reinterprets",
    "x.imag of a real tensor is a tensor of zeros instead of an error",
)
def _():
    torch = _torch()
    original = torch.Tensor.imag

    def imag(self):
        return original.__get__(self) if self.is_complex() else torch.zeros_like(self)

    torch.Tensor.imag = property(imag, original.__set__)


def _dtype_view(make_result) -> None:
    """Tensor.view, with x.view(dtype)'s result replaced by make_result(x, result, dtype)."""
    torch = _torch()

    def make(orig):
        def view(self, *args, **kwargs):
            out = orig(self, *args, **kwargs)
            dtype = args[0] if len(args) == 1 else kwargs.get("dtype")
            return make_result(self, out, dtype) if isinstance(dtype, torch.dtype) else out

        return view

    _replace("view", make)


@plant(
    "view_dtype_copies@itemsize",
    "view.dtype_reinterprets",
    "x.view(dtype) is a copy on new memory when dtype's element size differs from x's "
    "(of the same size: an alias, as it should be)",
)
def _():
    _dtype_view(lambda x, out, dtype: out.clone() if dtype.itemsize != x.itemsize else out)


@plant(
    "view_dtype_own_version",
    "view.dtype_reinterprets",
    "x.view(dtype) shares x's memory but has a version counter of its own (as .data does)",
)
def _():
    _dtype_view(lambda x, out, dtype: out.data)


# --- the wider autograd surface (issue 10): writes at indexed positions -----------


def _tensor_index(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, _torch().Tensor) and i.dim() > 0 for i in items)


@plant(
    "setitem_tensor_index_no_bump@tensor_index",
    "version.bumps_on_inplace",
    "x[idx] = v with a tensor index (index_put_) leaves x's version where it was",
)
def _():
    def make(orig):
        def setitem(self, index, value):
            version = self._version
            orig(self, index, value)
            if _tensor_index(index):
                _set_version(self, version)

        return setitem

    _replace("__setitem__", make)


@plant(
    "setitem_tensor_index_into_copy@tensor_index",
    "index.writes_in_place",
    "x[idx] = v with a tensor index writes into a copy of x: x keeps its values",
)
def _():
    def make(orig):
        def setitem(self, index, value):
            if _tensor_index(index):
                orig(self.clone(), index, value)
                with _torch().no_grad():
                    self.add_(0)  # (the version still moves)
                return
            orig(self, index, value)

        return setitem

    _replace("__setitem__", make)


@plant(
    "index_copy_grad_to_self@one_index_op",
    "index.grad_to_source",
    "x.index_copy_(d, i, src) passes all of x's gradient to its old values and none to src",
)
def _():
    torch = _torch()

    def make(orig):
        def index_copy_(self, dim, index, source):
            # only where x is in the graph already: x still comes to require
            # grad from a source that does (grad.requires_grad_propagates)
            if not (torch.is_grad_enabled() and self.requires_grad):
                return orig(self, dim, index, source)
            new = orig(self.detach().clone(), dim, index, source.detach())
            return self.add_(new - self.detach())

        return index_copy_

    _replace("index_copy_", make)


# --- the wider autograd surface (issue 10): out=, resize_, set_, _foreach_ ------------

_OUT_FUNCTIONS = ("add", "mul", "exp", "neg")


def _replace_out(make: Callable[[Callable], Callable]) -> None:
    """torch.add/mul/exp/neg = make(original), for calls with out= only."""
    torch = _torch()
    for name in _OUT_FUNCTIONS:
        original = getattr(torch, name)
        wrong = make(original)

        def call(*args, out=None, _original=original, _wrong=wrong, **kwargs):
            if out is None:
                return _original(*args, **kwargs)
            return _wrong(*args, out=out, **kwargs)

        functools.update_wrapper(call, original, updated=())
        setattr(torch, name, call)


@plant("out_returns_new", "out.writes_out", "op(..., out=o) writes o but returns a new tensor")
def _():
    def make(original):
        def call(*args, out, **kwargs):
            return original(*args, out=out, **kwargs).clone()

        return call

    _replace_out(make)


@plant("out_no_bump", "out.writes_out", "op(..., out=o) leaves o's version where it was")
def _():
    def make(original):
        def call(*args, out, **kwargs):
            before = out._version
            result = original(*args, out=out, **kwargs)
            _set_version(out, before)
            return result

        return call

    _replace_out(make)


@plant(
    "out_resize_silent@nonempty",
    "out.resizes_out",
    "an out= tensor with elements is resized to the result's shape without the warning",
)
def _():
    import warnings

    def make(original):
        def call(*args, out, **kwargs):
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="An output with one or more elements")
                return original(*args, out=out, **kwargs)

        return call

    _replace_out(make)


@plant(
    "out_accepts_grad",
    "out.no_autograd",
    "op(..., out=o) in grad mode runs, untracked, where an argument requires grad",
)
def _():
    torch = _torch()

    def make(original):
        def call(*args, out, **kwargs):
            with torch.no_grad():
                return original(*args, out=out, **kwargs)

        return call

    _replace_out(make)


@plant(
    "out_cast_truncates@float64",
    "out.dtype_cast",
    "a result of another dtype cast into a float64 out= tensor loses its fraction",
)
def _():
    torch = _torch()

    def make(original):
        def call(*args, out, **kwargs):
            result = original(*args, out=out, **kwargs)
            inputs = [a for a in args if isinstance(a, torch.Tensor)]
            if out.dtype == torch.float64 and any(a.dtype != torch.float64 for a in inputs):
                before = out._version
                with torch.no_grad():
                    out.trunc_()
                _set_version(out, before)
            return result

        return call

    _replace_out(make)


@plant(
    "exp_in_float32@float64",
    "ops.values",
    "x.exp() of float64 is computed in float32 and cast back (about 6e-8 relative off), as a "
    "build without float64 units would; nothing else changes",
)
def _():
    torch = _torch()

    def make(original):
        def exp(self, *args, **kwargs):
            result = original(self, *args, **kwargs)
            if self.dtype == torch.float64 and result.numel():
                before = result._version
                with torch.no_grad():  # the value only: no version, no node of its own
                    result.copy_(original(self.detach().float()))
                _set_version(result, before)
            return result

        return exp

    _replace("exp", make)


@plant("resize_no_bump", "resize.in_place", "resize_ to another shape leaves the version alone")
def _():
    def make(original):
        def resize_(self, *args, **kwargs):
            before = self._version
            result = original(self, *args, **kwargs)
            _set_version(self, before)
            return result

        return resize_

    _replace("resize_", make)


@plant(
    "resize_new_storage",
    "resize.in_place",
    "resize_ moves the tensor to a new storage (a copy) instead of resizing its own",
)
def _():
    torch = _torch()

    def make(original):
        def resize_(self, *args, **kwargs):
            result = original(self, *args, **kwargs)
            after = self._version
            with torch.no_grad():
                torch._C.TensorBase.set_(self, self.detach().clone())
            _set_version(self, after)
            return result

        return resize_

    _replace("resize_", make)


@plant(
    "resize_grad_allowed",
    "resize.requires_grad_raises",
    "resize_ of a tensor that requires grad resizes its .data instead of raising",
)
def _():
    def make(original):
        def resize_(self, *args, **kwargs):
            if self.requires_grad:
                return original(self.data, *args, **kwargs)
            return original(self, *args, **kwargs)

        return resize_

    _replace("resize_", make)


@plant("set_copies", "set.shares_source", "x.set_(y) gives x a copy of y, not y's storage")
def _():
    torch = _torch()

    def make(original):
        def set_(self, source=None, *args, **kwargs):
            if isinstance(source, torch.Tensor) and not args and not kwargs:
                return original(self, source.detach().clone())
            return original(self, *(() if source is None else (source,)), *args, **kwargs)

        return set_

    _replace("set_", make)


def _replace_foreach(make: Callable[[Callable], Callable]) -> None:
    """torch._foreach_add_ and torch._foreach_mul_ = make(original)."""
    torch = _torch()
    for name in ("_foreach_add_", "_foreach_mul_"):
        original = getattr(torch, name)
        patched = make(original)
        functools.update_wrapper(patched, original, updated=())
        setattr(torch, name, patched)


@plant(
    "foreach_unrecorded",
    "foreach.inplace_grad",
    "torch._foreach_add_/_foreach_mul_ write without autograd recording it (as before 2.1)",
)
def _():
    torch = _torch()

    def make(original):
        def call(*args, **kwargs):
            with torch.no_grad():
                return original(*args, **kwargs)

        return call

    _replace_foreach(make)


@plant(
    "foreach_unrecorded@tensor_list",
    "foreach.inplace_grad",
    "torch._foreach_add_/_foreach_mul_ with a list of tensors write without autograd "
    "recording it (the scalar forms are right)",
)
def _():
    torch = _torch()

    def make(original):
        def call(tensors, other, *args, **kwargs):
            if isinstance(other, (list, tuple)) and other and isinstance(other[0], torch.Tensor):
                with torch.no_grad():
                    return original(tensors, other, *args, **kwargs)
            return original(tensors, other, *args, **kwargs)

        return call

    _replace_foreach(make)


# --- the wider autograd surface (issue 10): gradient APIs ---------------------------


@plant(
    "autograd_grad_accumulates",
    "grad.autograd_grad_returns",
    "torch.autograd.grad also accumulates into the leaves' .grad, as backward does",
)
def _():
    torch = _torch()
    original = torch.autograd.grad

    def grad(outputs, inputs, grad_outputs=None, retain_graph=None, *a, **k):
        try:
            torch.autograd.backward(outputs, grad_outputs, retain_graph=True)
        except RuntimeError:
            pass  # the real call raises it again
        return original(outputs, inputs, grad_outputs, retain_graph, *a, **k)

    torch.autograd.grad = grad


@plant(
    "grad_assign_unchecked",
    "grad.assign_checks",
    "x.grad = g of another shape or dtype is silently ignored instead of refused",
)
def _():
    def setter(put):
        def set_grad(self, value):
            try:
                put(self, value)
            except RuntimeError as error:
                if "attempting to assign a gradient" not in str(error):
                    raise

        return set_grad

    _replace_property("grad", setter=setter)


# --- the gradient APIs (issue 10 item 3): hooks, retain_grad, create_graph -------


def _hook_result_ignored(only=None) -> None:
    def make(register_hook):
        def patched(self, hook):
            if only is not None and self.dtype != only():
                return register_hook(self, hook)

            def ignored(grad):
                hook(grad)  # runs, but what it returns is dropped

            return register_hook(self, ignored)

        return patched

    _replace("register_hook", make)


@plant(
    "hook_result_ignored",
    "grad.hook_replaces_gradient",
    "a tensor hook runs, but the gradient it returns is dropped",
)
def _():
    _hook_result_ignored()


@plant(
    "hook_result_ignored@float16",
    "grad.hook_replaces_gradient",
    "a float16 tensor's hook runs, but the gradient it returns is dropped",
)
def _():
    _hook_result_ignored(lambda: _torch().float16)


@plant(
    "hooks_reverse_order",
    "grad.hooks_run_in_order",
    "the hooks of one tensor run last registered first",
)
def _():
    hooks_of = _Registry()

    def make(register_hook):
        def patched(self, hook):
            hooks = hooks_of.get(self)
            if hooks is None:
                hooks = []
                hooks_of.put(self, hooks)

                def run_reversed(grad):
                    for h in reversed(list(hooks)):
                        out = h(grad)
                        grad = grad if out is None else out
                    return grad

                register_hook(self, run_reversed)
            hooks.append(hook)

            class Handle:
                def remove(self) -> None:
                    if any(h is hook for h in hooks):
                        hooks.remove(hook)

            return Handle()

        return patched

    _replace("register_hook", make)


@plant(
    "post_hook_before_accumulation",
    "grad.post_accumulate_hook",
    "a post-accumulate-grad hook runs before the gradient is accumulated into .grad",
)
def _():
    def make(register_post_hook):
        def patched(self, hook):
            if self.grad_fn is not None:  # (non-leaves are still refused)
                return register_post_hook(self, hook)
            return self.register_hook(lambda grad: (hook(self), None)[1])  # before AccumulateGrad

        return patched

    _replace("register_post_accumulate_grad_hook", make)


@plant(
    "retain_grad_ignores_writes",
    "grad.retain_grad_follows_writes",
    "after an in-place write to a retained tensor (or through a view of it), .grad stays "
    "the gradient of the version retain_grad() saw",
)
def _():
    retained = _Registry()  # tensor -> [its grad_fn at retain_grad(), what reached that]

    def make(retain_grad):
        def patched(self):
            retain_grad(self)
            if self.grad_fn is not None and retained.get(self) is None:
                entry = [self.grad_fn, None]
                retained.put(self, entry)

                def record(grad):
                    entry[1] = grad.detach().clone() if entry[1] is None else entry[1] + grad

                self.register_hook(record)  # bound to that grad_fn for good

        return patched

    _replace("retain_grad", make)

    def getter(get):
        def grad(self):
            entry = retained.get(self)
            if entry is not None and self.grad_fn is not entry[0]:  # written since
                return entry[1]
            return get(self)

        return grad

    _replace_property("grad", getter=getter)


@plant(
    "create_graph_detached",
    "grad.create_graph",
    "torch.autograd.grad(..., create_graph=True) hands back gradients outside any graph",
)
def _():
    torch = _torch()
    original = torch.autograd.grad

    def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, **k):
        got = original(outputs, inputs, grad_outputs, retain_graph, create_graph, **k)
        if not create_graph:
            return got
        return tuple(None if g is None else g.detach() for g in got)

    torch.autograd.grad = grad


# --- Node hooks: grad_fn.register_prehook / register_hook ------------------------
# Autograd nodes are immutable C types: the plants hand the code that reads
# t.grad_fn (a template, a property test, a repro script; never torch's or the
# suite's own machinery, whose identity checks need the real node) a proxy
# whose register_prehook / register_hook register a wrapped hook.


def _from_user_code() -> bool:
    import os
    import sys

    filename = sys._getframe(2).f_code.co_filename
    if filename.startswith("<"):  # the differential's templates, compiled as "<op>"
        return True
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if filename.startswith(root):
        return os.path.basename(filename).startswith("test_")
    return os.sep + "torch" + os.sep not in filename  # a repro script: yes; torch: no


def _node_proxies(pre=None, post=None) -> None:
    """t.grad_fn (read from user code) is a proxy whose register_prehook(fn)
    registers pre(node, fn, t) and register_hook(fn) post(node, fn) (None: fn;
    t is None for a node reached through next_functions)."""
    torch = _torch()

    class Proxy:
        def __init__(self, node, tensor=None) -> None:
            object.__setattr__(self, "_node", node)
            object.__setattr__(self, "_tensor", tensor)

        def __getattr__(self, name):
            return getattr(self._node, name)

        def __repr__(self) -> str:
            return repr(self._node)

        def __eq__(self, other) -> bool:
            return self._node == getattr(other, "_node", other)

        def __hash__(self) -> int:
            return hash(self._node)

        @property
        def next_functions(self):
            return tuple((n if n is None else Proxy(n), i) for n, i in self._node.next_functions)

        def register_prehook(self, fn):
            hook = fn if pre is None else pre(self._node, fn, self._tensor)
            if hasattr(hook, "remove"):  # pre registered it elsewhere: its handle
                return hook
            return self._node.register_prehook(hook)

        def register_hook(self, fn):
            return self._node.register_hook(fn if post is None else post(self._node, fn))

    descriptor = torch._C.TensorBase.grad_fn

    def grad_fn(self):
        node = descriptor.__get__(self)
        return Proxy(node, self) if node is not None and _from_user_code() else node

    torch.Tensor.grad_fn = property(grad_fn)


def _ignored_pre(node, fn, tensor=None):
    return lambda grad_outputs: (fn(grad_outputs), None)[1]


def _ignored_post(node, fn):
    return lambda grad_inputs, grad_outputs: (fn(grad_inputs, grad_outputs), None)[1]


@plant(
    "node_prehook_result_ignored",
    "grad.node_prehook_replaces_grad_outputs",
    "a Node pre-hook runs, but the grad_outputs it returns are dropped",
)
def _():
    _node_proxies(pre=_ignored_pre)


@plant(
    "node_prehook_result_ignored@AccumulateGrad",
    "grad.node_prehook_replaces_grad_outputs",
    "a pre-hook on a leaf's AccumulateGrad runs, but what it returns is dropped",
)
def _():
    def pre(node, fn, tensor):
        return _ignored_pre(node, fn) if type(node).__name__ == "AccumulateGrad" else fn

    _node_proxies(pre=pre)


@plant(
    "node_prehook_among_tensor_hooks",
    "grad.node_prehook_replaces_grad_outputs",
    "a pre-hook on t.grad_fn runs as one of t's tensor hooks, in their registration order: "
    "before the tensor hooks registered after it",
)
def _():
    def pre(node, fn, tensor):
        if tensor is None:  # reached through next_functions: left alone
            return fn
        return tensor.register_hook(lambda g: (fn((g,)) or (g,))[0])  # its handle

    _node_proxies(pre=pre)


@plant(
    "node_hook_result_ignored",
    "grad.node_hook_replaces_grad_inputs",
    "a Node (post) hook runs, but the grad_inputs it returns are dropped",
)
def _():
    _node_proxies(post=_ignored_post)


@plant(
    "node_hook_result_ignored@second",
    "grad.node_hook_replaces_grad_inputs",
    "of the (post) hooks of one node, the second and later ones' results are dropped",
)
def _():
    counts: dict[int, list] = {}  # id(node) -> [node, hooks]: nodes take no weak refs

    def post(node, fn):
        entry = counts.setdefault(id(node), [node, 0])
        entry[1] += 1
        return fn if entry[1] == 1 else _ignored_post(node, fn)

    _node_proxies(post=post)


# --- crashes, hangs and the suite's own errors (issue 13, issue 9 item 4) ------
# These break no rule: they take the process down, hang, or break the suite's
# own code, each only for some inputs. `breaks` names the test that must
# report it (crashed, hung or internal error), which is what the project's
# tests check (tests/test_crashes.py); PROBLEM_PLANTS maps each to the
# status it must get. None is in the every-invariant-has-a-plant check.

PROBLEM_PLANTS: dict[str, str] = {}


def problem_plant(name: str, status: str, what: str):
    def register(install: Callable[[], None]) -> Callable[[], None]:
        PROBLEM_PLANTS[name] = status
        PLANTS_PROBLEMS[name] = Plant(name, "", what, install)
        return install

    return register


# Kept apart from PLANTS, whose every entry must break an invariant.
PLANTS_PROBLEMS: dict[str, Plant] = {}


def _suite_module(name: str):
    """A module of the suite itself; tests/ is first on sys.path when
    sitecustomize installs a plant, and tests/oracle would shadow oracle/."""
    import importlib
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    tests = str(Path(__file__).resolve().parent)
    saved = list(sys.path)
    sys.path[:] = [root] + [p for p in sys.path if p not in (tests, root)]
    try:
        return importlib.import_module(name)
    finally:
        sys.path[:] = saved


def _rank3_detach(action: Callable[[], None]) -> None:
    """Tensor.detach does `action` on tensors of rank >= 3, as a build whose
    kernel breaks on some shapes only. Like torch's own methods written in
    Python, it honours __torch_function__ first: the break is below it, where
    a kernel's would be."""
    torch = _torch()

    def make(orig):
        def detach(self):
            if torch.overrides.has_torch_function_unary(self):
                return torch.overrides.handle_torch_function(detach, (self,), self)
            if self.dim() >= 3:
                action()
            return orig(self)

        return detach

    _replace("detach", make)


def _segfault() -> None:
    import ctypes

    ctypes.string_at(0)  # reads address 0: SIGSEGV


def _abort() -> None:
    import os

    os.abort()  # SIGABRT, as a failed C++ assertion


def _oom_killed() -> None:
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's out-of-memory killer does


def _spin() -> None:
    while True:  # an endless loop that returns to Python: SIGALRM can stop it
        pass


def _stuck() -> None:
    import signal
    import time

    # A hang the in-process stage cannot stop (as a loop in C that never
    # returns to Python): the alarm is ignored, so only the watchdog's last
    # stage ends it.
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    while True:
        time.sleep(0.05)


def _exhaust_memory() -> None:
    import resource

    torch = _torch()
    # Bound the address space first, so that the machine survives: the
    # allocation fails at the bound instead of taking the machine's memory.
    with open("/proc/self/statm") as statm:
        used = int(statm.read().split()[0]) * resource.getpagesize()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (used + (512 << 20), hard))
    try:
        torch.ones(1 << 33, dtype=torch.uint8)  # 8 GiB
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@problem_plant("segfault@rank3", "crashed", "detach reads address 0 on rank >= 3 tensors")
def _():
    _rank3_detach(_segfault)


@problem_plant("abort@rank3", "crashed", "detach calls abort() on rank >= 3 tensors")
def _():
    _rank3_detach(_abort)


@problem_plant("oom_killed@rank3", "crashed", "detach's process is SIGKILLed on rank >= 3")
def _():
    _rank3_detach(_oom_killed)


@problem_plant("out_of_memory@rank3", "crashed", "detach exhausts memory on rank >= 3 tensors")
def _():
    _rank3_detach(_exhaust_memory)


@problem_plant("hang@rank3", "hung", "detach loops forever on rank >= 3 tensors")
def _():
    _rank3_detach(_spin)


@problem_plant("stuck@rank3", "hung", "detach hangs beyond SIGALRM's reach on rank >= 3")
def _():
    _rank3_detach(_stuck)


@problem_plant(
    "oracle_right_shift", "internal error", "the reference model's add raises NumPy's TypeError"
)
def _():
    import dataclasses

    OPS = _suite_module("oracle").OPS

    def broken(*args, **kwargs):
        raise TypeError("ufunc 'right_shift' not supported for the input types")

    OPS["add"] = dataclasses.replace(OPS["add"], fwd=broken)


@problem_plant("strategy_raises@rank3", "internal error", "drawing a rank >= 3 tensor raises")
def _():
    tensors = _suite_module("strategies.tensors")
    original = tensors.build_case

    def build_case(root_values, *args, **kwargs):
        if root_values.ndim >= 3:
            raise TypeError("ufunc 'right_shift' not supported for the input types")
        return original(root_values, *args, **kwargs)

    tensors.build_case = build_case


@problem_plant(
    "check_raises@rank3",
    "internal error",
    "the suite's storage check raises an AttributeError on rank >= 3 tensors, in a test's body",
)
def _():
    check = _suite_module("conformance.check")
    original = check.storage_id

    def storage_id(tensor):
        if tensor.dim() >= 3:  # as the suite's call of an API a release lacks
            raise AttributeError("'UntypedStorage' object has no attribute 'right_shift'")
        return original(tensor)

    check.storage_id = storage_id


# --- custom autograd.Functions and saved_tensors_hooks (issue 10) -----------


def _function_ctx():
    return _torch().autograd.function.FunctionCtx


@plant(
    "function_saved_unchecked",
    "function.saved_version_check",
    "a custom Function's save_for_backward saves x.data: a later in-place write goes unseen",
)
def _():
    ctx = _function_ctx()
    original = ctx.save_for_backward

    def save_for_backward(self, *tensors):
        return original(self, *(t if t is None else t.data for t in tensors))

    ctx.save_for_backward = save_for_backward


@plant(
    "function_saved_unchecked@float64",
    "function.saved_version_check",
    "as function_saved_unchecked, for float64 tensors only",
)
def _():
    torch, ctx = _torch(), _function_ctx()
    original = ctx.save_for_backward

    def save_for_backward(self, *tensors):
        def keep(t):
            return t.data if t is not None and t.dtype == torch.float64 else t

        return original(self, *(keep(t) for t in tensors))

    ctx.save_for_backward = save_for_backward


@plant(
    "mark_dirty_ignored",
    "function.mark_dirty_returns_input",
    "mark_dirty does nothing: the written input is returned as a new alias, its history "
    "(grad_fn) unchanged, its version bumped once",
)
def _():
    _function_ctx().mark_dirty = lambda self, *args, **kwargs: None


@plant(
    "non_differentiable_requires_grad",
    "function.non_differentiable_output",
    "mark_non_differentiable does nothing: the output requires grad",
)
def _():
    _function_ctx().mark_non_differentiable = lambda self, *args, **kwargs: None


@plant(
    "function_view_copied",
    "function.view_output",
    "a view a custom Function returns comes back as a copy: no _base, memory of its own",
)
def _():
    torch = _torch()
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


def _wrap_saved_hooks(make_pack, make_unpack) -> None:
    """torch.autograd.graph.saved_tensors_hooks(pack, unpack) with the hooks rewrapped."""
    graph = _torch().autograd.graph
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
def _():
    def make_pack(pack):
        return lambda t: (t.detach(), pack(t))

    def make_unpack(unpack):
        def unpack_ignored(packed):
            unpack(packed[1])
            return packed[0]

        return unpack_ignored

    _wrap_saved_hooks(make_pack, make_unpack)


@plant(
    "saved_hooks_pack_twice",
    "saved_hooks.pack_unpack",
    "pack runs twice, the second time on what the first returned",
)
def _():
    _wrap_saved_hooks(lambda pack: lambda t: pack(pack(t)), lambda unpack: unpack)


# --- schema.*: kernels that break their operator's schema ---------------------
# Planted where a backend's bug would be: the operator's CPU kernel (or, for
# the version counter, its ADInplaceOrView kernel) is replaced through
# torch.library. A kernel calls other operators than its own, so that it
# never re-enters itself.

SCHEMA_KERNELS: dict[str, tuple[str, str, Callable[[], Callable]]] = {}
_LIBRARIES: list = []  # a Library unregisters its kernels when collected


def kernel_plant(name: str, breaks: str, what: str, op: str, key: str = "CPU"):
    """A plant that overrides `op`'s kernel for dispatch key `key` with the
    function the decorated factory returns."""

    def register(factory: Callable[[], Callable]) -> Callable[[], Callable]:
        SCHEMA_KERNELS[name] = (op, key, factory)

        def install_kernel() -> None:
            _LIBRARIES.append(override_kernel(name))

        PLANTS[name] = Plant(name, breaks, what, install_kernel)
        return factory

    return register


def override_kernel(name: str):
    """Install one schema plant; returns the Library (destroy it to undo)."""
    import warnings

    torch = _torch()
    op, key, factory = SCHEMA_KERNELS[name]
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
        library.impl(op, factory(), key)
    return library


@kernel_plant(
    "schema_fresh@neg",
    "schema.fresh_output",
    "aten::neg's CPU kernel returns its input instead of a new tensor",
    "neg",
)
def _():
    return lambda self: self


@kernel_plant(
    "schema_alias@transpose",
    "schema.alias_shares_storage",
    "aten::transpose.int's CPU kernel returns a copy instead of a view",
    "transpose.int",
)
def _():
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
def _():
    torch = _torch()

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
def _():
    torch = _torch()

    def abs_out(self, *, out):
        return torch.where(self < 0, torch.ops.aten.neg.default(self), self.clone())

    return abs_out


@kernel_plant(
    "schema_inplace@neg_",
    "schema.inplace_returns_self",
    "aten::neg_'s CPU kernel writes self but returns a copy of it",
    "neg_",
)
def _():
    torch = _torch()

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
def _():
    torch = _torch()

    def add_(self, other, *, alpha=1):
        with torch._C._AutoDispatchBelowADInplaceOrView():
            return torch.ops.aten.add_.Tensor(self, other, alpha=alpha)

    return add_


def crash_kernel(name: str, op: str):
    """A kernel that takes the process down: not a plant of any rule (the
    sweep must survive it), installed by tests/site when CONFORMANCE_KERNEL
    names it."""

    def register(factory: Callable[[], Callable]) -> Callable[[], Callable]:
        SCHEMA_KERNELS[name] = (op, "CPU", factory)
        return factory

    return register


@crash_kernel("crash@sin", "sin")
def _():
    import os
    import signal

    def sin(self):
        os.kill(os.getpid(), signal.SIGSEGV)

    return sin


# --- kernels a build lacks (issue 9) ------------------------------------------------
# Not violations: builds that lack a kernel the way torch 2.0's CPU build lacks
# float16 exp. The suite must skip and count them (conformance.build), so they
# are kept apart from PLANTS, which the suite must report.

LACKING: dict[str, Plant] = {}


def lacking(name: str, what: str):
    def register(install: Callable[[], None]) -> Callable[[], None]:
        LACKING[name] = Plant(name, "", what, install)
        return install

    return register


def _not_implemented(kernel: str, dtype) -> RuntimeError:
    names = {"float16": "Half", "bfloat16": "BFloat16"}
    name = names.get(str(dtype).removeprefix("torch."), str(dtype))
    return RuntimeError(f"\"{kernel}\" not implemented for '{name}'")


@lacking("no_exp@float16", "x.exp() and x.exp_() of float16 raise as on torch 2.0's CPU build")
def _():
    torch = _torch()

    def make(orig):
        def exp(self, *args, **kwargs):
            if self.dtype == torch.float16:
                raise _not_implemented("exp_vml_cpu", self.dtype)
            return orig(self, *args, **kwargs)

        return exp

    _replace("exp", make)
    _replace("exp_", make)


@plant(
    "exp_unimplemented@strided",
    "ops.values",
    "x.exp() of a non-contiguous tensor says its kernel is not implemented",
)
def _():
    # the kernel exists (a fresh contiguous tensor works): a narrow probe
    # must not take this for a build that lacks it
    def make(orig):
        def exp(self, *args, **kwargs):
            if not self.is_contiguous():
                raise _not_implemented("exp_vml_cpu", self.dtype)
            return orig(self, *args, **kwargs)

        return exp

    _replace("exp", make)
