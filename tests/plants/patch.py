"""How a plant patches torch: the one way to wrap a function or method
(`wrap`, `methods`), a property (`wrap_property`) and the in-place methods
(`INPLACE`, `WRITE_METHODS` with `runs_under`, `retried_under`,
`keeps_version` and `after_writes`); and what several plants read (tensors
remembered by identity, the graph behind a tensor)."""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Callable, Iterable


def torch_module():
    import torch

    return torch


# --- wrapping --------------------------------------------------------------------


def wrap(owner, name: str, wrapper: Callable) -> None:
    """owner.<name>(*args, **kwargs) becomes wrapper(original, *args, **kwargs)."""
    original = getattr(owner, name)

    def patched(*args, **kwargs):
        return wrapper(original, *args, **kwargs)

    functools.update_wrapper(patched, original, updated=())
    setattr(owner, name, patched)


def methods(names: str | Iterable[str], wrapper: Callable) -> None:
    """wrap() each torch.Tensor method named: wrapper(original, self, *args, **kwargs)."""
    tensor = torch_module().Tensor
    for name in (names,) if isinstance(names, str) else names:
        wrap(tensor, name, wrapper)


def wrap_property(name: str, get: Callable | None = None, put: Callable | None = None) -> None:
    """torch.Tensor.<name> reads get(original_get, self) and writes
    put(original_set, self, value); left out, the original."""
    descriptor = getattr(torch_module()._C.TensorBase, name)
    read, write = descriptor.__get__, descriptor.__set__
    getter = (lambda self: get(read, self)) if get else read
    setter = (lambda self, value: put(write, self, value)) if put else write
    setattr(torch_module().Tensor, name, property(getter, setter))


def set_version(tensor, value: int) -> None:
    torch = torch_module()
    try:
        torch._C._autograd._unsafe_set_version_counter((tensor,), (value,))
    except TypeError:  # before 2.7 it took one tensor and one int
        torch._C._autograd._unsafe_set_version_counter(tensor, value)


@contextlib.contextmanager
def version_kept(tensor):
    """What the block does leaves tensor's version where it was."""
    before = tensor._version
    yield
    set_version(tensor, before)


# --- the in-place methods -------------------------------------------------------------

# The in-place methods most plants patch.
INPLACE = ("add_", "sub_", "mul_", "fill_", "zero_", "neg_", "copy_", "clamp_", "abs_")

# The in-place methods the property tests and the differential call (the
# oracle's in-place rows, the write table's, and setitem).
WRITE_METHODS = ("__setitem__", "abs_", "add_", "clamp_", "copy_", "div_", "exp_", "fill_")
WRITE_METHODS += ("index_add_", "index_copy_", "index_put_", "masked_fill_", "mul_", "neg_")
WRITE_METHODS += ("relu_", "scatter_", "sigmoid_", "sin_", "sub_", "tanh_", "zero_")


def runs_under(context: Callable, when: Callable[..., bool] | None = None) -> Callable:
    """A wrapper that runs the original inside context() where when(*args,
    **kwargs) (None: always)."""

    def wrapper(orig, *args, **kwargs):
        if when is not None and not when(*args, **kwargs):
            return orig(*args, **kwargs)
        with context():
            return orig(*args, **kwargs)

    return wrapper


def retried_under(context: Callable, message: str) -> Callable:
    """A wrapper that runs the original again inside context() where it
    raised a RuntimeError saying `message`."""

    def wrapper(orig, *args, **kwargs):
        try:
            return orig(*args, **kwargs)
        except RuntimeError as error:
            if message not in str(error):
                raise
        with context():
            return orig(*args, **kwargs)

    return wrapper


def keeps_version(when: Callable[[object], bool]) -> Callable:
    """A method wrapper that leaves self's version where it was when when(self)."""

    def wrapper(orig, self, *args, **kwargs):
        if not when(self):
            return orig(self, *args, **kwargs)
        with version_kept(self):
            return orig(self, *args, **kwargs)

    return wrapper


def after_writes(hook: Callable[[object], None], names: Iterable[str] = WRITE_METHODS) -> None:
    """Run hook(written tensor) after each of the in-place methods named."""

    def write(orig, self, *args, **kwargs):
        out = orig(self, *args, **kwargs)
        hook(self)
        return out

    methods(names, write)


def results(names: str | Iterable[str], change: Callable) -> None:
    """Each method named returns change(self, its result) instead of its result."""
    methods(names, lambda orig, self, *a, **k: change(self, orig(self, *a, **k)))


def own_backward(name: str, forward: Callable, backward: Callable, class_name: str) -> None:
    """torch.Tensor.<name>(x), where x requires grad in grad mode, runs as an
    autograd.Function `class_name` of forward(ctx, original, x) and backward(ctx, g)."""
    torch = torch_module()

    def wrapper(orig, self, *args, **kwargs):
        if self.requires_grad and torch.is_grad_enabled():
            return function.apply(self)
        return orig(self, *args, **kwargs)

    original = getattr(torch.Tensor, name)
    function = type(
        class_name,
        (torch.autograd.Function,),
        {
            "forward": staticmethod(lambda ctx, x: forward(ctx, original, x)),
            "backward": staticmethod(backward),
        },
    )
    methods(name, wrapper)


def saving_results(snapshot: bool, class_name: str) -> None:
    """exp, tanh and sigmoid save their result r for a backward of
    RESULT_GRADS[name](g, r), and compute that from a copy: the one they save
    (snapshot False), or one beside the result they save (snapshot True: torch
    still checks the saved result for writes)."""

    def forward(ctx, orig, x):
        out = orig(x)
        if snapshot:
            ctx.save_for_backward(out)
            ctx.snapshot = out.detach().clone()
        else:
            ctx.save_for_backward(out.clone())
        return out

    for name, grad in RESULT_GRADS.items():

        def backward(ctx, g, grad=grad):
            (saved,) = ctx.saved_tensors
            return grad(g, ctx.snapshot if snapshot else saved)

        own_backward(name, forward, backward, class_name)


# The gradients of exp, tanh and sigmoid from their result r.
RESULT_GRADS = {
    "exp": lambda g, r: g * r.conj(),
    "tanh": lambda g, r: g * (1 - r * r).conj(),
    "sigmoid": lambda g, r: g * (r * (1 - r)).conj(),
}


# --- what plants read -------------------------------------------------------------------


def is_float(t) -> bool:
    return t.is_floating_point() or t.is_complex()


def overlapping(t) -> bool:
    return t.numel() > 0 and any(s == 0 and n > 1 for n, s in zip(t.shape, t.stride(), strict=True))


class Registry:
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


def remember(names: str | Iterable[str], registry: Registry, value: Callable) -> None:
    """Each method named puts its result in `registry`, with value(self)."""

    def wrapper(orig, self, *args, **kwargs):
        out = orig(self, *args, **kwargs)
        registry.put(out, value(self))
        return out

    methods(names, wrapper)


def written_through(alias_maker: str, wrap_alias: Callable) -> Registry:
    """Patch `alias_maker` (detach, or the data property: wrap_alias wraps
    it) and the in-place ops so that the returned registry holds every tensor
    written through one of its aliases (or a view of one)."""
    torch = torch_module()
    sources, written = Registry(), Registry()

    def alias(orig, self):
        out = orig(self)
        sources.put(out, self)
        return out

    wrap_alias(alias_maker, alias)

    def note(self):
        base = torch._C.TensorBase._base.__get__(self)
        source = sources.get(self) if base is None else sources.get(base)
        if source is not None:
            written.put(source, True)

    after_writes(note, INPLACE)
    return written


def walk(root):
    """The autograd nodes behind `root` (a grad_fn), each once."""
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(n for n, _ in node.next_functions)


def leaves(root) -> list:
    """The leaf tensors a backward from the tensor `root` reaches."""
    return [node.variable for node in walk(root.grad_fn) if hasattr(node, "variable")]


def in_graph_of(root, tensors: Registry) -> bool:
    """Whether one of `tensors` is in the graph behind `root` (a grad_fn): a
    leaf that an AccumulateGrad feeds, or a non-leaf by its grad_fn."""
    nodes = {id(node): node for node in walk(root)}
    found = {id(n.variable) for n in nodes.values() if hasattr(n, "variable")}
    return any(id(t) in found or id(t.grad_fn) in nodes for t, _ in tensors.items())
