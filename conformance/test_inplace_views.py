"""In-place view ops (issue 37): x.transpose_(), t_(), squeeze_(), unsqueeze_(),
swapdims_() and as_strided_() on a tensor, on a view made under grad mode,
no_grad or inference_mode, and on an output of unbind, run with grad mode on
or off. Each is held to its out-of-place twin, made just before from the
same tensor: the geometry and values it gives x in place, the gradient that
flows back through it, and the refusals (of the op, then of a later write
and of reading grad_fn) that the view's grad mode calls for."""

from __future__ import annotations

import contextlib

import torch
from hypothesis import assume
from hypothesis import strategies as st

from conformance.check import expect, expect_no_raise, expect_raises
from conformance.harness import rule_test
from strategies.argspace import Operand, arguments, passed
from strategies.dtypes import arrays
from strategies.layouts import WRITABLE_LAYOUTS
from strategies.tensors import DTYPE_NAMES
from strategies.view_args import INPLACE_VIEWS, SPACES

RULE = "view.inplace_view_op"
MADE = ("itself", "grad", "no_grad", "inference_mode", "unbind")
# where the view is made: torch's CreationMeta, and the refusal it calls for
REFUSED_AS = {"no_grad": "NO_GRAD_VIEW_INPLACE", "inference_mode": "INFERENCE_VIEW_INPLACE"}
REFUSED_AS["unbind"] = "MULTI_OUTPUT_VIEW_INPLACE"


def _made(x: torch.Tensor, made: str) -> torch.Tensor:
    """x itself, or a view of it made under `made`."""
    if made == "itself":
        return x
    if made == "unbind":  # one output of several, in grad mode
        return x.unsqueeze(0).unbind(0)[0]
    mode = {"grad": contextlib.nullcontext, "no_grad": torch.no_grad}.get(
        made, torch.inference_mode
    )
    with mode():
        return x[...]  # (x[...] is a view of x: a ViewBackward of its own)


def _refusal(v: torch.Tensor, made: str, recorded: bool) -> str | None:
    """The error check_inplace raises for an in-place op on v, or None."""
    if not recorded:
        return None
    if made in REFUSED_AS:
        return REFUSED_AS[made]
    if v._base is not None and v._base.is_leaf:
        return "INPLACE_ON_LEAF_VIEW"
    return "INPLACE_ON_LEAF" if v.is_leaf else None


def _weight(ex, t: torch.Tensor) -> torch.Tensor:
    """Values of t's shape, dtype and device: the loss (t * w).sum()."""
    values = ex.draw(arrays(DTYPE_NAMES[t.dtype], tuple(t.shape)), "gradient weight")
    return torch.as_tensor(values).to(dtype=t.dtype, device=t.device)


def _geometry(t: torch.Tensor) -> tuple:
    return tuple(t.shape), t.stride(), t.storage_offset()


@rule_test(RULE)
def test_an_inplace_view_op_is_its_twin_in_place(ex):
    x = ex.tensor("x", roles=("plain", "leaf", "nonleaf", "view"), layout_kinds=WRITABLE_LAYOUTS)
    made = ex.draw(st.sampled_from(MADE), "view made")
    v = _made(x.tensor, made)
    op = ex.draw(st.sampled_from(INPLACE_VIEWS), "op")
    args = ex.draw(
        arguments(SPACES[op], Operand(tuple(v.shape), v.is_contiguous(), v.storage_offset())),
        "its arguments",
    )
    grad_mode = ex.draw(st.booleans(), "op in grad mode")
    what = f"{'' if grad_mode else 'under no_grad, '}{made} view: v.{op}{passed(args)}"
    recorded = grad_mode and v.requires_grad
    base, before, version = v._base, _geometry(v), v._version
    fn = v.grad_fn if recorded and made in ("itself", "grad") else None
    twin = getattr(v, op[:-1])(*passed(args))  # the out-of-place op, on v as it is now
    expected_grad = None
    real = v.is_floating_point()  # (a complex sum is no loss to differentiate)
    if real and recorded and made in ("itself", "grad") and x.root is not None and not v.is_leaf:
        w = _weight(ex, twin)
        (expected_grad,) = torch.autograd.grad((twin * w).sum(), x.root, retain_graph=True)
    mode = contextlib.nullcontext() if grad_mode else torch.no_grad()
    refusal = _refusal(v, made, recorded)
    if refusal is not None:
        with mode:
            expect_raises(RULE, refusal, lambda: getattr(v, op)(*passed(args)), what)
        expect(RULE, _geometry(v) == before, f"{what} was refused, yet changed v to {v.shape}")
        expect(RULE, v._version == version, f"{what} was refused, yet bumped v's version")
        return
    with mode:
        out = expect_no_raise(RULE, lambda: getattr(v, op)(*passed(args)), what)
    expect(RULE, out is v, f"{what} returned another tensor than v")
    expect(
        RULE,
        _geometry(v) == _geometry(twin),
        f"{what}: v is {_geometry(v)}, its twin view {_geometry(twin)}",
    )
    expect(RULE, v.untyped_storage().data_ptr() == twin.untyped_storage().data_ptr(), what)
    expect(RULE, v._base is base, f"{what}: v's _base changed from {base} to {v._base}")
    expect(RULE, v._version == version + 1, f"{what}: version {version} -> {v._version}")
    expect(RULE, torch.equal(v.detach(), twin.detach()), f"{what}: v's values are not its twin's")
    if fn is not None:  # the twin's node, on v's old history
        expect(
            RULE,
            v.grad_fn is not fn and v.grad_fn.next_functions[0][0] is fn,
            f"{what}: v's grad_fn is {v.grad_fn}, was {fn}",
        )
    if expected_grad is not None:
        expect_no_raise(RULE, lambda: (v * w).sum().backward(), f"{what}, then backward")
        expect(
            RULE,
            torch.allclose(x.root.grad, expected_grad, equal_nan=True),
            f"{what}, then (v * w).sum().backward(): {x.root.grad} for {expected_grad}",
        )
    if made in REFUSED_AS and not grad_mode and x.tensor.requires_grad:
        # changed where it was made (or with grad off): its base's counter moved,
        # so its grad_fn cannot be regenerated, and a later write is refused
        kind = REFUSED_AS[made]
        expect_raises(RULE, kind, lambda: v.grad_fn, f"{what}, then v.grad_fn")
        if made != "unbind" or v.numel():
            expect_raises(RULE, kind, lambda: v.mul_(2), f"{what}, then v.mul_(2)")


@rule_test(RULE)
def test_the_base_keeps_its_history_and_a_later_write_reaches_it(ex):
    """On a view in grad mode, the op records the view's node alone (the base's
    grad_fn stays); a later write through the view is rebased onto the base as
    any write is (CopySlices), and the gradient is the twin's, written."""
    x = ex.tensor(
        "x", dtypes=ex.dtypes(("float",)), roles=("nonleaf",), layout_kinds=("contiguous",)
    )
    v = x.tensor[...]
    op = ex.draw(st.sampled_from(INPLACE_VIEWS), "op")
    args = ex.draw(arguments(SPACES[op], Operand(tuple(v.shape), True, 0)), "its arguments")
    twin = getattr(v, op[:-1])(*passed(args))
    assume(torch._debug_has_internal_overlap(twin) == 0)  # a write into it must be allowed
    w = _weight(ex, twin)
    (expected,) = torch.autograd.grad((twin * 2 * w).sum(), x.root, retain_graph=True)
    fn = x.tensor.grad_fn
    what = f"x[...].{op}{args}"
    getattr(v, op)(*passed(args))
    expect(RULE, x.tensor.grad_fn is fn, f"{what} changed the base's grad_fn to {x.tensor.grad_fn}")
    v.mul_(2)
    expect(
        RULE,
        type(x.tensor.grad_fn).__name__ == "CopySlices",
        f"{what}, then v.mul_(2): the base's grad_fn is {x.tensor.grad_fn}",
    )
    (v * w).sum().backward()
    got = x.root.grad
    expect(
        RULE,
        got is not None and torch.allclose(got, expected, equal_nan=True),
        f"{what}, v.mul_(2), (v * w).sum().backward(): {got} for {expected}",
    )
