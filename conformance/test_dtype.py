"""Only floating and complex tensors can require grad."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from conformance.check import expect, expect_no_raise, expect_raises
from conformance.harness import Example, property_test
from conformance.spellings import Spelling
from strategies.dtypes import DTYPES
from strategies.shapes import nonempty_shapes
from strategies.tensors import TORCH_DTYPES


def _set_attribute(t: torch.Tensor) -> torch.Tensor:
    t.requires_grad = True
    return t


REQUIRE_GRAD = (
    Spelling("x.requires_grad_()", lambda t: t.requires_grad_()),
    Spelling("x.requires_grad_(True)", lambda t: t.requires_grad_(True)),
    Spelling("x.requires_grad = True", _set_attribute),
    Spelling(
        "torch.tensor(values, dtype=x.dtype, requires_grad=True)",
        lambda t: torch.tensor(t.tolist(), dtype=t.dtype, device=t.device, requires_grad=True),
    ),
    Spelling(
        "torch.zeros(x.shape, dtype=x.dtype, requires_grad=True)",
        lambda t: torch.zeros(t.shape, dtype=t.dtype, device=t.device, requires_grad=True),
    ),
    Spelling(
        "torch.empty_like(x, requires_grad=True)", lambda t: torch.empty_like(t, requires_grad=True)
    ),
)


@property_test("dtype.only_float_complex_require_grad")
def test_only_floating_and_complex_can_require_grad(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=("plain",), layout_kinds=("contiguous",))
    spelling = ex.draw(st.sampled_from(REQUIRE_GRAD), "spelling")
    if DTYPES[x.dtype].can_require_grad:
        t = expect_no_raise(
            "dtype.only_float_complex_require_grad", lambda: spelling(x.tensor), f"{spelling}"
        )
        expect(
            "dtype.only_float_complex_require_grad",
            t.requires_grad and t.dtype == TORCH_DTYPES[x.dtype],
            f"{spelling} on {x.dtype} gave requires_grad={t.requires_grad}, dtype {t.dtype}",
        )
        return
    expect_raises(
        "dtype.only_float_complex_require_grad",
        "DTYPE_CANNOT_REQUIRE_GRAD",
        lambda: spelling(x.tensor),
        f"{spelling} on a {x.dtype} tensor",
    )
    expect(
        "dtype.only_float_complex_require_grad",
        not x.tensor.requires_grad,
        f"a {x.dtype} tensor requires grad after the refused {spelling}",
    )


_INTO_INT = (
    Spelling("x.fill_(v)", lambda x, v: x.fill_(v)),
    Spelling("x[...] = v", lambda x, v: x.__setitem__(Ellipsis, v)),
    Spelling("x[:1] = v", lambda x, v: x.__setitem__(slice(None, 1), v)),
    Spelling("x[0] = v", lambda x, v: x.__setitem__(0, v)),
    Spelling("x.copy_(v)", lambda x, v: x.copy_(v)),
)


@property_test("dtype.inplace_keeps_int_out_of_graph")
def test_inplace_write_from_grad_value_keeps_integers_out_of_graph(device, data):
    ex = Example(data, device)
    x = ex.tensor(
        "x",
        roles=("plain",),
        dtypes=ex.dtypes(("int", "bool")),
        layout_kinds=("contiguous",),
        shapes=nonempty_shapes(min_dims=1),
    )
    source = ex.tensor("v", roles=("leaf",), dtypes=ex.grad_dtypes(), shape=())
    ex.record(source.dtype)
    write = ex.draw(st.sampled_from(_INTO_INT), "write")
    try:
        write(x.tensor, source.tensor)
    except RuntimeError:
        return  # refusing the write keeps the rule too
    expect(
        "dtype.inplace_keeps_int_out_of_graph",
        not x.tensor.requires_grad and x.tensor.grad_fn is None,
        f"{write} with v a {source.dtype} scalar that requires grad left the {x.dtype} tensor "
        f"with requires_grad={x.tensor.requires_grad}, grad_fn={x.tensor.grad_fn}",
    )
