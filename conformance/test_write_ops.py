"""Writes the core ops lack: `out=` arguments (and, below, resize_, set_ and
the _foreach_ in-place ops). op(..., out=o) writes the result into o and
returns o: o's own memory, its version up, resized when its shape differs
(with a warning unless it was empty), the result cast into o's dtype where
torch.can_cast allows it, and never recorded by autograd: in grad mode an
argument that requires grad is refused. Expected values come from NumPy at
the dtype the op computes in, and are compared at that dtype's tolerance
(a complex64 result stored in complex128 carries complex64's rounding)."""

from __future__ import annotations

import warnings

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.check import close, expect, expect_raises, storage_id
from conformance.harness import Example, property_test
from oracle.dtypes import kind, round_to
from oracle.write_rows import SAME_DTYPE, can_cast
from strategies.dtypes import DTYPES, elements
from strategies.tensors import TORCH_DTYPES, to_numpy

RESIZED = "An output with one or more elements was resized"

# name: (torch call with out=, NumPy formula, arity, dtype kinds of the inputs)
OPS = {
    "add": (lambda a, b, out: torch.add(a, b, out=out), np.add, 2, ("float", "complex", "int")),
    "mul": (lambda a, b, out: torch.mul(a, b, out=out), np.multiply, 2, ("float", "complex")),
    "exp": (lambda a, b, out: torch.exp(a, out=out), np.exp, 1, ("float", "complex")),
    "neg": (lambda a, b, out: torch.neg(a, out=out), np.negative, 1, ("float", "complex", "int")),
}
_SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)


def _values(ex: Example, shape, dtype: str, label: str) -> np.ndarray:
    bounded = elements(dtype)
    if kind(dtype) in ("float", "complex"):  # exp of moderate values: no overflow to compare
        bounded = bounded.filter(lambda v: abs(v) < 8)
    return ex.draw(hnp.arrays(DTYPES[dtype].compute_dtype, shape, elements=bounded), label)


def _case(ex: Example, label: str = "op"):
    """(name, call, inputs as tensors, the result as NumPy computes it, its dtype)."""
    name = ex.draw(st.sampled_from(sorted(OPS)), label)
    call, formula, arity, kinds = OPS[name]
    dtype = ex.draw(st.sampled_from(ex.dtypes(kinds)), "input dtype")
    shape = ex.draw(_SHAPES, "shape")
    arrays = [_values(ex, shape, dtype, f"input {i}") for i in range(arity)]
    tensors = [torch.tensor(a, dtype=TORCH_DTYPES[dtype], device=ex.device) for a in arrays]
    with np.errstate(all="ignore"):
        want = round_to(
            formula(*[a.astype(np.complex64) if dtype == "complex64" else a for a in arrays]), dtype
        )
    return name, call, tensors, np.asarray(want).reshape(shape), dtype


def _run(call, tensors, out):
    a, b = tensors[0], tensors[-1]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = call(a, b, out)
    return result, any(RESIZED in str(w.message) for w in seen)


@property_test("out.writes_out")
def test_out_returns_out_holding_the_result(device, data):
    ex = Example(data, device)
    name, call, tensors, want, dtype = _case(ex)
    ex.record(dtype)
    layout = ex.draw(
        st.sampled_from(["contiguous", "transposed", "a view of a larger tensor"]), "out's layout"
    )
    shape = tuple(want.shape)
    out = torch.zeros(shape, dtype=TORCH_DTYPES[dtype], device=device)
    if layout == "transposed" and len(shape) >= 2:
        out = torch.zeros(shape[::-1], dtype=out.dtype, device=device).permute(
            *range(len(shape) - 1, -1, -1)
        )
    elif layout == "a view of a larger tensor":
        out = torch.zeros((2, *shape), dtype=out.dtype, device=device)[1]
    before = (storage_id(out), out.data_ptr(), tuple(out.stride()), out._version)
    inputs = [(to_numpy(t), t._version) for t in tensors]
    result, _ = _run(call, tensors, out)
    expect("out.writes_out", result is out, f"torch.{name}(..., out=o) returned another tensor")
    after = (storage_id(out), out.data_ptr(), tuple(out.stride()), out._version)
    expect("out.writes_out", after[:3] == before[:3], f"o moved: {before[:3]} -> {after[:3]}")
    expect("out.writes_out", after[3] > before[3], f"o's version stayed at {after[3]}")
    expect(
        "out.writes_out",
        close(to_numpy(out), want, dtype),
        f"o holds {to_numpy(out).tolist()}, expected {want.tolist()}",
    )
    for t, (values, version) in zip(tensors, inputs, strict=True):
        expect("out.writes_out", t._version == version, "an input's version moved")
        expect("out.writes_out", close(to_numpy(t), values, dtype), "an input changed")


@property_test("out.resizes_out")
def test_an_out_of_another_shape_is_resized(device, data):
    ex = Example(data, device)
    name, call, tensors, want, dtype = _case(ex)
    ex.record(dtype)
    shape = tuple(want.shape)
    other = ex.draw(
        hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4).filter(
            lambda s: s != shape
        ),
        "out's shape",
    )
    out = torch.zeros(other, dtype=TORCH_DTYPES[dtype], device=device)
    fits = out.untyped_storage().nbytes() >= want.size * out.element_size()
    before = (storage_id(out), out.data_ptr())
    result, warned = _run(call, tensors, out)
    empty = 0 in other
    expect("out.resizes_out", result is out, "another tensor was returned")
    expect("out.resizes_out", tuple(out.shape) == shape, f"o has shape {tuple(out.shape)}")
    expect(
        "out.resizes_out",
        warned is not empty,
        f"resizing an o of shape {other}: {'a' if warned else 'no'} warning "
        f"(expected {'none: it was empty' if empty else 'one'})",
    )
    expect("out.resizes_out", storage_id(out) == before[0], "o's storage was replaced")
    if fits:
        expect("out.resizes_out", out.data_ptr() == before[1], "o's memory moved though it fit")
    expect(
        "out.resizes_out",
        close(to_numpy(out), want, dtype),
        f"o holds {to_numpy(out).tolist()}, expected {want.tolist()}",
    )


@property_test("out.no_autograd")
def test_out_refuses_arguments_that_require_grad_in_grad_mode(device, data):
    ex = Example(data, device)
    name, call, _, _, _ = _case(ex)
    dtype = ex.draw(st.sampled_from(ex.grad_dtypes()), "dtype")
    ex.record(dtype)
    _, _, arity, kinds = OPS[name]
    if kind(dtype) not in kinds:
        dtype = "float32" if "float32" in ex.dtypes() else ex.grad_dtypes()[0]
    shape = ex.draw(_SHAPES, "shape")
    which = ex.draw(st.sampled_from(["an input", "out", "both"]), "what requires grad")
    td = TORCH_DTYPES[dtype]
    a = torch.ones(shape, dtype=td, device=device, requires_grad=which != "out")
    out = torch.zeros(shape, dtype=td, device=device, requires_grad=which != "an input")
    expect_raises(
        "out.no_autograd",
        "OUT_AUTOGRAD",
        lambda: call(a, a, out),
        f"torch.{name}(..., out=o) with {which} requiring grad",
    )
    with torch.no_grad():
        result = call(a, a, out)
    expect("out.no_autograd", result is out, "under no_grad: another tensor was returned")
    expect(
        "out.no_autograd",
        out.requires_grad is (which != "an input") and out.grad_fn is None,
        f"under no_grad: o.requires_grad={out.requires_grad}, o.grad_fn={out.grad_fn}",
    )


@property_test("out.dtype_cast")
def test_the_result_is_cast_into_outs_dtype_where_it_can_be(device, data):
    ex = Example(data, device)
    name, call, tensors, want, computed = _case(ex)
    ex.record(computed)
    for out_dtype in ex.dtypes():  # every dtype: a cast wrong for one alone shows
        ex.record(out_dtype)
        out = torch.zeros(want.shape, dtype=TORCH_DTYPES[out_dtype], device=device)
        what = f"torch.{name}({computed} inputs, out=<{out_dtype}>)"
        if name in SAME_DTYPE and out_dtype != computed:
            expect_raises("out.dtype_cast", "OUT_DTYPE", lambda o=out: _run(call, tensors, o), what)
        elif not can_cast(computed, out_dtype):
            expect_raises("out.dtype_cast", "OUT_CAST", lambda o=out: _run(call, tensors, o), what)
            expect("out.dtype_cast", out._version == 0, f"{what} refused, but wrote o")
        else:
            _run(call, tensors, out)
            stored = round_to(want, out_dtype)
            # at the tolerance of the dtype the op computed in (and of out's, when coarser)
            coarse = max((computed, out_dtype), key=lambda d: _TOL_RANK.get(d, 99))
            expect(
                "out.dtype_cast",
                close(to_numpy(out), stored, coarse),
                f"{what} holds {to_numpy(out).tolist()}, expected {stored.tolist()}",
            )


# how precise a dtype's values are, most precise first (integers and bool: exact)
_TOL_RANK = {
    "float64": 0,
    "complex128": 0,
    "float32": 1,
    "complex64": 1,
    "float16": 2,
    "bfloat16": 3,
}


# ---- resize_ and set_ ------------------------------------------------------------------


def _storage_values(t: torch.Tensor) -> np.ndarray:
    """t's storage from its offset on, in storage order, read through a copy
    (Tensor.numpy would make the storage non-resizable)."""
    count = t.untyped_storage().nbytes() // t.element_size() - t.storage_offset()
    return to_numpy(t.detach().as_strided((count,), (1,), t.storage_offset()).clone())


def _tensor(ex: Example, dtype: str, label: str) -> torch.Tensor:
    """A tensor that requires no grad: contiguous, transposed or a view."""
    shape = ex.draw(_SHAPES, f"{label}'s shape")
    values = ex.draw(
        hnp.arrays(DTYPES[dtype].compute_dtype, shape, elements=elements(dtype)), label
    )
    layout = ex.draw(st.sampled_from(["contiguous", "transposed", "a view"]), f"{label}'s layout")
    t = torch.tensor(values, dtype=TORCH_DTYPES[dtype], device=ex.device)
    if layout == "transposed" and t.dim() >= 2:
        return t.transpose(0, 1)
    if layout == "a view" and t.dim() >= 1:
        return t[1:]
    return t


@property_test("resize.in_place")
def test_resize_changes_the_shape_in_place(device, data):
    ex = Example(data, device)
    dtype = ex.draw(st.sampled_from(ex.dtypes()), "dtype")
    ex.record(dtype)
    x = _tensor(ex, dtype, "x")
    new = ex.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), "new shape")
    if ex.draw(st.booleans(), "x's own shape"):
        new = tuple(x.shape)
    kept = _storage_values(x)
    old = (tuple(x.shape), tuple(x.stride()), x._version, storage_id(x), x.data_ptr())
    offset, numel = x.storage_offset(), int(np.prod(new))
    fits = x.untyped_storage().nbytes() >= (offset + numel) * x.element_size()
    result = x.resize_(new)
    expect("resize.in_place", result is x, "resize_ returned another tensor")
    expect("resize.in_place", tuple(x.shape) == tuple(new), f"x has shape {tuple(x.shape)}")
    expect("resize.in_place", storage_id(x) == old[3], "x's storage was replaced")
    expect("resize.in_place", x.storage_offset() == offset, "x's offset moved")
    if fits and numel and x.untyped_storage().nbytes():  # (an empty one's data_ptr is 0)
        expect("resize.in_place", x.data_ptr() == old[4], "x's memory moved though it fit")
    n = min(kept.size, numel)
    expect(
        "resize.in_place",
        close(_storage_values(x)[:n], kept[:n], dtype),
        "the elements kept (in storage order) changed",
    )
    if tuple(new) == old[0]:
        expect("resize.in_place", x._version == old[2], "resize_ to the same shape bumped x")
        expect("resize.in_place", tuple(x.stride()) == old[1], "the same shape: strides changed")
        return
    expect(
        "resize.in_place",
        x._version > old[2],
        f"x.resize_({tuple(new)}) to another shape: x's version moved by {x._version - old[2]}",
    )
    expect("resize.in_place", x.is_contiguous(), f"x has strides {x.stride()}")


@property_test("resize.requires_grad_raises")
def test_resize_of_a_tensor_that_requires_grad_raises(device, data):
    ex = Example(data, device)
    dtype = ex.draw(st.sampled_from(ex.grad_dtypes()), "dtype")
    ex.record(dtype)
    leaf = torch.ones((2, 3), dtype=TORCH_DTYPES[dtype], device=device, requires_grad=True)
    which = ex.draw(st.sampled_from(["a leaf", "a result", "a view of a result"]), "x")
    x = {"a leaf": leaf, "a result": leaf * 2, "a view of a result": (leaf * 2)[1:]}[which]
    new = ex.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), "new shape")
    mode = ex.draw(st.sampled_from(["grad mode", "no_grad"]), "mode")
    old = (tuple(x.shape), x._version)
    with torch.set_grad_enabled(mode == "grad mode"):
        expect_raises(
            "resize.requires_grad_raises",
            "RESIZE_REQUIRES_GRAD",
            lambda: x.resize_(new),
            f"resize_ of {which} that requires grad ({mode})",
        )
    after = (tuple(x.shape), x._version)
    expect("resize.requires_grad_raises", after == old, f"x went from {old} to {after}")


@property_test("set.shares_source")
def test_set_shares_the_source(device, data):
    ex = Example(data, device)
    dtype = ex.draw(st.sampled_from(ex.dtypes()), "dtype")
    ex.record(dtype)
    x, y = _tensor(ex, dtype, "x"), _tensor(ex, dtype, "y")
    x_base = x._base
    versions = (x._version, y._version)
    result = x.set_(y)
    expect("set.shares_source", result is x, "set_ returned another tensor")
    got = (storage_id(x), x.storage_offset(), tuple(x.shape), tuple(x.stride()))
    want = (storage_id(y), y.storage_offset(), tuple(y.shape), tuple(y.stride()))
    expect("set.shares_source", got == want, f"x has {got}, y {want}")
    expect("set.shares_source", x._base is x_base, "x's _base changed")
    expect(
        "set.shares_source",
        x._version > versions[0] and y._version == versions[1],
        f"versions (x, y) went {versions} -> {(x._version, y._version)}",
    )
    if x.numel() == 0 or DTYPES[dtype].kind == "bool":
        return
    y.add_(1)
    expect("set.shares_source", close(to_numpy(x), to_numpy(y), dtype), "x does not see y's write")
    x.mul_(2)
    expect("set.shares_source", close(to_numpy(y), to_numpy(x), dtype), "y does not see x's write")
    expect(
        "set.shares_source",
        x._version == versions[0] + 2 or x._version > versions[0] + 1,
        "x's version did not follow its own write",
    )


# ---- _foreach_ in place ----------------------------------------------------------------

_FOREACH = {  # name: (torch call over the list, the same write one tensor at a time)
    "_foreach_add_(xs, c)": (
        lambda xs, c, others: torch._foreach_add_(xs, c),
        lambda x, c, other: x.add_(c),
    ),
    "_foreach_mul_(xs, c)": (
        lambda xs, c, others: torch._foreach_mul_(xs, c),
        lambda x, c, other: x.mul_(c),
    ),
    "_foreach_add_(xs, ys)": (
        lambda xs, c, others: torch._foreach_add_(xs, others),
        lambda x, c, other: x.add_(other),
    ),
    "_foreach_mul_(xs, ys)": (
        lambda xs, c, others: torch._foreach_mul_(xs, others),
        lambda x, c, other: x.mul_(other),
    ),
}


@property_test("foreach.inplace_grad")
def test_foreach_writes_each_tensor_as_its_in_place_op_and_records_it(device, data):
    ex = Example(data, device)
    dtype = ex.draw(st.sampled_from(ex.grad_dtypes()), "dtype")
    ex.record(dtype)
    name = ex.draw(st.sampled_from(sorted(_FOREACH)), "op")
    together, one_by_one = _FOREACH[name]
    td = TORCH_DTYPES[dtype]
    shapes = [ex.draw(_SHAPES, f"shape {i}") for i in range(2)]
    roots = [_values(ex, s, dtype, f"leaf {i}") for i, s in enumerate(shapes)]
    others = [_values(ex, s, dtype, f"other {i}") for i, s in enumerate(shapes)]
    grads = [_values(ex, s, dtype, f"gradient {i}") for i, s in enumerate(shapes)]
    c = ex.draw(st.sampled_from([2.0, -0.5, 3.0]), "scalar")
    view = ex.draw(st.booleans(), "the first a view of a result")

    def run(apply_all: bool):
        leaves = [torch.tensor(r, dtype=td, device=device, requires_grad=True) for r in roots]
        xs = [leaf * 1 for leaf in leaves]
        if view and xs[0].dim() >= 1:
            xs[0] = xs[0][0:]  # a view of a result: its base is written too
        ys = [torch.tensor(o, dtype=td, device=device) for o in others]
        before = [(x.grad_fn, x._version) for x in xs]
        if apply_all:
            together(xs, c, ys)
        else:
            for x, y in zip(xs, ys, strict=True):
                one_by_one(x, c, y)
        after = [(x.grad_fn, x._version) for x in xs]
        values = [to_numpy(x) for x in xs]
        torch.autograd.backward(xs, [torch.tensor(g, dtype=td, device=device) for g in grads])
        return before, after, values, [to_numpy(leaf.grad) for leaf in leaves]

    before, after, values, leaf_grads = run(True)
    _, _, want_values, want_grads = run(False)
    for i in range(2):
        expect("foreach.inplace_grad", after[i][1] > before[i][1], f"tensor {i}'s version stayed")
        expect(
            "foreach.inplace_grad",
            after[i][0] is not None and after[i][0] is not before[i][0],
            f"tensor {i}'s grad_fn stayed {before[i][0]}: the write was not recorded",
        )
        expect(
            "foreach.inplace_grad",
            close(values[i], want_values[i], dtype),
            f"{name}: tensor {i} holds {values[i].tolist()}, expected {want_values[i].tolist()}",
        )
        expect(
            "foreach.inplace_grad",
            close(leaf_grads[i], want_grads[i], dtype),
            f"{name}: leaf {i}'s gradient {leaf_grads[i].tolist()}, as the write one "
            f"tensor at a time gives: {want_grads[i].tolist()}",
        )


@property_test("foreach.inplace_grad")
def test_foreach_on_a_leaf_that_requires_grad_raises_before_writing(device, data):
    ex = Example(data, device)
    dtype = ex.draw(st.sampled_from(ex.grad_dtypes()), "dtype")
    ex.record(dtype)
    name = ex.draw(st.sampled_from(sorted(_FOREACH)), "op")
    together, _ = _FOREACH[name]
    td = TORCH_DTYPES[dtype]
    plain = torch.ones(3, dtype=td, device=device)
    leaf = torch.ones(3, dtype=td, device=device, requires_grad=True)
    xs = [plain, leaf] if ex.draw(st.booleans(), "the leaf second") else [leaf, plain]
    ys = [torch.full((3,), 2.0, dtype=td, device=device) for _ in xs]
    expect_raises(
        "foreach.inplace_grad",
        "INPLACE_ON_LEAF",
        lambda: together(xs, 2.0, ys),
        f"torch.{name} over a leaf that requires grad",
    )
    expect(
        "foreach.inplace_grad",
        plain._version == 0 and bool((plain == 1).all()),
        "the other tensor of the list was written before the refusal",
    )
