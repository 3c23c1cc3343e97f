"""Node hooks: torch.autograd.graph.Node.register_prehook and register_hook,
on y = x * 2's grad_fn (MulBackward0) and on x's AccumulateGrad, reached as
y.grad_fn.next_functions[0][0] (y's graph holds it; torch keeps a leaf's
AccumulateGrad only while a graph does). Each example runs every dtype that
can require grad, and both nodes."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from conformance.check import attributed_to, expect, expect_values
from conformance.harness import Example, property_test
from conformance.test_hooks import _const, _grad, _leaf
from oracle.dtypes import round_to

_KINDS = st.sampled_from(["mul", "add", "none", "removed"])
PRE = "grad.node_prehook_replaces_grad_outputs"
POST = "grad.node_hook_replaces_grad_inputs"


def _effect(kind: str, c: float, g: np.ndarray, dtype: str) -> np.ndarray:
    if kind == "mul":
        return round_to(g * c, dtype)
    if kind == "add":
        return round_to(g + c, dtype)
    return g  # None, or removed


def _mapped(kind: str, c: float, seen: list):
    """A hook over a tuple of gradients that records the tuple it got."""

    def each(g):
        if g is None or kind == "none":
            return g
        return g * c if kind == "mul" else g + c

    def hook(*args):
        grads = args[0]  # pre-hook: (grad_outputs,); post hook: (grad_inputs, grad_outputs)
        seen.append(tuple(None if g is None else g.detach().clone() for g in grads))
        return None if kind == "none" else tuple(each(g) for g in grads)

    return hook


def _register(node, pre: bool, kind: str, c: float, seen: list) -> None:
    register = node.register_prehook if pre else node.register_hook
    handle = register(_mapped(kind, c, seen))
    if kind == "removed":
        handle.remove()


def _chain(ex: Example, label: str) -> tuple[list[str], list[float]]:
    chain = ex.draw(st.lists(_KINDS, min_size=1, max_size=3), label)
    consts = [_const(ex, k, f"{label}: constant {n}") for n, k in enumerate(chain)]
    return chain, consts


def _expect_seen(rule: str, seens: list, chain: list, consts: list, g, dtype: str, what: str):
    """Each hook (not removed) saw the result of the ones before; returns the last result."""
    for n, (kind, c) in enumerate(zip(chain, consts, strict=True)):
        if kind == "removed":
            expect(rule, not seens[n], f"{what}: removed hook {n} ran")
            continue
        expect(rule, len(seens[n]) == 1, f"{what}: hook {n} ran {len(seens[n])} times")
        if len(seens[n]) == 1 and seens[n][0] and seens[n][0][0] is not None:
            expect_values(rule, seens[n][0][0], g, f"{what}: what hook {n} ({kind}) saw")
        g = _effect(kind, c, g, dtype)
    return g


@property_test(PRE)
def test_node_prehooks_replace_grad_outputs(device, data):
    """y = x * 2; a tensor hook (+ t) on y or x; one to three pre-hooks on
    y.grad_fn or on x's AccumulateGrad: each gets the gradient after the
    tensor hook (and the pre-hooks before it); what the last returns goes
    through MulBackward0 to x.grad, or is what AccumulateGrad adds."""
    ex = Example(data, device)
    for dtype in ex.grad_dtypes():
        for where in ("MulBackward0", "AccumulateGrad"):
            x, _ = _leaf(ex, dtype, device, f"x ({dtype}, {where})")
            chain, consts = _chain(ex, f"pre-hooks on {where}")
            t = _const(ex, "add", "the tensor hook's term")
            y = x * 2
            node = y.grad_fn if where == "MulBackward0" else y.grad_fn.next_functions[0][0]
            seens: list = [[] for _ in chain]
            for kind, c, seen in zip(chain, consts, seens, strict=True):
                _register(node, True, kind, c, seen)
            (y if where == "MulBackward0" else x).register_hook(lambda g, t=t: g + t)
            g, g_np = _grad(ex, dtype, device, "backward's gradient")
            what = f"pre-hooks {list(zip(chain, consts, strict=True))} on {where}, {dtype}"
            with attributed_to(PRE, f"y.backward(g) with {what}"):
                y.backward(g)
            if where == "MulBackward0":
                got = _expect_seen(
                    PRE, seens, chain, consts, _effect("add", t, g_np, dtype), dtype, what
                )
                want = round_to(got * 2, dtype)
            else:
                arrived = _effect("add", t, round_to(g_np * 2, dtype), dtype)
                want = _expect_seen(PRE, seens, chain, consts, arrived, dtype, what)
            expect_values(PRE, x.grad, want, f"x.grad after {what}")


@property_test(POST)
def test_node_hooks_replace_grad_inputs(device, data):
    """y = x * 2; a pre-hook (* c) on y.grad_fn, then one to three hooks on
    it: each runs after MulBackward0, gets its grad_inputs (those of the hook
    before) and grad_outputs (after the pre-hook); what the last returns is
    what reaches x.grad. Twice through a kept graph: they run each time."""
    ex = Example(data, device)
    for dtype in ex.grad_dtypes():
        x, _ = _leaf(ex, dtype, device, f"x ({dtype})")
        chain, consts = _chain(ex, "hooks on MulBackward0")
        p = _const(ex, "mul", "the pre-hook's factor")
        y = x * 2
        y.grad_fn.register_prehook(lambda go, p=p: tuple(g * p for g in go))
        outputs: list = []
        y.grad_fn.register_hook(lambda gi, go, o=outputs: o.append(go[0].detach().clone()))
        seens: list = [[] for _ in chain]
        for kind, c, seen in zip(chain, consts, seens, strict=True):
            _register(y.grad_fn, False, kind, c, seen)
        want = None
        for n in range(ex.draw(st.integers(1, 2), "backward calls")):
            for seen in seens:
                seen.clear()
            g, g_np = _grad(ex, dtype, device, f"gradient {n}")
            what = f"hooks {list(zip(chain, consts, strict=True))} on MulBackward0, {dtype}"
            with attributed_to(POST, f"y.backward(g, retain_graph=True) {n + 1} with {what}"):
                y.backward(g, retain_graph=True)
            arrived = _effect("mul", p, g_np, dtype)
            expect(POST, len(outputs) == n + 1, f"{what}: the hooks ran {len(outputs)} times")
            expect_values(POST, outputs[-1], arrived, f"{what}: grad_outputs a hook saw")
            got = _expect_seen(
                POST, seens, chain, consts, round_to(arrived * 2, dtype), dtype, what
            )
            want = got if want is None else round_to(want + got, dtype)
            expect_values(POST, x.grad, want, f"x.grad after backward {n + 1}, {what}")
