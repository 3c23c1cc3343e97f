"""Views that read memory as another dtype: view_as_real(x), x.real and x.imag
of a complex x, and view_as_complex(x) of float pairs. They share x's memory
and version counter, with the shapes and strides tensor_view.rst and the
docstrings give; a write through one is a write into x, and gradients pass
between the parts and the complex numbers. x.real of a real x is x, x.imag of
one raises, and view_as_real refuses a tensor with the conjugate bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume
from hypothesis import strategies as st

from conformance.check import (
    attributed_to,
    expect,
    expect_raises,
    expect_values,
    shares_storage,
)
from conformance.harness import Example, property_test
from strategies.dtypes import arrays
from strategies.tensors import DTYPE_NAMES, TORCH_DTYPES

RULE = "view.complex_reinterprets"


def _pairs(a: np.ndarray) -> np.ndarray:
    return np.stack([a.real, a.imag], axis=-1)


# name, call, expected (shape, strides, offset) from x's, values from x's
_OF_COMPLEX = (
    (
        "torch.view_as_real(x)",
        torch.view_as_real,
        lambda sh, st_, o: (sh + (2,), tuple(2 * s for s in st_) + (1,), 2 * o),
        _pairs,
    ),
    (
        "x.real",
        lambda x: x.real,
        lambda sh, st_, o: (sh, tuple(2 * s for s in st_), 2 * o),
        np.real,
    ),
    (
        "x.imag",
        lambda x: x.imag,
        lambda sh, st_, o: (sh, tuple(2 * s for s in st_), 2 * o + 1),
        np.imag,
    ),
)


def _layout(t: torch.Tensor) -> tuple:
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


@property_test(RULE)
def test_views_of_a_complex_tensor_read_its_parts(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", dtypes=ex.dtypes(("complex",)), roles=("plain", "nonleaf", "view"))
    for name, make, layout, reads in _OF_COMPLEX:
        with attributed_to(RULE, name):
            v = make(x.tensor)
        expect(RULE, shares_storage(v, x.tensor), f"{name} has its own memory")
        expect(RULE, v._version == x.tensor._version, f"{name} starts at another version")
        expect(RULE, not v.is_complex(), f"{name} is {v.dtype}")
        want = layout(*_layout(x.tensor))  # (an empty x's too: the same arithmetic)
        expect(RULE, _layout(v) == want, f"{name}: {_layout(v)}, expected {want}")
        expect_values(RULE, v, reads(x.values), f"{name} of {x.values}")
    # a write through each is a write into x, seen by x's version counter
    base = x.tensor.detach().clone()
    values = x.values.copy()
    for name, make, _, _reads in _OF_COMPLEX:
        v = make(base)
        new = ex.draw(arrays(DTYPE_NAMES[v.dtype], tuple(v.shape)), f"into {name}")
        before = base._version
        with torch.no_grad(), attributed_to(RULE, f"{name}.copy_(...)"):
            v.copy_(torch.tensor(new, dtype=v.dtype, device=device))
        if name == "x.real":
            values = new + 1j * values.imag
        elif name == "x.imag":
            values = values.real + 1j * new
        else:
            values = new[..., 0] + 1j * new[..., 1]
        expect_values(RULE, base, values, f"x after a write through {name}")
        expect(
            RULE,
            base._version > before and v._version == base._version,
            f"versions (x, {name}) after the write: {base._version}, {v._version}",
        )


@property_test(RULE)
def test_view_as_complex_reads_float_pairs(device, data):
    ex = Example(data, device)
    floats = tuple(d for d in ex.dtypes(("float",)) if d in ("float32", "float64"))
    if not floats:
        pytest.skip("no float32 or float64 in this run")
    shapes = st.lists(st.integers(0, 3), max_size=2).map(lambda s: tuple(s) + (2,))
    x = ex.tensor("x", dtypes=floats, shapes=shapes, roles=("plain", "nonleaf", "view"))
    shape, strides, offset = _layout(x.tensor)
    # (a dim of size 1 may have any stride: not checked by torch 2.13, halved rounding down;
    # an empty x's strides are checked as any other's, a dim of size 0 included)
    even = not any(s % 2 for s, n in zip(strides[:-1], shape, strict=False) if n != 1)
    fits = strides[-1] == 1 and even and offset % 2 == 0
    if not fits:
        expect_raises(
            RULE,
            "COMPLEX_LAYOUT",
            lambda: torch.view_as_complex(x.tensor),
            f"view_as_complex of strides {strides}, offset {offset}",
        )
        return
    with attributed_to(RULE, "torch.view_as_complex(x)"):
        c = torch.view_as_complex(x.tensor)
    expect(RULE, shares_storage(c, x.tensor), "view_as_complex(x) has its own memory")
    expect(RULE, c._version == x.tensor._version, "view_as_complex(x): another version")
    want = (shape[:-1], tuple(s // 2 for s in strides[:-1]), offset // 2)
    expect(RULE, _layout(c) == want, f"view_as_complex(x): {_layout(c)}, expected {want}")
    expect_values(RULE, c, x.values[..., 0] + 1j * x.values[..., 1], "view_as_complex(x)")
    if any(s == 0 and n > 1 for n, s in zip(shape, strides, strict=True)):
        return  # an expanded x: a write into memory its elements share is refused
    before = x.tensor._version
    with torch.no_grad():
        c.mul_(2)
    expect_values(RULE, x.tensor, 2 * x.values, "x after view_as_complex(x).mul_(2)")
    expect(RULE, x.tensor._version > before, "x's version after a write through view_as_complex")


@property_test(RULE)
def test_what_is_refused_and_what_is_the_tensor_itself(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=("plain", "nonleaf"))
    if not x.tensor.is_complex():
        expect(RULE, x.tensor.real is x.tensor, f"x.real of a {x.dtype} tensor is not x")
        expect_raises(RULE, "NOT_COMPLEX", lambda: x.tensor.imag, f"x.imag of a {x.dtype} tensor")
        return
    expect_raises(
        RULE,
        "UNRESOLVED_CONJ",
        lambda: torch.view_as_real(x.tensor.conj()),
        "torch.view_as_real(x.conj())",
    )
    neg_imag = x.tensor.conj().imag  # the conjugate's imaginary part: a negated view
    expect(RULE, shares_storage(neg_imag, x.tensor), "x.conj().imag has its own memory")
    expect_values(RULE, neg_imag, -x.values.imag, "x.conj().imag")


@property_test(RULE)
def test_gradients_pass_between_parts_and_complex_numbers(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", dtypes=ex.dtypes(("complex",)), roles=("leaf",))
    name = ex.draw(st.sampled_from(["view_as_real", "real", "imag"]), "view")
    assume(x.tensor.numel())  # backward through view_as_real of an empty tensor raises
    v = torch.view_as_real(x.tensor) if name == "view_as_real" else getattr(x.tensor, name)
    real_dtype = DTYPE_NAMES[v.dtype]
    g = ex.draw(arrays(real_dtype, tuple(v.shape)), "gradient")
    with attributed_to(RULE, f"{name} backward"):
        v.backward(torch.tensor(g, dtype=v.dtype, device=device))
    want = {"view_as_real": lambda: g[..., 0] + 1j * g[..., 1]}
    want |= {"real": lambda: g + 0j, "imag": lambda: 1j * g}
    expect_values(RULE, x.tensor.grad, want[name](), f"x.grad through {name} given {g}")
    floats = tuple(d for d in ex.dtypes(("float",)) if d in ("float32", "float64"))
    if floats:  # and back: view_as_complex's gradient is the pairs of its gradient
        real = ex.draw(st.sampled_from(floats), "float dtype")
        pairs = ex.draw(arrays(real, (2, 2)), "pairs")
        leaf = torch.tensor(pairs, dtype=TORCH_DTYPES[real], device=device, requires_grad=True)
        c = torch.view_as_complex(leaf)
        gc = ex.draw(arrays(DTYPE_NAMES[c.dtype], (2,)), "its gradient")
        with attributed_to(RULE, "view_as_complex backward"):
            c.backward(torch.tensor(gc, dtype=c.dtype, device=device))
        expect_values(RULE, leaf.grad, _pairs(gc), f"grad through view_as_complex given {gc}")
