"""Ops in general: values, in-place versus out-of-place, shape errors,
requires_grad propagation and gradient formulas. The differential checks
these on every step of its chains; the tests here hold them op by op."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import assume
from hypothesis import strategies as st

from conformance.check import (
    TOLERANCES,
    attributed_to,
    close,
    expect,
    expect_no_raise,
    expect_raises,
    expect_values,
    shares_storage,
    storage_id,
)
from conformance.harness import Example, property_test
from conformance.writes import bumps_for
from oracle.dtypes import round_to
from oracle.tolerances import EPS
from strategies.dtypes import DTYPES, elements, small_elements
from strategies.layouts import WRITABLE_LAYOUTS
from strategies.tensors import GRAD_ROLES, to_numpy


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


@dataclass(frozen=True)
class Unary:
    name: str
    torch: Callable[[torch.Tensor], torch.Tensor]
    value: Callable[[np.ndarray], np.ndarray]
    # derivative at x (holomorphic, or real), given x and the result
    slope: Callable[[np.ndarray, np.ndarray], np.ndarray] | None
    kinds: tuple[str, ...] = ("float", "complex")

    def __repr__(self) -> str:
        return self.name


UNARY: tuple[Unary, ...] = (
    Unary(
        "x.neg()",
        lambda x: x.neg(),
        np.negative,
        lambda x, r: -np.ones_like(x),
        ("float", "complex", "int"),
    ),
    Unary("x.exp()", lambda x: x.exp(), np.exp, lambda x, r: r),
    Unary("x.sin()", lambda x: x.sin(), np.sin, lambda x, r: np.cos(x)),
    Unary("x.cos()", lambda x: x.cos(), np.cos, lambda x, r: -np.sin(x)),
    Unary("x.tanh()", lambda x: x.tanh(), np.tanh, lambda x, r: 1 - r * r),
    Unary("x.sigmoid()", lambda x: x.sigmoid(), _sigmoid, lambda x, r: r * (1 - r)),
    Unary(
        "x.relu()",
        lambda x: x.relu(),
        lambda x: np.maximum(x, 0),
        lambda x, r: x > 0,
        ("float", "int"),
    ),
    Unary("x.abs()", lambda x: x.abs(), np.abs, lambda x, r: np.sign(x), ("float", "int")),
    Unary(
        "x * 3",
        lambda x: x * 3,
        lambda x: x * 3,
        lambda x, r: np.full_like(x, 3),
        ("float", "complex", "int"),
    ),
    Unary(
        "x + 2",
        lambda x: x + 2,
        lambda x: x + 2,
        lambda x, r: np.ones_like(x),
        ("float", "complex", "int"),
    ),
    Unary("x / 4", lambda x: x / 4, lambda x: x / 4, lambda x, r: np.full_like(x, 0.25)),
    Unary("x.pow(2)", lambda x: x.pow(2), np.square, lambda x, r: 2 * x),
    Unary(
        "x.clone()",
        lambda x: x.clone(),
        lambda x: x,
        lambda x, r: np.ones_like(x),
        ("float", "complex", "int", "bool"),
    ),
)


def _unaries(dtype: str) -> tuple[Unary, ...]:
    return tuple(u for u in UNARY if DTYPES[dtype].kind in u.kinds)


def _kernels(ex: Example, dtype: str, backward: bool = False) -> tuple[Unary, ...]:
    """The unary ops of `dtype` this build has kernels for on the example's
    device (with `backward`, their backward too); the others are counted."""
    return tuple(u for u in _unaries(dtype) if ex.has_kernel(u.name, u.torch, (dtype,), backward))


@property_test("ops.values")
def test_ops_compute_their_values(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", values=small_elements)
    for op in _kernels(ex, x.dtype):  # every op on every example: a broken one cannot hide
        with attributed_to("ops.values", str(op)):
            y = op.torch(x.tensor)
        with np.errstate(all="ignore"):
            expected = op.value(x.values)
        out = "float32" if DTYPES[x.dtype].kind == "int" and op.name == "x / 4" else x.dtype
        expect_values("ops.values", y, round_to(expected, out), str(op))


@property_test("ops.inplace_writes_self")
def test_inplace_ops_write_self_and_return_it(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=("plain", "nonleaf"), layout_kinds=WRITABLE_LAYOUTS)
    op = ex.draw(st.sampled_from(bumps_for(x.dtype, device=x.device)), "in-place op")
    before = (storage_id(x.tensor), x.tensor.data_ptr(), tuple(x.tensor.shape))
    with attributed_to("ops.inplace_writes_self", str(op)):
        result = op.apply(x.tensor, ex.draw(elements(x.dtype), "value"))
    after = (storage_id(x.tensor), x.tensor.data_ptr(), tuple(x.tensor.shape))
    expect("ops.inplace_writes_self", after == before, f"{op} moved x: {before} -> {after}")
    if result is not None:  # setitem returns nothing
        expect("ops.inplace_writes_self", result is x.tensor, f"{op} returned another tensor")


@property_test("ops.out_of_place_new_tensor")
def test_out_of_place_ops_leave_inputs_alone(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", values=small_elements)
    for op in _kernels(ex, x.dtype):
        y = op.torch(x.tensor)
        expect("ops.out_of_place_new_tensor", y is not x.tensor, f"{op} returned x itself")
        expect(
            "ops.out_of_place_new_tensor",
            not shares_storage(y, x.tensor),
            f"{op} returned a tensor on x's memory",
        )
        expect_values("ops.out_of_place_new_tensor", x.tensor, x.values, f"x after {op}")


_BINARY = (
    ("x + y", lambda x, y: x + y),
    ("x.mul(y)", lambda x, y: x.mul(y)),
    ("torch.sub(x, y)", lambda x, y: torch.sub(x, y)),
    ("x.add_(y)", lambda x, y: x.add_(y)),
    ("x.copy_(y)", lambda x, y: x.copy_(y)),
)


@property_test("ops.shape_errors")
def test_shapes_that_do_not_broadcast_raise(device, data):
    ex = Example(data, device)
    x = ex.tensor(
        "x",
        roles=("plain",),
        dtypes=ex.dtypes(("float", "complex", "int")),
        layout_kinds=WRITABLE_LAYOUTS,
    )
    sized = [d for d, n in enumerate(x.shape) if n != 1]
    assume(sized)
    dim = ex.draw(st.sampled_from(sized), "dim")
    size = ex.draw(st.integers(0, 5).filter(lambda n: n not in (1, x.shape[dim])), "other size")
    shape = x.shape[:dim] + (size,) + x.shape[dim + 1 :]
    y = torch.zeros(shape, dtype=x.tensor.dtype, device=device)
    name, op = ex.draw(st.sampled_from(_BINARY), "op")
    expect_raises(
        "ops.shape_errors",
        "NOT_BROADCASTABLE",
        lambda: op(x.tensor, y),
        f"{name} with x{list(x.shape)} and y{list(shape)}",
    )


@property_test("grad.requires_grad_propagates")
def test_results_require_grad_when_an_input_does(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", dtypes=ex.grad_dtypes())
    y_grad = ex.draw(st.booleans(), "y requires grad")
    y = torch.ones(x.shape, dtype=x.tensor.dtype, device=device, requires_grad=y_grad)
    binary = [(n, f) for n, f in _BINARY if "_" not in n]
    for name, op in binary:
        z = op(x.tensor, y)
        wanted = x.tensor.requires_grad or y_grad
        expect(
            "grad.requires_grad_propagates",
            (z.requires_grad, z.grad_fn is not None) == (wanted, wanted),
            f"{name} with x.requires_grad={x.tensor.requires_grad}, y.requires_grad={y_grad}: "
            f"requires_grad={z.requires_grad}, grad_fn={z.grad_fn}",
        )
    for op in _kernels(ex, x.dtype):
        z = op.torch(x.tensor)
        wanted = x.tensor.requires_grad
        expect(
            "grad.requires_grad_propagates",
            (z.requires_grad, z.grad_fn is not None) == (wanted, wanted),
            f"{op} of a {x.role} x: requires_grad={z.requires_grad}, grad_fn={z.grad_fn}",
        )


@property_test("grad.formula")
def test_gradients_follow_each_ops_formula(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=GRAD_ROLES, values=small_elements)
    grad = ex.gradient(x)
    for op in (u for u in _kernels(ex, x.dtype, backward=True) if u.slope is not None):
        x.root.grad = None  # each op's gradient on its own
        y = op.torch(x.tensor)
        with attributed_to("grad.formula", f"backward of {op}"):
            y.backward(torch.tensor(grad, dtype=y.dtype, device=device), retain_graph=True)
        with np.errstate(all="ignore"):  # the formulas read the result torch stored
            slope = op.slope(x.values, round_to(op.value(x.values), x.dtype))
        # in the dtype, as torch computes it: a float16 gradient may overflow to inf
        expected = round_to(x.grad_for_root(grad * np.conj(slope)), x.dtype)
        # a formula like 1 - r * r cancels: torch evaluates it in the dtype, so
        # its error is a few units of the size of its terms, not of its value
        rtol, atol = TOLERANCES[x.dtype]
        terms = np.max(np.abs(grad), initial=0) * max(1.0, np.max(np.abs(x.values), initial=0)) ** 2
        tolerance = (rtol, atol + 8 * EPS[x.dtype] * terms)
        got = to_numpy(x.root.grad)
        expect(
            "grad.formula",
            close(got, expected, x.dtype, tolerance),
            f"the gradient of {op} is {got.tolist()!r}, expected {expected.tolist()!r}",
        )


@property_test("grad.requires_grad_flag_on_leaves")
def test_requires_grad_can_only_be_switched_off_on_leaves(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", dtypes=ex.grad_dtypes())
    t = x.tensor
    switch = ex.draw(
        st.sampled_from(["x.requires_grad_(False)", "x.requires_grad = False"]), "spelling"
    )

    def off():
        if switch.startswith("x.requires_grad_"):
            t.requires_grad_(False)
        else:
            t.requires_grad = False

    if t.is_leaf:
        expect_no_raise("grad.requires_grad_flag_on_leaves", off, f"{switch} on a leaf")
        expect("grad.requires_grad_flag_on_leaves", not t.requires_grad, f"{switch} did nothing")
        return
    expect_raises(
        "grad.requires_grad_flag_on_leaves",
        "NONLEAF_REQUIRES_GRAD",
        off,
        f"{switch} on a {x.role} tensor",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expect(
            "grad.requires_grad_flag_on_leaves",
            t.requires_grad and t.grad_fn is not None,
            f"the refused {switch} changed the tensor",
        )
    t.requires_grad_(True)  # switching it on again is allowed and changes nothing
    expect("grad.requires_grad_flag_on_leaves", t.grad_fn is not None, "requires_grad_(True)")
