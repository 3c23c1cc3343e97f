"""grad.*: tensor hooks, post-accumulate hooks, retain_grad and Node hooks going wrong."""

from __future__ import annotations

import os
import sys

from .patch import Registry, methods, wrap_property
from .registry import plant


def _hook_result_ignored(only=None) -> None:
    def register_hook(orig, self, hook):
        if only is not None and self.dtype != only:
            return orig(self, hook)
        return orig(self, lambda grad: (hook(grad), None)[1])  # runs, its result dropped

    methods("register_hook", register_hook)


@plant(
    "hook_result_ignored",
    "grad.hook_replaces_gradient",
    "a tensor hook runs, but the gradient it returns is dropped",
)
def _(torch):
    _hook_result_ignored()


@plant(
    "hook_result_ignored@float16",
    "grad.hook_replaces_gradient",
    "a float16 tensor's hook runs, but the gradient it returns is dropped",
)
def _(torch):
    _hook_result_ignored(torch.float16)


@plant(
    "hooks_reverse_order",
    "grad.hooks_run_in_order",
    "the hooks of one tensor run last registered first",
)
def _(torch):
    hooks_of = Registry()

    def register_hook(orig, self, hook):
        hooks = hooks_of.get(self)
        if hooks is None:
            hooks = []
            hooks_of.put(self, hooks)

            def run_reversed(grad):
                for h in reversed(list(hooks)):
                    out = h(grad)
                    grad = grad if out is None else out
                return grad

            orig(self, run_reversed)
        hooks.append(hook)

        class Handle:
            def remove(self) -> None:
                if any(h is hook for h in hooks):
                    hooks.remove(hook)

        return Handle()

    methods("register_hook", register_hook)


@plant(
    "post_hook_before_accumulation",
    "grad.post_accumulate_hook",
    "a post-accumulate-grad hook runs before the gradient is accumulated into .grad",
)
def _(torch):
    def register_post_hook(orig, self, hook):
        if self.grad_fn is not None:  # (non-leaves are still refused)
            return orig(self, hook)
        return self.register_hook(lambda grad: (hook(self), None)[1])  # before AccumulateGrad

    methods("register_post_accumulate_grad_hook", register_post_hook)


@plant(
    "retain_grad_ignores_writes",
    "grad.retain_grad_follows_writes",
    "after an in-place write to a retained tensor (or through a view of it), .grad stays "
    "the gradient of the version retain_grad() saw",
)
def _(torch):
    retained = Registry()  # tensor -> [its grad_fn at retain_grad(), what reached that]

    def retain_grad(orig, self):
        orig(self)
        if self.grad_fn is not None and retained.get(self) is None:
            entry = [self.grad_fn, None]
            retained.put(self, entry)

            def record(grad):
                entry[1] = grad.detach().clone() if entry[1] is None else entry[1] + grad

            self.register_hook(record)  # bound to that grad_fn for good

    methods("retain_grad", retain_grad)

    def grad(get, self):
        entry = retained.get(self)
        if entry is not None and self.grad_fn is not entry[0]:  # written since
            return entry[1]
        return get(self)

    wrap_property("grad", get=grad)


# --- Node hooks: grad_fn.register_prehook / register_hook ------------------------
# Autograd nodes are immutable C types: the plants hand the code that reads
# t.grad_fn (a template, a property test, a repro script; never torch's or the
# suite's own machinery, whose identity checks need the real node) a proxy
# whose register_prehook / register_hook register a wrapped hook.

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _from_user_code() -> bool:
    # frames: this, the grad_fn getter, wrap_property's property, the reader
    filename = sys._getframe(3).f_code.co_filename
    if filename.startswith("<"):  # the differential's templates, compiled as "<op>"
        return True
    if filename.startswith(_ROOT):
        return os.path.basename(filename).startswith("test_")
    return os.sep + "torch" + os.sep not in filename  # a repro script: yes; torch: no


def _node_proxies(pre=None, post=None) -> None:
    """t.grad_fn (read from user code) is a proxy whose register_prehook(fn)
    registers pre(node, fn, t) and register_hook(fn) post(node, fn) (None: fn;
    t is None for a node reached through next_functions)."""

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

    def grad_fn(get, self):
        node = get(self)
        return Proxy(node, self) if node is not None and _from_user_code() else node

    wrap_property("grad_fn", get=grad_fn)


def _ignored_pre(node, fn, tensor=None):
    return lambda grad_outputs: (fn(grad_outputs), None)[1]


def _ignored_post(node, fn):
    return lambda grad_inputs, grad_outputs: (fn(grad_inputs, grad_outputs), None)[1]


@plant(
    "node_prehook_result_ignored",
    "grad.node_prehook_replaces_grad_outputs",
    "a Node pre-hook runs, but the grad_outputs it returns are dropped",
)
def _(torch):
    _node_proxies(pre=_ignored_pre)


@plant(
    "node_prehook_result_ignored@AccumulateGrad",
    "grad.node_prehook_replaces_grad_outputs",
    "a pre-hook on a leaf's AccumulateGrad runs, but what it returns is dropped",
)
def _(torch):
    def pre(node, fn, tensor):
        return _ignored_pre(node, fn) if type(node).__name__ == "AccumulateGrad" else fn

    _node_proxies(pre=pre)


@plant(
    "node_prehook_among_tensor_hooks",
    "grad.node_prehook_replaces_grad_outputs",
    "a pre-hook on t.grad_fn runs as one of t's tensor hooks, in their registration order: "
    "before the tensor hooks registered after it",
)
def _(torch):
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
def _(torch):
    _node_proxies(post=_ignored_post)


@plant(
    "node_hook_result_ignored@second",
    "grad.node_hook_replaces_grad_inputs",
    "of the (post) hooks of one node, the second and later ones' results are dropped",
)
def _(torch):
    counts: dict[int, list] = {}  # id(node) -> [node, hooks]: nodes take no weak refs

    def post(node, fn):
        entry = counts.setdefault(id(node), [node, 0])
        entry[1] += 1
        return fn if entry[1] == 1 else _ignored_post(node, fn)

    _node_proxies(post=post)


@plant(
    "view_hook_on_base",
    "grad.hook_replaces_gradient",
    "register_hook on a view registers the hook on its base instead",
)
def _(torch):
    def register_hook(orig, self, hook):
        base = self._base if self._is_view() else None
        return orig(base if base is not None and base.requires_grad else self, hook)

    methods("register_hook", register_hook)
