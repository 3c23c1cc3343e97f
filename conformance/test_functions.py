"""Custom autograd.Functions and saved-tensor hooks. A Function's saved
tensors are version-checked as a built-in op's; mark_dirty returns the input
itself, rebased into the graph (a second input gets its gradient); a
non-differentiable output requires no grad; a returned view may not be
written in place (nor, with an operand that requires grad, a view of a tensor
that requires none). Inside saved_tensors_hooks, pack runs once per saved
tensor, unpack once at backward, and backward computes with what unpack
returned."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st

from conformance.check import attributed_to, expect, expect_no_raise, expect_raises, expect_values
from conformance.differential.functions import namespace
from conformance.harness import Example, rule_test
from oracle.dtypes import round_to
from oracle.nodes import sum_to
from strategies.argspace import Operand, arguments
from strategies.function_args import SPACES
from strategies.layouts import WRITABLE_LAYOUTS

FN = namespace()
_SCALES = st.sampled_from((2.0, -0.5, 3.0))


def _nonleaf(ex: Example, dtypes=None):
    kinds = WRITABLE_LAYOUTS
    return ex.tensor("x", dtypes=dtypes or ex.grad_dtypes(), roles=("nonleaf",), layout_kinds=kinds)


def _g(ex: Example, x, device):
    g = ex.gradient(x)
    return g, torch.tensor(g, dtype=x.tensor.dtype, device=device)


def _root_grad(x, g, local):
    """What x's root accumulates when x's gradient is g times `local`."""
    return round_to(x.grad_for_root(round_to(g * local, x.dtype)), x.dtype)


@rule_test("function.saved_version_check")
def test_function_saved_input_written_makes_backward_raise(ex):
    x = _nonleaf(ex)
    c = ex.draw(_SCALES, "c")
    with attributed_to("function.saved_version_check", "Scale.apply(x, c)"):
        z = FN["Scale"].apply(x.tensor, c)
    written = ex.draw(st.booleans(), "x written in place after the call")
    g, tg = _g(ex, x, ex.device)
    if written:
        x.tensor.mul_(1.5)
        expect_raises(
            "function.saved_version_check",
            "SAVED_TENSOR_MODIFIED",
            lambda: z.backward(tg),
            "backward after the saved input was written",
        )
        return
    with attributed_to("function.saved_version_check", "backward through Scale"):
        z.backward(tg)
    want = _root_grad(x, g, c)
    expect_values("function.saved_version_check", x.root.grad, want, "the gradient")


@rule_test("function.mark_dirty_returns_input")
def test_mark_dirty_returns_the_input_rebased(ex):
    x = _nonleaf(ex)
    c = ex.draw(_SCALES, "c")
    before, t = x.tensor._version, x.tensor
    with attributed_to("function.mark_dirty_returns_input", "MulDirty.apply(x, c)"):
        r = FN["MulDirty"].apply(t, c)
    rule = "function.mark_dirty_returns_input"
    expect(rule, r is t, "the Function did not return its input itself")
    expect(rule, t._version == before + 2, f"version {before} -> {t._version}, not +2")
    expect_values(rule, t, round_to(x.values * c, x.dtype), "x after the write")
    node = t.grad_fn if t._base is None else t._base.grad_fn
    name = type(node).__name__
    want = "MulDirtyBackward" if t._base is None else "CopySlices"
    expect(rule, name == want, f"grad_fn after the write is {name}, not {want}")
    g, tg = _g(ex, x, ex.device)
    with attributed_to(rule, "backward through MulDirty"):
        t.backward(tg)
    want_g = _root_grad(x, g, c)
    expect_values(rule, x.root.grad, want_g, "the gradient")


@rule_test("function.mark_dirty_returns_input")
def test_mark_dirty_on_a_leaf_that_requires_grad_raises(ex):
    x = ex.tensor("x", dtypes=ex.grad_dtypes(), roles=("leaf",), layout_kinds=WRITABLE_LAYOUTS)
    expect_raises(
        "function.mark_dirty_returns_input",
        "INPLACE_ON_LEAF",
        lambda: FN["MulDirty"].apply(x.tensor, 2.0),
        "MulDirty.apply(a leaf that requires grad)",
    )


@st.composite
def _broadcastable(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts into `shape` (its trailing dims, some of them 1)."""
    kept = shape[len(shape) - draw(st.integers(0, len(shape))) :]
    return tuple(1 if draw(st.booleans()) else n for n in kept)


@rule_test("function.mark_dirty_returns_input")
def test_mark_dirty_with_a_second_input_that_requires_grad(ex):
    """AddDirty.apply(x, y, c): x.add_(y * c) marked dirty. x itself comes back,
    its version up twice and y's unchanged; its history is the Function's node
    (its base's CopySlices, for a view), also when x required no grad; backward
    hands x's root g and y g * c, summed to y's shape."""
    x = ex.tensor(
        "x", dtypes=ex.grad_dtypes(), roles=("nonleaf", "plain"), layout_kinds=WRITABLE_LAYOUTS
    )
    y = ex.tensor(
        "y", dtypes=(x.dtype,), roles=("leaf",), shape=ex.draw(_broadcastable(x.shape), "y's shape")
    )
    (c,) = ex.draw(arguments(SPACES["fn_add_dirty_"], Operand(x.shape)), "c")
    rule = "function.mark_dirty_returns_input"
    t, before, y_before = x.tensor, x.tensor._version, y.tensor._version
    with attributed_to(rule, "AddDirty.apply(x, y, c)"):
        r = FN["AddDirty"].apply(t, y.tensor, c)
    expect(rule, r is t, "the Function did not return its input itself")
    expect(rule, t._version == before + 2, f"version {before} -> {t._version}, not +2")
    expect(rule, y.tensor._version == y_before, f"y's version moved to {y.tensor._version}")
    scaled = round_to(y.values * c, x.dtype)
    expect_values(rule, t, round_to(x.values + scaled, x.dtype), "x after the write")
    node = t.grad_fn if t._base is None else t._base.grad_fn
    name = type(node).__name__
    want = "AddDirtyBackward" if t._base is None else "CopySlices"
    expect(rule, name == want, f"grad_fn after the write is {name}, not {want}")
    expect(rule, t.requires_grad, "x does not require grad after the Function")
    g, tg = _g(ex, x, ex.device)
    with attributed_to(rule, "backward through AddDirty"):
        t.backward(tg)
    if x.requires_grad:
        expect_values(rule, x.root.grad, _root_grad(x, g, 1), "x's root's gradient")
    expect(rule, y.tensor.grad is not None, "y, which requires grad, got no gradient")
    want_y = round_to(sum_to(round_to(g * c, x.dtype), y.shape).reshape(y.shape), x.dtype)
    expect_values(rule, y.tensor.grad, want_y, "y's gradient, g * c summed to its shape")


@rule_test("function.mark_dirty_returns_input")
def test_mark_dirty_with_a_second_input_on_a_leaf_that_requires_grad_raises(ex):
    x = ex.tensor("x", dtypes=ex.grad_dtypes(), roles=("leaf",), layout_kinds=WRITABLE_LAYOUTS)
    y = ex.tensor("y", dtypes=(x.dtype,), roles=("leaf", "plain"), shape=x.shape)
    expect_raises(
        "function.mark_dirty_returns_input",
        "INPLACE_ON_LEAF",
        lambda: FN["AddDirty"].apply(x.tensor, y.tensor, 2.0),
        "AddDirty.apply(a leaf that requires grad, y, 2.0)",
    )


@rule_test("function.backward_none_gradient")
def test_backward_returning_none_leaves_that_input_without_a_gradient(ex):
    """AddNoGrad.apply(a, b, which): a + b, its backward returning None for input
    `which`. Behind that input a leaf q, q * 2 (a built-in node passes the undefined
    gradient on) or Scale.apply(q, 2) (its node gets zeros): q's .grad stays as it
    was (None, or a value set before), or gets zeros; the other input's leaf p gets g
    all the same; autograd.grad(allow_unused=True) gives None (zeros behind Scale)."""
    p = ex.tensor("p", dtypes=ex.grad_dtypes(), roles=("leaf",))
    q = ex.tensor("q", dtypes=(p.dtype,), roles=("leaf",), shape=p.shape)
    (which,) = ex.draw(arguments(SPACES["fn_none_grad"], Operand(p.shape)), "which")
    behind = ex.draw(st.sampled_from(("leaf", "mul", "Scale")), "behind the None input")
    rule = "function.backward_none_gradient"
    qt = q.tensor
    if ex.draw(st.booleans(), "q.grad set before"):
        qt.grad = torch.ones_like(qt)
    before = None if qt.grad is None else np.ones(q.shape)
    q_in = {"leaf": lambda: qt, "mul": lambda: qt * 2, "Scale": lambda: FN["Scale"].apply(qt, 2.0)}
    fed = q_in[behind]()
    a, b = (fed, p.tensor) if which == 0 else (p.tensor, fed)
    with attributed_to(rule, f"AddNoGrad.apply(a, b, {which})"):
        z = FN["AddNoGrad"].apply(a, b, which)
    expect(rule, z.requires_grad, "the output does not require grad")
    g, tg = _g(ex, p, ex.device)
    if ex.draw(st.booleans(), "autograd.grad (else backward)"):
        with attributed_to(rule, "torch.autograd.grad(z, (p, q), g, allow_unused=True)"):
            gp, gq = torch.autograd.grad(z, (p.tensor, qt), tg, allow_unused=True)
        expect_values(rule, gp, round_to(g, p.dtype), "p's gradient")
        if behind == "Scale":
            expect(rule, gq is not None, "q's gradient behind Scale is None, not zeros")
            expect_values(rule, gq, np.zeros(q.shape), "q's gradient behind Scale")
        else:
            expect(rule, gq is None, f"q's gradient is {gq}, not None")
        return
    with attributed_to(rule, "z.backward(g)"):
        z.backward(tg)
    expect_values(rule, p.tensor.grad, round_to(g, p.dtype), "p's gradient")
    if behind == "Scale":  # zeros: added to what was there
        expect(rule, qt.grad is not None, "q.grad behind Scale is None, not zeros")
        want = np.zeros(q.shape) if before is None else before
        expect_values(rule, qt.grad, want, "q.grad behind Scale")
    elif before is None:
        expect(rule, qt.grad is None, f"q.grad is {qt.grad}, not None")
    else:
        expect(rule, qt.grad is not None, "q.grad set before is gone")
        expect_values(rule, qt.grad, before, "q.grad, set before")


@rule_test("function.non_differentiable_output")
def test_non_differentiable_output_requires_no_grad(ex):
    x = ex.tensor("x", dtypes=ex.dtypes(("float",)), roles=("leaf", "nonleaf", "view"))
    with attributed_to("function.non_differentiable_output", "SignND.apply(x)"):
        z = FN["SignND"].apply(x.tensor)
    rule = "function.non_differentiable_output"
    expect(rule, not z.requires_grad, "the non-differentiable output requires grad")
    expect(rule, z.grad_fn is None, f"it has grad_fn {z.grad_fn}")
    expect_values(rule, z, round_to(np.sign(x.values), x.dtype), "its values")


@rule_test("function.view_output")
def test_view_output_cannot_be_written(ex):
    x = _nonleaf(ex)
    rule = "function.view_output"
    with attributed_to(rule, "ViewFn.apply(x)"):
        v = FN["ViewFn"].apply(x.tensor)
    base = x.tensor if x.tensor._base is None else x.tensor._base
    expect(rule, v._base is base, "the output is not a view of x's base")
    expect(rule, type(v.grad_fn).__name__ == "ViewFnBackward", f"grad_fn {v.grad_fn}")
    if ex.draw(st.booleans(), "write the output (else its input)"):
        expect_raises(rule, "CUSTOM_FUNCTION_VIEW", lambda: v.mul_(2), "v.mul_(2)")
        return
    x.tensor.mul_(2)
    expect_raises(rule, "CUSTOM_FUNCTION_VIEW", lambda: v.grad_fn, "v.grad_fn after x.mul_(2)")


@rule_test("function.view_output")
def test_view_output_of_a_tensor_that_requires_no_grad(ex):
    """ViewFn.apply(x) for x that requires no grad: still a view made in a custom
    Function. Written in place with an operand that requires grad, it raises
    (before writing); once its base is written so, reading its grad_fn raises."""
    x = ex.tensor("x", dtypes=ex.grad_dtypes(), roles=("plain",), layout_kinds=WRITABLE_LAYOUTS)
    rule = "function.view_output"
    with attributed_to(rule, "ViewFn.apply(x)"):
        v = FN["ViewFn"].apply(x.tensor)
    base = x.tensor if x.tensor._base is None else x.tensor._base
    expect(rule, v._base is base, "the output is not a view of x's base")
    expect(rule, not v.requires_grad and v.grad_fn is None, f"it has grad_fn {v.grad_fn}")
    w = torch.tensor(ex.gradient(x, "w"), dtype=x.tensor.dtype, device=ex.device)
    w.requires_grad_()
    op = ex.draw(st.sampled_from(("add_", "mul_", "copy_")), "the write")
    if ex.draw(st.booleans(), "write the output (else its input)"):
        before = v._version
        expect_raises(rule, "CUSTOM_FUNCTION_VIEW", lambda: getattr(v, op)(w), f"v.{op}(w)")
        expect(rule, v._version == before, f"v.{op}(w) bumped the version, then raised")
        expect_values(rule, v, x.values, f"v after the refused v.{op}(w)")
        return
    getattr(x.tensor, op)(w)
    expect(rule, v.requires_grad, f"v does not require grad after x.{op}(w)")
    expect_raises(rule, "CUSTOM_FUNCTION_VIEW", lambda: v.grad_fn, f"v.grad_fn after x.{op}(w)")


@rule_test("saved_hooks.pack_unpack")
def test_saved_tensors_hooks_pack_once_unpack_once(ex):
    x = _nonleaf(ex)
    rule = "saved_hooks.pack_unpack"
    calls = []

    def pack(t):
        calls.append("pack")
        return t * 2

    def unpack(p):
        calls.append("unpack")
        return p * 2

    with attributed_to(rule, "x.sin() under saved_tensors_hooks"):
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            z = x.tensor.sin()
    expect(rule, calls == ["pack"], f"hooks called {calls} when sin saved x")
    g, tg = _g(ex, x, ex.device)
    with attributed_to(rule, "backward"):
        z.backward(tg)
    expect(rule, calls == ["pack", "unpack"], f"hooks called {calls} by the end of backward")
    four_x = round_to(round_to(x.values * 2, x.dtype) * 2, x.dtype)
    # cos is a tensor of x's dtype before it meets g: cosh(96) overflows
    # complex64 to inf, and a zero gradient times inf is nan, as in torch
    want = _root_grad(x, g, np.conj(round_to(np.cos(four_x), x.dtype)))
    expect_values(rule, x.root.grad, want, "the gradient, from sin at unpack's 4 * x")


@rule_test("saved_hooks.pack_unpack")
def test_saved_tensors_hooks_skip_the_version_check(ex):
    x = _nonleaf(ex)
    rule = "saved_hooks.pack_unpack"
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        z = x.tensor.sin()
    x.tensor.mul_(2)  # no version check: backward reads the written values
    g, tg = _g(ex, x, ex.device)
    expect_no_raise(rule, lambda: z.backward(tg), "backward after the hooked saved x was written")
    now = round_to(x.values * 2, x.dtype)
    want = _root_grad(x, g, np.conj(round_to(np.cos(now), x.dtype)))
    expect_values(rule, x.root.grad, want, "the gradient, from sin at the written x")
