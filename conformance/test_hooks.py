"""The gradient APIs beyond backward: tensor hooks (register_hook), hooks that
run after a leaf's .grad was accumulated, retain_grad across backward calls
and writes, and create_graph. Each example runs every dtype that can require
grad (a hook broken for one dtype alone must not depend on the draw)."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from conformance.check import attributed_to, expect, expect_raises, expect_values
from conformance.harness import Example
from oracle import OPS
from oracle.dtypes import round_to
from strategies.argspace import Operand, arguments
from strategies.dtypes import arrays
from strategies.tensors import TORCH_DTYPES

_HOOKS = {  # kind -> (the hook, its effect on a numpy gradient of dtype d)
    "mul": (lambda c: lambda g: g * c, lambda g, c, d: round_to(g * c, d)),
    "add": (lambda c: lambda g: g + c, lambda g, c, d: round_to(g + c, d)),
    "none": (lambda c: lambda g: None, lambda g, c, d: g),
}

_SOURCE = {"mul": "lambda g: g * c", "add": "lambda g: g + c", "none": "lambda g: None"}


@cache
def _constants(kind: str) -> st.SearchStrategy[float]:
    """The argument space of the tensor hook row of that kind (hook_add's term,
    hook_mul's factor: strategies.hook_args), as one strategy built once."""
    space = OPS["hook_add" if kind == "add" else "hook_mul"].args
    return arguments(space, Operand(())).map(lambda a: a[0])


def _const(ex: Example, kind: str, label: str) -> float:
    return ex.draw(_constants(kind), label)


def _leaf(ex: Example, dtype: str, device: str, label: str):
    values = ex.draw(arrays(dtype, (3,)), label)
    ex.record(dtype)
    x = torch.tensor(values, dtype=TORCH_DTYPES[dtype], device=device, requires_grad=True)
    return x, values


def _grad(ex: Example, dtype: str, device: str, label: str):
    g = ex.draw(arrays(dtype, (3,)), label)
    return torch.tensor(g, dtype=TORCH_DTYPES[dtype], device=device), round_to(g, dtype)


# views of y (shape (3,)) a hook is registered on: (spelling, the view, the
# positions of y it holds); unbind's is one output of several
_VIEWS = {
    "y[1:]": (lambda y: y[1:], [1, 2]),
    "y.narrow(0, 0, 2)": (lambda y: y.narrow(0, 0, 2), [0, 1]),
    "y.unbind(0)[1]": (lambda y: y.unbind(0)[1], [1]),
}


@pytest.mark.invariant("grad.hook_replaces_gradient")
@given(data=st.data())
def test_a_hook_result_replaces_the_gradient(device, data):
    """y = x * 2 (y retained); a hook on x, on y, or on a view v of y (a slice,
    or one output of several; v retained, backward from v): what it returns is
    x's gradient (x.grad), or y's (y.grad and, through MulBackward, x.grad), or
    v's (v.grad, and x.grad at v's elements, zero elsewhere)."""
    ex = Example(data, device)
    for dtype in ex.grad_dtypes():
        for kind, (make, effect) in _HOOKS.items():
            x, _ = _leaf(ex, dtype, device, f"x ({dtype}, {kind})")
            where = ex.draw(st.sampled_from(["x", "y", *_VIEWS]), "hooked")
            c = _const(ex, kind, "hook constant")
            y = x * 2
            y.retain_grad()
            view, held = _VIEWS.get(where, (None, None))
            out = y if view is None else view(y)
            out.retain_grad()
            (x if where == "x" else out).register_hook(make(c))
            g, g_np = _grad(ex, dtype, device, "backward's gradient")
            if view is not None:
                g, g_np = g[held].reshape(out.shape), g_np[held].reshape(out.shape)
            what = f"{where}.register_hook({_SOURCE[kind]}), c={c}, {dtype}"
            with attributed_to("grad.hook_replaces_gradient", f"backward with {what}"):
                out.backward(g)
            gout = effect(g_np, c, dtype) if where != "x" else g_np
            gy = gout
            if view is not None:
                gy = np.zeros(3, g_np.dtype)
                gy[held] = np.reshape(gout, -1)
                expect_values("grad.hook_replaces_gradient", out.grad, gout, f"v.grad after {what}")
            gx = round_to(gy * 2, dtype)
            gx = effect(gx, c, dtype) if where == "x" else gx
            expect_values("grad.hook_replaces_gradient", y.grad, gy, f"y.grad after {what}")
            expect_values("grad.hook_replaces_gradient", x.grad, gx, f"x.grad after {what}")


@pytest.mark.invariant("grad.hooks_run_in_order")
@given(data=st.data())
def test_hooks_run_in_registration_order(device, data):
    """Two to four hooks on x (a leaf) or on y = x * 2: each sees the one
    before's result; one whose handle was removed never runs."""
    ex = Example(data, device)
    kinds = st.sampled_from(["mul", "add", "none", "removed"])
    for dtype in ex.grad_dtypes():
        x, _ = _leaf(ex, dtype, device, f"x ({dtype})")
        chain = ex.draw(st.lists(kinds, min_size=2, max_size=4), "hooks, in order")
        if not {"mul", "add"} <= set(chain):  # one that scales and one that shifts
            chain = ["add", "mul", *chain]
        consts = [_const(ex, kind, f"constant of hook {n}") for n, kind in enumerate(chain)]
        where = ex.draw(st.sampled_from(["x", "y"]), "hooked")
        y = x * 2
        target = x if where == "x" else y
        for kind, c in zip(chain, consts, strict=True):
            if kind == "removed":
                target.register_hook(lambda g: g * 100).remove()
            else:
                target.register_hook(_HOOKS[kind][0](c))
        g, g_np = _grad(ex, dtype, device, "backward's gradient")
        what = f"hooks {list(zip(chain, consts, strict=True))} on {where}, {dtype}"
        with attributed_to("grad.hooks_run_in_order", f"backward with {what}"):
            y.backward(g)
        want = _fold(chain, consts, g_np, dtype) if where == "y" else g_np
        want = round_to(want * 2, dtype)
        if where == "x":
            want = _fold(chain, consts, want, dtype)
        expect_values("grad.hooks_run_in_order", x.grad, want, f"x.grad after {what}")


def _fold(chain: list[str], consts: list[float], g: np.ndarray, dtype: str) -> np.ndarray:
    for kind, c in zip(chain, consts, strict=True):
        if kind != "removed":
            g = _HOOKS[kind][1](g, c, dtype)
    return g


@pytest.mark.invariant("grad.post_accumulate_hook")
@given(data=st.data())
def test_post_accumulate_hook_sees_the_accumulated_grad(device, data):
    """A post-accumulate-grad hook on leaf x that records x.grad and scales
    it, then one to three backward calls through y = x * 2: the hook runs
    once each, after the call's gradient was added to .grad. On y (not a
    leaf), registering one raises."""
    ex = Example(data, device)
    for dtype in ex.grad_dtypes():
        x, _ = _leaf(ex, dtype, device, f"x ({dtype})")
        c = _const(ex, "mul", "the hook's factor")
        seen: list = []

        def hook(t, seen=seen, c=c):
            seen.append(None if t.grad is None else t.grad.detach().clone())
            if t.grad is not None:
                t.grad = t.grad * c

        x.register_post_accumulate_grad_hook(hook)
        calls = ex.draw(st.integers(1, 3), "backward calls")
        want = None
        for n in range(calls):
            g, g_np = _grad(ex, dtype, device, f"gradient {n}")
            what = f"backward {n + 1} of {calls}, {dtype}, the hook scales .grad by {c}"
            with attributed_to("grad.post_accumulate_hook", what):
                (x * 2).backward(g)
            step = round_to(g_np * 2, dtype)
            accumulated = step if want is None else round_to(want + step, dtype)
            expect("grad.post_accumulate_hook", len(seen) == n + 1, f"{what}: ran {len(seen)}x")
            expect("grad.post_accumulate_hook", seen[-1] is not None, f"{what}: saw .grad None")
            expect_values("grad.post_accumulate_hook", seen[-1], accumulated, f"{what}: saw")
            want = round_to(accumulated * c, dtype)
            expect_values("grad.post_accumulate_hook", x.grad, want, f"x.grad after {what}")
        y = x * 2
        expect_raises(
            "grad.post_accumulate_hook",
            "POST_HOOK_NON_LEAF",
            lambda y=y: y.register_post_accumulate_grad_hook(lambda t: None),
            "y.register_post_accumulate_grad_hook(...) on y = x * 2",
        )


@pytest.mark.invariant("grad.retain_grad_follows_writes")
@given(data=st.data())
def test_retained_grad_follows_writes_across_backward_calls(device, data):
    """y = x * 2, retained; (y * 3).backward(g) before and after an in-place
    y.mul_(c) on y itself or on y.narrow(0, 0, 2): y.grad adds 3 * g each
    time, the gradient of y's newest version."""
    ex = Example(data, device)
    for dtype in ex.grad_dtypes():
        for through in ("y", "y.narrow(0, 0, 2)"):
            x, _ = _leaf(ex, dtype, device, f"x ({dtype}, {through})")
            c = _const(ex, "mul", "the write's factor")
            y = x * 2
            y.retain_grad()
            want = None
            for n in range(ex.draw(st.integers(1, 2), "backward calls before the write")):
                g, g_np = _grad(ex, dtype, device, f"gradient {n}")
                with attributed_to("grad.retain_grad_follows_writes", "backward"):
                    (y * 3).backward(g, retain_graph=True)
                step = round_to(g_np * 3, dtype)
                want = step if want is None else round_to(want + step, dtype)
            expect_values("grad.retain_grad_follows_writes", y.grad, want, "y.grad, retained")
            (y if through == "y" else y.narrow(0, 0, 2)).mul_(c)
            g, g_np = _grad(ex, dtype, device, "gradient after the write")
            what = f"(y * 3).backward(g) after {through}.mul_({c}), {dtype}"
            with attributed_to("grad.retain_grad_follows_writes", what):
                (y * 3).backward(g, retain_graph=True)
            step = round_to(g_np * 3, dtype)
            want = round_to(want + step, dtype)
            expect_values("grad.retain_grad_follows_writes", y.grad, want, f"y.grad after {what}")


_SECOND = {  # y = f(x): f, f' and f'' on numpy values
    "x.exp()": (lambda x: x.exp(), np.exp, np.exp),
    "x.sin()": (lambda x: x.sin(), np.cos, lambda x: -np.sin(x)),
    "x * x": (lambda x: x * x, lambda x: 2 * x, lambda x: 2 + 0 * x),
}


def _small(dtype: str) -> st.SearchStrategy:
    """Values in [-4, 4], sixteenths: exp, products and second derivatives
    stay finite in float16."""
    part = st.integers(-64, 64).map(lambda n: n / 16)
    return st.builds(complex, part, part) if TORCH_DTYPES[dtype].is_complex else part


@pytest.mark.invariant("grad.create_graph")
@given(data=st.data())
def test_create_graph_gives_gradients_in_a_graph(device, data):
    """y = f(x): torch.autograd.grad(y, x, v, create_graph=True) is f'(x) * v
    and requires grad, and its gradient against w is f''(x) * v * w; so does
    x.grad after y.backward(v, create_graph=True). Without create_graph
    neither requires grad. Values are checked in the real dtypes, flags in
    every dtype that can require grad."""
    ex = Example(data, device)
    for dtype in ex.grad_dtypes():
        real = not TORCH_DTYPES[dtype].is_complex
        name = ex.draw(st.sampled_from(sorted(_SECOND)), f"y ({dtype})")
        f, f1, f2 = _SECOND[name]
        xv, v_np, w_np = (ex.draw(arrays(dtype, (3,), _small), n) for n in ("x", "v", "w"))
        ex.record(dtype)
        x = torch.tensor(xv, dtype=TORCH_DTYPES[dtype], device=device, requires_grad=True)
        v, w = (torch.tensor(a, dtype=TORCH_DTYPES[dtype], device=device) for a in (v_np, w_np))
        what = f"torch.autograd.grad({name}, x, v, create_graph=True), {dtype}"
        with attributed_to("grad.create_graph", what):
            (d,) = torch.autograd.grad(f(x), x, v, create_graph=True)
        expect("grad.create_graph", d.requires_grad, f"{what} does not require grad")
        expect("grad.create_graph", d.grad_fn is not None, f"{what} has no grad_fn")
        if real:
            expect_values("grad.create_graph", d, round_to(f1(xv), dtype) * v_np, what)
        with attributed_to("grad.create_graph", f"backward through {what}"):
            (dd,) = torch.autograd.grad(d, x, w)
        if real:
            want = round_to(f2(xv), dtype) * round_to(v_np * w_np, dtype)
            expect_values("grad.create_graph", dd, want, f"second derivative, {what}")
        with attributed_to("grad.create_graph", f"y.backward(v, create_graph=True), {dtype}"):
            f(x).backward(v, create_graph=True)
        expect("grad.create_graph", x.grad.requires_grad, "x.grad after create_graph")
        with attributed_to("grad.create_graph", f"torch.autograd.grad({name}, x, v)"):
            (plain,) = torch.autograd.grad(f(x), x, v)
        expect("grad.create_graph", not plain.requires_grad, "a gradient without create_graph")
