"""Lazily resolved views: conj() of a complex tensor (and H, mH, adjoint())
sets the conjugate bit on a view instead of computing anything, and
torch._neg_view sets the negative bit. The view shares its input's memory
and version counter, reads through the bit, writes through it, and passes
gradients back through it; resolve_conj() / resolve_neg() materialise the
bit into new memory, or hand back the tensor itself when it has none."""

from __future__ import annotations

import numpy as np
import torch

from conformance.check import attributed_to, expect, expect_values, shares_storage
from conformance.harness import Example, property_test
from strategies.dtypes import arrays

# name, call, (bit, reads: values -> what the view reads), for a complex x
_BIT_VIEWS = (
    ("x.conj()", lambda x: x.conj(), "conj", np.conj),
    ("x.mH", lambda x: x.mH, "conj", lambda a: np.conj(np.swapaxes(a, -1, -2))),
    ("x.adjoint()", lambda x: x.adjoint(), "conj", lambda a: np.conj(np.swapaxes(a, -1, -2))),
    ("x.H", lambda x: x.H, "conj", lambda a: np.conj(a.T)),
    ("torch._neg_view(x)", torch._neg_view, "neg", np.negative),
)


def _fits(name: str, shape: tuple) -> bool:
    if name in ("x.mH", "x.adjoint()"):
        return len(shape) >= 2
    return len(shape) == 2 if name == "x.H" else True


def _bit(t: torch.Tensor, bit: str) -> bool:
    return t.is_conj() if bit == "conj" else t.is_neg()


@property_test("view.conj_lazy")
def test_conj_is_a_view_that_reads_and_writes_through_its_bit(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", dtypes=ex.dtypes(("complex",)), roles=("plain", "nonleaf", "view"))
    base = x.tensor.detach().clone()  # a tensor of its own to write into
    for name, make, bit, reads in _BIT_VIEWS:
        if not _fits(name, x.shape):
            continue
        with attributed_to("view.conj_lazy", name):
            v = make(x.tensor)
        expect("view.conj_lazy", _bit(v, bit), f"{name} of a complex tensor has no {bit} bit")
        expect("view.conj_lazy", shares_storage(v, x.tensor), f"{name} has its own memory")
        expect("view.conj_lazy", v._version == x.tensor._version, f"{name}: its own version")
        expect_values("view.conj_lazy", v, reads(x.values), f"{name} of {x.values}")
        # a write through the view stores the conjugate (negation) of what is written
        w = make(base)
        value = ex.draw(arrays(x.dtype, tuple(w.shape)), f"written through {name}")
        before = base._version
        with torch.no_grad(), attributed_to("view.conj_lazy", f"{name}.copy_(...)"):
            w.copy_(torch.tensor(value, dtype=base.dtype, device=device))
        expect_values("view.conj_lazy", base, _stored(name, value), f"x after {name}.copy_")
        expect(
            "view.conj_lazy",
            base._version > before and w._version == base._version,
            f"versions (x, view) after {name}.copy_: {base._version}, {w._version}",
        )
        expect_values("view.conj_lazy", w, value, f"{name} after {name}.copy_({value})")


def _same(a: np.ndarray) -> np.ndarray:
    return a


def _stored(name: str, value: np.ndarray) -> np.ndarray:
    """What x holds after `value` was written through the view `name` of x."""
    if name == "torch._neg_view(x)":
        return np.negative(value)
    return np.conj(value) if name == "x.conj()" else np.conj(np.swapaxes(value, -1, -2))


@property_test("view.conj_lazy")
def test_conj_passes_the_conjugate_gradient_and_leaves_real_tensors_alone(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", dtypes=ex.grad_dtypes(), roles=("leaf",))
    v = x.tensor.conj()
    if not x.tensor.is_complex():
        expect("view.conj_lazy", v is x.tensor, "conj() of a real tensor is not the tensor")
        expect("view.conj_lazy", not v.is_conj(), "conj() of a real tensor set the bit")
        return
    g = ex.gradient(x)
    with attributed_to("view.conj_lazy", "x.conj().backward(g)"):
        v.backward(torch.tensor(g, dtype=x.tensor.dtype, device=device))
    expect_values("view.conj_lazy", x.tensor.grad, np.conj(g), f"x.grad after x.conj() given {g}")


@property_test("view.conj_resolve")
def test_resolve_materialises_the_bit_in_new_memory(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", dtypes=ex.dtypes(("float", "complex")), roles=("plain", "nonleaf", "view"))
    complex_ = x.tensor.is_complex()
    for name, make, resolve, reads in (
        ("conj", lambda t: t.conj(), lambda t: t.resolve_conj(), np.conj if complex_ else _same),
        ("neg", torch._neg_view, lambda t: t.resolve_neg(), np.negative),
    ):
        plain = resolve(x.tensor)
        expect(
            "view.conj_resolve",
            plain is x.tensor,
            f"resolve_{name}() of a tensor without the bit is not the tensor itself",
        )
        v = make(x.tensor)
        with attributed_to("view.conj_resolve", f"resolve_{name}()"):
            r = resolve(v)
        if not _bit(v, name):  # conj() of a real tensor: x itself
            expect("view.conj_resolve", r is v, f"resolve_{name}() of {name}(x) is not itself")
            continue
        expect("view.conj_resolve", not _bit(r, name), f"resolve_{name}() kept the {name} bit")
        expect(
            "view.conj_resolve",
            not shares_storage(r, x.tensor),
            f"resolve_{name}() of a {name} view shares its memory",
        )
        expect_values("view.conj_resolve", r, reads(x.values), f"resolve_{name}() of {x.values}")
        expect(
            "view.conj_resolve",
            r.requires_grad == x.tensor.requires_grad,
            f"resolve_{name}() requires_grad {r.requires_grad}",
        )
        before = x.tensor._version
        with torch.no_grad():
            r.zero_()
        expect(
            "view.conj_resolve",
            x.tensor._version == before,
            f"writing resolve_{name}()'s result moved x's version",
        )
        expect_values(
            "view.conj_resolve", x.tensor, x.values, f"x after a write into resolve_{name}()"
        )
