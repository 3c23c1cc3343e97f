"""Multi-output views: the outputs of unbind, split, split_with_sizes and chunk
share their input's memory, but autograd cannot rebase one output's history
without the others', so it refuses in-place ops on them (since torch 1.9) and,
once one of them or their base was written, refuses to regenerate their
grad_fn. tensor_split, hsplit and vsplit are made of slices and are ordinary
views."""

from __future__ import annotations

import torch
from hypothesis import assume
from hypothesis import strategies as st

from conformance.check import expect, expect_no_raise, expect_raises
from conformance.harness import Example, property_test
from conformance.writes import writes_for
from strategies.dtypes import elements
from strategies.layouts import WRITABLE_LAYOUTS
from strategies.views import VIEW_OPS, DrawnView, views

# the ops that return several views; tensor_split and co. are the contrast
SPLITTERS = ("unbind", "split", "split_with_sizes", "chunk", "tensor_split", "hsplit", "vsplit")
PIECES = tuple(op for op in VIEW_OPS if op.template.split("(")[0][2:] in SPLITTERS)


def _piece(ex: Example, x) -> DrawnView:
    """One output of a multi-output op (or of tensor_split and co., the contrast)."""
    fitting = [op for op in PIECES if op.applies(x.shape, x.tensor.is_contiguous())]
    assume(fitting)
    op = ex.draw(st.sampled_from(fitting), "multi-output op")
    return DrawnView(op, ex.draw(op.args(x.shape), "its arguments"))


def _further(ex: Example, v: torch.Tensor):
    """Now and then a view of the output: the rule follows it."""
    if not ex.draw(st.booleans(), "a view of the output"):
        return v, ""
    view = ex.draw(
        views(tuple(v.shape), v.is_contiguous(), writable=True, multi_output=False), "view"
    )
    return view(v), f" then {view}"


@property_test("view.multi_output_inplace_raises")
def test_inplace_on_an_output_of_several_views_raises(device, data):
    ex = Example(data, device)
    x = ex.tensor("base", roles=("nonleaf",), layout_kinds=WRITABLE_LAYOUTS)
    piece = _piece(ex, x)
    v, then = _further(ex, piece(x.tensor))
    write = ex.draw(st.sampled_from(writes_for(x.dtype, device=x.device)), "write")
    value = ex.draw(elements(x.dtype), "value")
    what = f"{write} on {piece}{then} of a tensor that requires grad"
    if piece.op.multi_output:
        expect_raises(
            "view.multi_output_inplace_raises",
            "MULTI_OUTPUT_VIEW_INPLACE",
            lambda: write.apply(v, value),
            what,
        )
        # under no_grad autograd records nothing, so nothing is refused
        with torch.no_grad():
            expect_no_raise(
                "view.multi_output_inplace_raises",
                lambda: write.apply(v, value),
                what + " under no_grad",
            )
    else:  # slices: an ordinary view, rebased like any other
        expect_no_raise("view.multi_output_inplace_raises", lambda: write.apply(v, value), what)
        expect(
            "view.multi_output_inplace_raises",
            x.tensor.grad_fn is not None and v.grad_fn is not None,
            f"after {what}, the base's grad_fn is {x.tensor.grad_fn}",
        )


@property_test("view.multi_output_base_written_raises")
def test_grad_fn_of_an_output_of_several_views_after_a_write_raises(device, data):
    ex = Example(data, device)
    x = ex.tensor("base", roles=("nonleaf",), layout_kinds=WRITABLE_LAYOUTS)
    piece = _piece(ex, x)
    v, then = _further(ex, piece(x.tensor))
    expect_no_raise(
        "view.multi_output_base_written_raises", lambda: v.grad_fn, "grad_fn before any write"
    )
    write = ex.draw(st.sampled_from(writes_for(x.dtype, device=x.device)), "write")
    value = ex.draw(elements(x.dtype), "value")
    target = ex.draw(st.sampled_from(["base", "output under no_grad"]), "written")
    if target == "base":
        write.apply(x.tensor, value)
    else:
        with torch.no_grad():
            write.apply(v, value)
    what = f"{piece}{then}.grad_fn after {write} on the {target}"
    if piece.op.multi_output:
        expect_raises(
            "view.multi_output_base_written_raises",
            "MULTI_OUTPUT_VIEW_INPLACE",
            lambda: v.grad_fn,
            what,
        )
    else:
        fn = expect_no_raise("view.multi_output_base_written_raises", lambda: v.grad_fn, what)
        expect("view.multi_output_base_written_raises", fn is not None, f"{what} is None")
