"""Every example of the three articles the project started from, as written
there, on every selected device. The property tests hold the same rules over
generated inputs; these pin the articles' own numbers.

- seed 000: "pytorch中clone()、copy_()、detach()等函数辨析"
- seed 001: "pytorch 中的 .detach() .clone()"
- seed 003: "Pytorch中x.data()与x.detach()的区别"
"""

from __future__ import annotations

import warnings

import pytest
import torch

from conformance.check import expect, expect_no_raise, expect_raises, expect_values

pytestmark = pytest.mark.seed


def leaf(values, device):
    return torch.tensor(values, device=device, requires_grad=True)


@pytest.mark.invariant(
    "clone.new_storage",
    "clone.same_values",
    "clone.result_in_graph",
    "clone.grad_flows_to_source",
    "grad.accumulates_across_backward",
    "grad.leaves_only",
)
def test_seed000_clone(device):
    a = leaf([1.0, 2.0, 3.0], device)
    b = a.clone()
    expect("clone.new_storage", a.data_ptr() != b.data_ptr(), "b = a.clone() has a's data_ptr")
    expect_values("clone.same_values", b, [1.0, 2.0, 3.0], "b = a.clone()")
    expect("clone.result_in_graph", b.grad_fn is not None, "b = a.clone() has no grad_fn")
    c = 2 * a
    d = 3 * b
    c.sum().backward()
    d.sum().backward()
    expect_values("grad.accumulates_across_backward", a.grad, [5.0, 5.0, 5.0], "a.grad")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reading a non-leaf's .grad warns
        expect("grad.leaves_only", b.grad is None, f"b.grad is {b.grad}, not None")


@pytest.mark.invariant(
    "copy.keeps_storage",
    "copy.result_in_graph",
    "copy.grad_flows_to_src",
    "grad.accumulates_across_backward",
)
def test_seed000_copy(device):
    a = leaf([1.0, 2.0, 3.0], device)
    b = torch.empty_like(a).copy_(a)
    expect("copy.result_in_graph", b.grad_fn is not None, "empty_like(a).copy_(a) has no grad_fn")
    expect("copy.keeps_storage", a.data_ptr() != b.data_ptr(), "b shares a's data_ptr")
    c = 2 * a
    d = 3 * b
    c.sum().backward()
    d.sum().backward()
    expect_values("copy.grad_flows_to_src", a.grad, [5.0, 5.0, 5.0], "a.grad")


@pytest.mark.invariant(
    "detach.shares_storage", "detach.never_requires_grad", "detach.blocks_gradient"
)
def test_seed000_detach(device):
    a = leaf([1.0, 2.0, 3.0], device)
    b = a.detach()
    expect("detach.shares_storage", a.data_ptr() == b.data_ptr(), "b = a.detach() moved")
    expect("detach.never_requires_grad", not b.requires_grad, "a.detach() requires grad")
    c = 2 * a
    d = 3 * b
    c.sum().backward()
    expect_values("detach.blocks_gradient", a.grad, [2.0, 2.0, 2.0], "a.grad")
    expect_raises(
        "detach.blocks_gradient", "NO_GRAD_FN", d.sum().backward, "(3 * b).sum().backward()"
    )
    expect_values("detach.blocks_gradient", a.grad, [2.0, 2.0, 2.0], "a.grad after the refusal")


@pytest.mark.invariant("copy.into_grad_leaf_raises", "data.shares_storage", "detach.write_visible")
@pytest.mark.parametrize("init", ["w.data.copy_(a)", "w.detach().copy_(a)"])
def test_seed000_parameter_init(device, init):
    a = torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    w = torch.zeros(4, device=device)
    w.requires_grad = True
    expect_raises("copy.into_grad_leaf_raises", "INPLACE_ON_LEAF", lambda: w.copy_(a), "w.copy_(a)")
    invariant = "data.shares_storage" if init.startswith("w.data") else "detach.write_visible"
    expect_no_raise(invariant, lambda: eval(init, {"w": w, "a": a}), init)
    expect_values(invariant, w, [1.0, 2.0, 3.0, 4.0], f"w after {init}")
    expect(invariant, w.requires_grad and w.is_leaf, f"w is no longer a grad leaf after {init}")


@pytest.mark.invariant("detach.never_requires_grad", "detach.blocks_gradient")
def test_seed001_detach_leaves_graph(device):
    a = leaf([1.0, 1.0], device)
    b = leaf([2.0, 2.0], device)
    (a @ b).backward()
    expect_values("detach.blocks_gradient", a.grad, [2.0, 2.0], "a.grad of a @ b")
    expect_values("detach.blocks_gradient", b.grad, [1.0, 1.0], "b.grad of a @ b")
    a = leaf([1.0, 1.0], device)
    b = leaf([2.0, 2.0], device)
    a_ = a.detach()
    (a_ @ b).backward()
    expect("detach.blocks_gradient", a.grad is None, f"a.grad is {a.grad} after a.detach() @ b")
    expect_values("detach.blocks_gradient", b.grad, [1.0, 1.0], "b.grad of a.detach() @ b")
    expect("detach.never_requires_grad", not a_.requires_grad, "a.detach() requires grad")


@pytest.mark.invariant("detach.write_visible", "detach.shares_storage")
def test_seed001_detach_write_changes_source(device):
    a = leaf([1.0, 1.0], device)
    b = leaf([2.0, 2.0], device)
    a_ = a.detach()
    a_[0] += 2
    expect_values("detach.write_visible", a, [3.0, 1.0], "a after a.detach()[0] += 2")
    (a @ b).backward()
    expect_values("detach.write_visible", a.grad, [2.0, 2.0], "a.grad")
    expect_values("detach.write_visible", b.grad, [3.0, 1.0], "b.grad, from the changed a")


@pytest.mark.invariant("clone.write_isolated", "clone.grad_flows_to_source")
def test_seed001_clone(device):
    a = leaf([1.0, 1.0], device)
    b = leaf([2.0, 2.0], device)
    a_ = a.clone()
    a_[0] += 2
    expect_values("clone.write_isolated", a, [1.0, 1.0], "a after a.clone()[0] += 2")
    (a @ b).backward()
    expect_values("clone.write_isolated", b.grad, [1.0, 1.0], "b.grad of a @ b")
    a = leaf([1.0, 1.0], device)
    b = leaf([2.0, 2.0], device)
    a_ = a.clone()
    a_[0] += 2
    (a_ @ b).backward()
    expect_values("clone.grad_flows_to_source", a.grad, [2.0, 2.0], "a.grad of a_ @ b")
    expect_values("clone.grad_flows_to_source", b.grad, [3.0, 1.0], "b.grad of a_ @ b")


@pytest.mark.invariant(
    "data.shares_storage",
    "data.never_requires_grad",
    "data.write_is_silent",
    "data.write_changes_gradient",
)
def test_seed003_data_write_is_silent(device):
    a = leaf([1.0, 2.0, 3.0], device)
    out = a.tanh()
    c = out.data
    c.zero_()
    expect("data.never_requires_grad", not c.requires_grad, "out.data requires grad")
    expect_values("data.shares_storage", out, [0.0, 0.0, 0.0], "out after out.data.zero_()")
    expect("data.never_requires_grad", out.requires_grad, "out stopped requiring grad")
    expect_no_raise("data.write_is_silent", out.sum().backward, "out.sum().backward()")
    expect_values("data.write_changes_gradient", a.grad, [1.0, 1.0, 1.0], "a.grad")


@pytest.mark.invariant("detach.write_then_backward_raises", "detach.write_visible")
def test_seed003_detach_write_raises(device):
    a = leaf([1.0, 2.0, 3.0], device)
    out = a.tanh()
    c = out.detach()
    c.zero_()
    expect_values("detach.write_visible", out, [0.0, 0.0, 0.0], "out after out.detach().zero_()")
    expect_raises(
        "detach.write_then_backward_raises",
        "SAVED_TENSOR_MODIFIED",
        out.sum().backward,
        "out.sum().backward() after out.detach().zero_()",
    )


@pytest.mark.invariant("detach.blocks_gradient")
@pytest.mark.parametrize("cut", ["x.detach()", "x.data"])
def test_seed003_detached_layer_never_learns(device, cut):
    torch.manual_seed(0)
    layer1 = torch.nn.Linear(3, 4, bias=False).to(device)
    layer2 = torch.nn.Linear(4, 2, bias=False).to(device)
    x = torch.relu(layer1(torch.randn(5, 3, device=device)))
    x = x.detach() if cut == "x.detach()" else x.data
    layer2(x).sum().backward()
    expect(
        "detach.blocks_gradient",
        layer1.weight.grad is None,
        f"the first layer got a gradient through {cut}",
    )
    expect("detach.blocks_gradient", layer2.weight.grad is not None, "the second layer got none")
