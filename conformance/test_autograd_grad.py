"""torch.autograd.grad: gradients returned, not accumulated. It computes the
gradient of an output with respect to the inputs asked for and hands it back;
every tensor's .grad stays as it was, and an input the output does not depend
on gets None (with allow_unused)."""

from __future__ import annotations

import warnings
from functools import cache

import numpy as np
import torch
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.check import attributed_to, expect, expect_raises, expect_values
from conformance.harness import rule_test
from conformance.saving import draw_scenario
from oracle.dtypes import round_to
from strategies.argspace import Operand, arguments, keywords
from strategies.dtypes import DTYPES, arrays, elements, small_elements
from strategies.gradapi_args import SPACES
from strategies.tensors import GRAD_ROLES, to_numpy


def _tensor(values: np.ndarray, like) -> torch.Tensor:
    """values as a tensor of like's dtype and device (like: a TensorCase or a tensor)."""
    t = getattr(like, "tensor", like)
    return torch.tensor(values, dtype=t.dtype, device=t.device)


_CHAINS = (  # y from x, and dy/dx as a factor of the incoming gradient
    ("x * {0}", lambda x, s: x * s, lambda s: s),
    ("(x + 1) * {0}", lambda x, s: (x + 1) * s, lambda s: s),
    ("x.neg() * {0}", lambda x, s: x.neg() * s, lambda s: -s),
    ("x.clone().mul_({0})", lambda x, s: x.clone().mul_(s), lambda s: s),
)


@rule_test("grad.autograd_grad_returns")
def test_autograd_grad_returns_the_gradient_and_leaves_grad_alone(ex):
    x = ex.tensor("x", roles=GRAD_ROLES)
    name, chain, factor = ex.draw(st.sampled_from(_CHAINS), "y from x")
    scale = ex.draw(st.integers(-3, 3), "scale")
    y = chain(x.tensor, scale)
    # .grad as backward left it, or None
    if ex.draw(st.booleans(), "a backward first"):
        (x.tensor * 1).backward(torch.ones_like(x.tensor), retain_graph=True)
    before = None if x.root.grad is None else x.root.grad.clone()
    g = ex.gradient(x)
    wrt = ex.draw(st.sampled_from(["x", "its leaf"]), "with respect to")
    target = x.tensor if wrt == "x" else x.root
    other = torch.zeros((), dtype=x.tensor.dtype, device=ex.device, requires_grad=True)
    with attributed_to("grad.autograd_grad_returns", f"torch.autograd.grad({name})"):
        got, unused = torch.autograd.grad(
            y,
            (target, other),
            torch.tensor(g, dtype=x.tensor.dtype, device=ex.device),
            allow_unused=True,
        )
    want = round_to(g * factor(scale), x.dtype)
    if wrt == "its leaf":
        want = round_to(x.grad_for_root(want), x.dtype)
    expect("grad.autograd_grad_returns", got is not None, f"no gradient for {wrt}")
    expect_values("grad.autograd_grad_returns", got, want, f"d({name.format(scale)})/d{wrt}")
    expect("grad.autograd_grad_returns", unused is None, f"an unused input got {unused}")
    after = x.root.grad
    same = (before is None and after is None) or (
        before is not None and after is not None and torch.equal(before, after)
    )
    expect("grad.autograd_grad_returns", same, f"the leaf's .grad went from {before} to {after}")
    expect("grad.autograd_grad_returns", other.grad is None, "the unused input got a .grad")


@rule_test("grad.autograd_grad_returns")
def test_autograd_grad_with_respect_to_a_tensor_without_grad_raises(ex):
    x = ex.tensor("x", roles=GRAD_ROLES)
    plain = torch.ones((), dtype=x.tensor.dtype, device=ex.device)
    y = (x.tensor * 2).sum() + plain
    expect_raises(
        "grad.autograd_grad_returns",
        "INPUT_NO_GRAD",
        lambda: torch.autograd.grad(y, plain, torch.ones_like(y)),
        "torch.autograd.grad(y, a tensor that does not require grad)",
    )


@rule_test("grad.autograd_grad_returns", "grad.backward_twice_raises")
def test_autograd_grad_flags_unused_inputs_and_the_graph(ex):
    """torch.autograd.grad(y, (x, unused), g) with allow_unused and retain_graph
    each True, False or left out: None for the unused input with
    allow_unused=True, an error without it; the graph kept for a second call
    with retain_graph=True only."""
    s = draw_scenario(ex)
    unused = torch.zeros((), dtype=s.y.dtype, device=ex.device, requires_grad=True)
    operand = Operand(tuple(s.y.shape))
    retain, allow = ex.draw(arguments(SPACES["autograd_grad"], operand), "retain, allow_unused")
    flags = keywords(retain_graph=retain, allow_unused=allow)
    call = f"torch.autograd.grad({s.op.name}, (x, unused), g, {retain=}, {allow=})"
    if not allow:
        expect_raises(
            "grad.autograd_grad_returns",
            "UNUSED_INPUT",
            lambda: torch.autograd.grad(s.y, (s.x.tensor, unused), s.gradient, **flags),
            call,
        )
        return
    with attributed_to("grad.autograd_grad_returns", call):
        got, none = torch.autograd.grad(s.y, (s.x.tensor, unused), s.gradient, **flags)
    expect("grad.autograd_grad_returns", none is None, f"{call} gave the unused input {none}")
    expect("grad.autograd_grad_returns", got is not None, f"{call} gave x no gradient")
    again = lambda: torch.autograd.grad(s.y, s.x.tensor, s.gradient)[0]  # noqa: E731
    if retain is not True:  # the graph is freed: y's node saved a tensor (s.op saves one)
        expect_raises("grad.backward_twice_raises", "BACKWARD_TWICE", again, f"again after {call}")
        return
    with attributed_to("grad.autograd_grad_returns", f"the same call again after {call}"):
        second = again()
    expect_values("grad.autograd_grad_returns", second, to_numpy(got), f"again after {call}")
    leaf_grad = s.x.root.grad
    expect("grad.autograd_grad_returns", leaf_grad is None, "autograd.grad set the leaf's .grad")


@rule_test("grad.assign_checks")
def test_assigning_grad_checks_shape_and_dtype(ex):
    x = ex.tensor("x", roles=GRAD_ROLES)
    leaf = x.root
    how = ex.draw(st.sampled_from(["matching", "another shape", "another dtype"]), "new .grad")
    shape, dtype = tuple(leaf.shape), leaf.dtype
    if how == "another shape":
        shape = (*shape, 2) if ex.draw(st.booleans(), "longer") or not shape else shape[1:]
    elif how == "another dtype":
        dtype = ex.draw(st.sampled_from([torch.float64, torch.float32, torch.int64]), "dtype")
        if dtype == leaf.dtype:
            dtype = torch.complex64 if not dtype.is_complex else torch.float32
    g = None
    if how != "another shape":
        values = hnp.arrays(DTYPES[x.dtype].compute_dtype, shape, elements=elements(x.dtype))
        g = ex.draw(values, "the new .grad")
    new = (
        torch.tensor(g, dtype=leaf.dtype, device=ex.device).to(dtype)
        if g is not None
        else torch.ones(shape, dtype=dtype, device=ex.device)
    )
    if how != "matching":
        expect_raises(
            "grad.assign_checks",
            "GRAD_ASSIGN_MISMATCH",
            lambda: setattr(leaf, "grad", new),
            f"x.grad = a tensor of {how} ({tuple(new.shape)}, {new.dtype})",
        )
        expect("grad.assign_checks", leaf.grad is None, f"a refused .grad was kept: {leaf.grad}")
        return
    leaf.grad = new
    expect("grad.assign_checks", leaf.grad is new, "x.grad is not the tensor assigned to it")
    extra = ex.gradient(x, "backward's gradient")
    with attributed_to("grad.assign_checks", "backward after assigning .grad"):
        x.tensor.backward(torch.tensor(extra, dtype=x.tensor.dtype, device=ex.device))
    want = round_to(g + round_to(x.grad_for_root(extra), x.dtype), x.dtype)
    expect_values("grad.assign_checks", leaf.grad, want, "the assigned .grad plus backward's")


# y = x * 1 (or x.clone()); a write into the view y[idx], as h on its elements
# (h, h', h'' on numpy values): the write's CopySlices is what create_graph
# must build a graph through. mul_ by x's own elements makes y[idx] x * x
_VIEW_WRITES = {
    "y[idx].sin_()": (
        lambda y, x, i: y[i].sin_(),
        (np.sin, np.cos, lambda v: -np.sin(v)),
    ),
    "y[idx].mul_(x[idx])": (
        lambda y, x, i: y[i].mul_(x[i]),
        (lambda v: v * v, lambda v: 2 * v, lambda v: 2 + 0 * v),
    ),
    "y[idx].copy_(x[idx].cos())": (
        lambda y, x, i: y[i].copy_(x[i].cos()),
        (np.cos, lambda v: -np.sin(v), lambda v: -np.cos(v)),
    ),
}


@cache  # one strategy per shape (Hypothesis validates each new one on its first draw)
@st.composite
def _view_index(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple:
    """A basic index whose result is a view with at least one element: y[...],
    a slice along one dimension, or one entry of one dimension."""
    if not shape:
        return (Ellipsis,)
    dim = draw(st.integers(0, len(shape) - 1))
    size, before = shape[dim], (slice(None),) * dim
    kind = draw(st.sampled_from(["...", "slice", "select"]))
    if kind == "...":
        return (Ellipsis,)
    start = draw(st.integers(0, size - 1))
    if kind == "select":
        return (*before, start)
    return (*before, slice(start, draw(st.integers(start + 1, size))))


def _index_source(index: tuple) -> str:
    parts = []
    for item in index:
        if item is Ellipsis:
            parts.append("...")
        elif isinstance(item, slice):
            parts.append(":" if item == slice(None) else f"{item.start}:{item.stop}")
        else:
            parts.append(str(item))
    return ", ".join(parts)


def _write_into_a_view(ex):
    """x (real floating, small values, at least one element), y = x * 1 or
    x.clone(), and a drawn write into a view of y. Returns (x, y, what, h, mask):
    y[mask] holds h(x[mask]), the rest of y is x."""
    x = ex.tensor("x", roles=GRAD_ROLES, dtypes=ex.dtypes(("float",)), values=small_elements)
    assume(x.tensor.numel() > 0)
    index = ex.draw(_view_index(tuple(x.tensor.shape)), "idx")
    name = ex.draw(st.sampled_from(sorted(_VIEW_WRITES)), "the write")
    write, h = _VIEW_WRITES[name]
    copy = ex.draw(st.sampled_from(["x * 1", "x.clone()"]), "y")
    y = x.tensor * 1 if copy == "x * 1" else x.tensor.clone()
    write(y, x.tensor, index)
    mask = np.zeros(x.shape, dtype=bool)
    mask[index] = True
    return x, y, f"y = {copy}; {name.replace('idx', _index_source(index))}", h, mask


def _first_and_second(x, h, mask) -> tuple[np.ndarray, np.ndarray]:
    """dy/dx and d2y/dx2, elementwise, rounded as torch computes them in x's dtype."""
    first = np.where(mask, round_to(h[1](x.values), x.dtype), 1)
    second = np.where(mask, round_to(h[2](x.values), x.dtype), 0)
    return first, second


@rule_test("grad.create_graph")
def test_create_graph_through_a_write_into_a_view(ex):
    """torch.autograd.grad(y, x, v, create_graph=True) through the CopySlices
    of a write into y[idx] is v * h'(x) there (v elsewhere), in a graph of its
    own; the gradient of that against w is v * w * h''(x) there (0 elsewhere)."""
    x, y, what, h, mask = _write_into_a_view(ex)
    v, w = ex.gradient(x, "v"), ex.gradient(x, "w")
    first, second = _first_and_second(x, h, mask)
    call = f"{what}; torch.autograd.grad(y, x, v, create_graph=True)"
    with attributed_to("grad.create_graph", call):
        (d,) = torch.autograd.grad(y, x.tensor, _tensor(v, x), create_graph=True)
    expect("grad.create_graph", d.requires_grad, f"{call} does not require grad")
    expect("grad.create_graph", d.grad_fn is not None, f"{call} has no grad_fn")
    expect_values("grad.create_graph", d, round_to(first * v, x.dtype), call)
    with attributed_to("grad.create_graph", f"torch.autograd.grad(d, x, w) after {call}"):
        (dd,) = torch.autograd.grad(d, x.tensor, _tensor(w, x))
    want = round_to(second * round_to(v * w, x.dtype), x.dtype)
    expect_values("grad.create_graph", dd, want, f"the second derivative, {what}")


@rule_test("grad.create_graph")
def test_backward_create_graph_accumulates_a_gradient_in_a_graph(ex):
    """y.backward(v, create_graph=True) through a write into a view: the leaf's
    .grad (added to what an earlier plain backward left) has a grad_fn, and
    its gradient against w is the second derivative."""
    x, y, what, h, mask = _write_into_a_view(ex)
    leaf = x.root
    v, w = ex.gradient(x, "v"), ex.draw(arrays(x.dtype, tuple(leaf.shape)), "w")
    first, second = _first_and_second(x, h, mask)
    before = np.zeros(tuple(leaf.shape))
    if ex.draw(st.booleans(), "a plain backward first"):
        earlier = ex.gradient(x, "its gradient")
        (x.tensor * 1).backward(_tensor(earlier, x), retain_graph=True)
        before = round_to(x.grad_for_root(earlier), x.dtype)
    call = f"{what}; y.backward(v, create_graph=True)"
    with attributed_to("grad.create_graph", call), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "a reference cycle between the parameter and ..."
        y.backward(_tensor(v, x), create_graph=True)
    g = leaf.grad
    expect("grad.create_graph", g.requires_grad, f"x.grad after {call} does not require grad")
    expect("grad.create_graph", g.grad_fn is not None, f"x.grad after {call} has no grad_fn")
    added = round_to(x.grad_for_root(round_to(first * v, x.dtype)), x.dtype)
    expect_values("grad.create_graph", g, round_to(before + added, x.dtype), f"x.grad, {call}")
    with attributed_to("grad.create_graph", f"torch.autograd.grad(x.grad, x, w) after {call}"):
        (dd,) = torch.autograd.grad(g, leaf, _tensor(w, leaf))
    # w, read at each element of x (x's elements are the leaf's, through a view or * 1)
    w_at_x = w.reshape(-1)[x.index_map.reshape(-1)].reshape(x.shape)
    want = x.grad_for_root(round_to(second * round_to(v * w_at_x, x.dtype), x.dtype))
    want = round_to(want, x.dtype)
    expect_values("grad.create_graph", dd, want, f"the second derivative, {what}")
    leaf.grad = None  # (breaks the cycle between the leaf and its .grad's graph)
