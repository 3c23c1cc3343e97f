"""detach() and detach_(): same memory and version counter, out of the graph."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st

from conformance.check import (
    expect,
    expect_no_raise,
    expect_raises,
    expect_values,
    shares_storage,
)
from conformance.harness import rule_test
from conformance.saving import available, draw_scenario, gradient_bound, savers_for
from conformance.spellings import DETACHES
from conformance.writes import writes_for
from strategies.dtypes import DTYPES, arrays, elements, nonzero_small_elements, small_elements
from strategies.layouts import WRITABLE_LAYOUTS
from strategies.tensors import DTYPE_NAMES, GRAD_ROLES, TORCH_DTYPES, to_numpy


@rule_test("detach.shares_storage")
def test_detach_shares_storage(ex):
    x = ex.tensor("source")
    detach = ex.draw(st.sampled_from(DETACHES), "spelling")
    d = detach(x.tensor)
    expect("detach.shares_storage", shares_storage(d, x.tensor), f"{detach} has its own storage")
    got = (d.data_ptr(), d.shape, d.stride() if d.numel() else None)
    want = (x.tensor.data_ptr(), x.tensor.shape, x.tensor.stride() if d.numel() else None)
    expect(
        "detach.shares_storage",
        got == want,
        f"{detach} is at (data_ptr, shape, strides) {got}, its source at {want}",
    )
    expect_values("detach.shares_storage", d, x.values, f"{detach}")


@rule_test("detach.shares_version")
def test_detach_shares_version_counter(ex):
    x = ex.tensor("source", layout_kinds=WRITABLE_LAYOUTS)
    d = ex.draw(st.sampled_from(DETACHES), "spelling")(x.tensor)
    writes = writes_for(x.dtype, device=x.device)
    for target in ex.draw(st.permutations(["detached", "source"]), "write order"):
        write = ex.draw(st.sampled_from(writes), f"write through {target}")
        before = (x.tensor._version, d._version)
        with torch.no_grad():  # the source may be a leaf that requires grad
            write.apply(
                d if target == "detached" else x.tensor, ex.draw(elements(x.dtype), "value")
            )
        after = (x.tensor._version, d._version)
        expect(
            "detach.shares_version",
            after[0] == after[1] and after[0] > before[0],
            f"{write} through the {target} tensor moved (source, detached) versions "
            f"{before} -> {after}",
        )


@rule_test("detach.never_requires_grad")
def test_detach_never_requires_grad(ex):
    x = ex.tensor("source")
    detach = ex.draw(st.sampled_from(DETACHES), "spelling")
    grad_mode = ex.draw(st.booleans(), "grad mode")
    with torch.set_grad_enabled(grad_mode):
        d = detach(x.tensor)
    got = (d.requires_grad, d.grad_fn, d.is_leaf, d._base)
    expect(
        "detach.never_requires_grad",
        got == (False, None, True, None),
        f"{detach} of a {x.role} tensor: requires_grad={got[0]}, grad_fn={got[1]}, "
        f"is_leaf={got[2]}, _base {'set' if got[3] is not None else 'None'}",
    )


@rule_test("detach.blocks_gradient")
def test_no_gradient_flows_through_detach(ex):
    x = ex.tensor("source", roles=GRAD_ROLES)
    detach = ex.draw(st.sampled_from(DETACHES), "spelling")
    scale = ex.draw(st.integers(1, 4), "scale on the detached path")
    direct = ex.draw(st.none() | st.integers(0, 3), "scale on a direct path")
    grad = ex.gradient(x)
    g = torch.tensor(grad, dtype=x.tensor.dtype, device=ex.device)
    out = detach(x.tensor) * scale
    if direct is None:
        expect_raises(
            "detach.blocks_gradient",
            "NO_GRAD_FN",
            lambda: out.backward(g),
            f"backward from {detach} * {scale} alone",
        )
        expect("detach.blocks_gradient", x.root.grad is None, f"the source got {x.root.grad}")
        return
    out = out + x.tensor * direct
    expect_no_raise("detach.blocks_gradient", lambda: out.backward(g), "backward")
    expect_values(
        "detach.blocks_gradient",
        x.root.grad,
        x.grad_for_root(grad * direct),
        f"the source's gradient from {detach} * {scale} + x * {direct}",
    )


@rule_test("detach.write_visible")
def test_writes_through_detach_are_seen_both_ways(ex):
    x = ex.tensor("source", layout_kinds=WRITABLE_LAYOUTS)
    detach = ex.draw(st.sampled_from(DETACHES), "spelling")
    d = detach(x.tensor)
    writes = writes_for(x.dtype, device=x.device)
    values = x.values
    for target in ex.draw(st.permutations(["detached", "source"]), "write order"):
        write = ex.draw(st.sampled_from(writes), f"write through {target}")
        value = ex.draw(elements(x.dtype), "value")
        with torch.no_grad():
            write.apply(d if target == "detached" else x.tensor, value)
        values = write.expected(values, value)
        seen_by = x.tensor if target == "detached" else d
        other = "source" if target == "detached" else "detached tensor"
        expect_values(
            "detach.write_visible", seen_by, values, f"the {other} after {target}.{write}"
        )


@rule_test("detach.write_then_backward_raises")
def test_write_through_detach_then_backward_raises(ex):
    scenario = draw_scenario(ex)
    detach = ex.draw(st.sampled_from(DETACHES), "spelling")
    write = ex.draw(
        st.sampled_from(writes_for(scenario.x.dtype, device=scenario.x.device)), "write"
    )
    write.apply(detach(scenario.saved), ex.draw(elements(scenario.x.dtype), "value"))
    expect_raises(
        "detach.write_then_backward_raises",
        "SAVED_TENSOR_MODIFIED",
        scenario.backward,
        f"backward of {scenario.op} after {detach} of {scenario.op.saved} then .{write}",
    )


@rule_test("detach.inplace_makes_leaf")
def test_detach_inplace(ex):
    x = ex.tensor("source")
    t = x.tensor
    if t._is_view():
        expect_raises(
            "detach.inplace_makes_leaf",
            "DETACH_VIEW_INPLACE",
            t.detach_,
            f"detach_() on a view ({x.layout})",
        )
        return
    storage, values = t.untyped_storage()._cdata, to_numpy(t)
    result = expect_no_raise("detach.inplace_makes_leaf", t.detach_, f"detach_() on a {x.role}")
    got = (result is t, t.requires_grad, t.grad_fn, t.is_leaf)
    expect(
        "detach.inplace_makes_leaf",
        got == (True, False, None, True),
        f"after detach_(): returns self={got[0]}, requires_grad={got[1]}, grad_fn={got[2]}, "
        f"is_leaf={got[3]}",
    )
    expect(
        "detach.inplace_makes_leaf",
        t.untyped_storage()._cdata == storage and np.array_equal(to_numpy(t), values),
        "detach_() changed the tensor's memory or values",
    )


class _SavesInput(torch.autograd.Function):
    """y = 2 * x, saving x with ctx.save_for_backward (its backward reads it)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2


_BY_CTX = "y = _SavesInput.apply(x)"


@rule_test("detach.inplace_saved_input_raises")
def test_detach_inplace_of_a_saved_tensor(ex):
    x = ex.tensor("x", roles=GRAD_ROLES, layout_kinds=WRITABLE_LAYOUTS, values=small_elements)
    savers = available(ex, savers_for(DTYPES[x.dtype].kind), x.dtype)
    op = ex.draw(st.sampled_from((*savers, _BY_CTX)), "op")
    dtype = TORCH_DTYPES[x.dtype]
    base = x.tensor * 1  # a non-leaf that is no view: detach_() applies to it
    other_values = ex.draw(arrays(x.dtype, x.shape, nonzero_small_elements), "other")
    other_leaf = torch.tensor(other_values, dtype=dtype, device=ex.device, requires_grad=True)
    other = other_leaf * 1  # saved by `x * other` as an input too
    y = _SavesInput.apply(base) if op == _BY_CTX else op.forward(base, other)
    z = y * 1  # its own node saves nothing: backward goes on to y's
    g = ex.draw(arrays(x.dtype, tuple(y.shape), small_elements), "gradient")
    saved = "self" if op == _BY_CTX else op.saved
    target = {"self": base, "result": y, "other": other}[saved]
    values = to_numpy(target)
    target.detach_()
    what = f"backward of {op} after {saved}.detach_()"
    backward = lambda: z.backward(torch.tensor(g, dtype=y.dtype, device=ex.device))  # noqa: E731
    if saved != "result" and op != _BY_CTX:
        expect_raises("detach.inplace_saved_input_raises", "SAVED_TENSOR_DETACHED", backward, what)
        return
    expect_no_raise("detach.inplace_saved_input_raises", backward, what)
    grad = 2 * g if op == _BY_CTX else op.grad(g, values)
    expect_values(
        "detach.inplace_saved_input_raises",
        x.root.grad,
        x.grad_for_root(grad),
        f"the gradient of {what}",
        None if op == _BY_CTX else gradient_bound(op, g, values, DTYPE_NAMES[x.root.grad.dtype]),
    )
