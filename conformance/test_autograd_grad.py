"""torch.autograd.grad: gradients returned, not accumulated. It computes the
gradient of an output with respect to the inputs asked for and hands it back;
every tensor's .grad stays as it was, and an input the output does not depend
on gets None (with allow_unused)."""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.check import attributed_to, expect, expect_raises, expect_values
from conformance.harness import Example, property_test
from oracle.dtypes import round_to
from strategies.dtypes import DTYPES, elements
from strategies.tensors import GRAD_ROLES

_CHAINS = (  # y from x, and dy/dx as a factor of the incoming gradient
    ("x * {0}", lambda x, s: x * s, lambda s: s),
    ("(x + 1) * {0}", lambda x, s: (x + 1) * s, lambda s: s),
    ("x.neg() * {0}", lambda x, s: x.neg() * s, lambda s: -s),
    ("x.clone().mul_({0})", lambda x, s: x.clone().mul_(s), lambda s: s),
)


@property_test("grad.autograd_grad_returns")
def test_autograd_grad_returns_the_gradient_and_leaves_grad_alone(device, data):
    ex = Example(data, device)
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
    other = torch.zeros((), dtype=x.tensor.dtype, device=device, requires_grad=True)
    with attributed_to("grad.autograd_grad_returns", f"torch.autograd.grad({name})"):
        got, unused = torch.autograd.grad(
            y,
            (target, other),
            torch.tensor(g, dtype=x.tensor.dtype, device=device),
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


@property_test("grad.autograd_grad_returns")
def test_autograd_grad_with_respect_to_a_tensor_without_grad_raises(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=GRAD_ROLES)
    plain = torch.ones((), dtype=x.tensor.dtype, device=device)
    y = (x.tensor * 2).sum() + plain
    expect_raises(
        "grad.autograd_grad_returns",
        "INPUT_NO_GRAD",
        lambda: torch.autograd.grad(y, plain, torch.ones_like(y)),
        "torch.autograd.grad(y, a tensor that does not require grad)",
    )


@property_test("grad.assign_checks")
def test_assigning_grad_checks_shape_and_dtype(device, data):
    ex = Example(data, device)
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
        torch.tensor(g, dtype=leaf.dtype, device=device).to(dtype)
        if g is not None
        else torch.ones(shape, dtype=dtype, device=device)
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
        x.tensor.backward(torch.tensor(extra, dtype=x.tensor.dtype, device=device))
    want = round_to(g + round_to(x.grad_for_root(extra), x.dtype), x.dtype)
    expect_values("grad.assign_checks", leaf.grad, want, "the assigned .grad plus backward's")
