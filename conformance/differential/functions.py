"""The custom autograd.Functions and saved-tensor-hook helpers the suite's
programs call, as source text: the differential runs them (exec'd once into
the namespace of torch calls) and every listing or repro script that uses one
prints its definition at the top, so what runs and what is printed agree.

Their model: oracle/functions.py; their rows: `fn_*` and `sin_hooked_*` in
oracle/ops.py.
"""

from __future__ import annotations

from functools import cache

import torch

SOURCES: dict[str, str] = {
    "fn_scale": '''\
class Scale(torch.autograd.Function):
    """x * c; saves x with save_for_backward, and backward reads it back."""

    @staticmethod
    def forward(ctx, x, c):
        ctx.save_for_backward(x)
        ctx.c = c
        return x * c

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors  # the version check happens here
        return g * ctx.c, None
''',
    "fn_mul_": '''\
class MulDirty(torch.autograd.Function):
    """x.mul_(c) in place, marked dirty: returns x itself; gradient g * c."""

    @staticmethod
    def forward(ctx, x, c):
        x.mul_(c)
        ctx.mark_dirty(x)
        ctx.c = c
        return x

    @staticmethod
    def backward(ctx, g):
        return g * ctx.c, None
''',
    "fn_add_dirty_": '''\
class AddDirty(torch.autograd.Function):
    """x.add_(y * c) in place, marked dirty: returns x itself; gradients g and g * c."""

    @staticmethod
    def forward(ctx, x, y, c):
        x.add_(y * c)
        ctx.mark_dirty(x)
        ctx.c = c
        return x

    @staticmethod
    def backward(ctx, g):
        return g, g * ctx.c, None
''',
    "fn_none_grad": '''\
class AddNoGrad(torch.autograd.Function):
    """x + y; backward returns None for input `which` (0: x, 1: y), g for the other."""

    @staticmethod
    def forward(ctx, x, y, which):
        ctx.which = which
        return x + y

    @staticmethod
    def backward(ctx, g):
        return (None, g, None) if ctx.which == 0 else (g, None, None)
''',
    "fn_nondiff": '''\
class SignND(torch.autograd.Function):
    """x.sign(), marked non-differentiable: the output requires no grad."""

    @staticmethod
    def forward(ctx, x):
        out = x.sign()
        ctx.mark_non_differentiable(out)
        return out

    @staticmethod
    def backward(ctx, g):
        return torch.zeros_like(g)
''',
    "fn_view": '''\
class ViewFn(torch.autograd.Function):
    """x.view_as(x): returns a view of its input; gradient g."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g
''',
    "sin_hooked_detach": '''\
def sin_hooked_detach(x):
    """x.sin() while pack keeps x.detach() and unpack returns it as it is."""
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        return x.sin()
''',
    "sin_hooked_x2_x2": '''\
def sin_hooked_x2_x2(x):
    """x.sin() while pack keeps 2 * x and unpack returns twice that: backward
    computes the gradient of sin at 4 * x."""
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t * 2):
        return x.sin()
''',
}


@cache
def _scope() -> dict:
    scope: dict = {"torch": torch}
    for name, source in SOURCES.items():
        exec(compile(source, f"<{name}>", "exec"), scope)
    return scope


def namespace() -> dict:
    """The definitions, by name (Scale, MulDirty, ..., sin_hooked_detach)."""
    return {k: v for k, v in _scope().items() if k not in ("torch", "__builtins__")}


def prelude(ops: object) -> list[str]:
    """The definitions the ops use, once each, in table order, as source lines."""
    used = set(ops)
    lines: list[str] = []
    for name, source in SOURCES.items():
        if name in used:
            lines += source.splitlines() + [""]
    return lines
