"""Grad modes as modes of their own: enable_grad inside no_grad records again
and leaving it restores no_grad; set_grad_enabled as a context manager, a
function and a decorator; in-place writes on inference tensors outside
inference_mode, and on views of normal tensors made inside it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from hypothesis import strategies as st

from conformance.check import attributed_to, expect, expect_raises, expect_values
from conformance.harness import Example, property_test
from conformance.writes import writes_for
from oracle.dtypes import round_to
from strategies.dtypes import elements
from strategies.layouts import WRITABLE_LAYOUTS
from strategies.tensors import GRAD_ROLES, TORCH_DTYPES, to_numpy
from strategies.views import views

# y from x, linear, with dy/dx as a factor of the incoming gradient
_LINEAR = (
    ("x * 2", lambda x: x * 2, 2),
    ("x + x", lambda x: x + x, 2),
    ("x.neg()", lambda x: x.neg(), -1),
    ("x.clone()", lambda x: x.clone(), 1),
    ("x * -3", lambda x: x * -3, -3),
)


def _backward_reaches_root(invariant: str, ex: Example, x, y, factor: int, what: str) -> None:
    """backward from y must leave x's leaf the gradient y's graph gives it."""
    g = ex.gradient(x)
    with attributed_to(invariant, f"backward through {what}"):
        y.backward(torch.tensor(g, dtype=x.tensor.dtype, device=x.tensor.device))
    want = round_to(x.grad_for_root(round_to(g * factor, x.dtype)), x.dtype)
    expect(invariant, x.root.grad is not None, f"backward through {what} left the leaf no .grad")
    expect_values(invariant, x.root.grad, want, f"the leaf's .grad after backward through {what}")


@dataclass
class _Linear:
    """y computed from x by one of _LINEAR under a drawn form of a grad mode;
    run() notes the grad mode it computed in."""

    ex: Example
    x: object
    name: str
    compute: Callable
    factor: int
    form: str
    inside: list[bool] = field(default_factory=list)

    def run(self) -> torch.Tensor:
        self.inside.append(torch.is_grad_enabled())
        return self.compute(self.x.tensor)


def _linear(data, device: str, forms: list[str]) -> _Linear:
    ex = Example(data, device)
    x = ex.tensor("x", roles=GRAD_ROLES)
    name, compute, factor = ex.draw(st.sampled_from(_LINEAR), "y from x")
    form = ex.draw(st.sampled_from(forms), "form")
    return _Linear(ex, x, name, compute, factor, form)


@property_test("nograd.enable_grad_restores")
def test_enable_grad_inside_no_grad_records_and_restores(device, data):
    lin = _linear(data, device, ["with torch.enable_grad()", "@torch.enable_grad()"])
    ex, x, name, compute, factor, form, run = (
        lin.ex, lin.x, lin.name, lin.compute, lin.factor, lin.form, lin.run
    )  # fmt: skip
    inv = "nograd.enable_grad_restores"
    inside = lin.inside
    prev = torch.is_grad_enabled()
    try:
        with torch.no_grad():
            if form == "with torch.enable_grad()":
                with torch.enable_grad():
                    y = run()
            else:
                y = torch.enable_grad()(run)()
            after = torch.is_grad_enabled()
            z = compute(x.tensor)
    finally:
        torch._C._set_grad_enabled(prev)
    what = f"{name} under {form} inside no_grad"
    expect(inv, inside == [True], f"torch.is_grad_enabled() was {inside} under {form}")
    expect(
        inv,
        y.requires_grad and y.grad_fn is not None,
        f"{what}: requires_grad={y.requires_grad}, grad_fn={y.grad_fn}",
    )
    expect(inv, after is False, f"after leaving {form} inside no_grad, grad mode is {after}")
    expect(
        inv,
        (z.requires_grad, z.grad_fn) == (False, None),
        f"{name} after leaving {form}, still inside no_grad: requires_grad={z.requires_grad}",
    )
    _backward_reaches_root(inv, ex, x, y, factor, what)


@property_test("nograd.set_grad_enabled")
def test_set_grad_enabled_sets_grad_mode(device, data):
    lin = _linear(data, device, ["context manager", "function", "decorator"])
    ex, x, name, factor, form, run = lin.ex, lin.x, lin.name, lin.factor, lin.form, lin.run
    mode = ex.draw(st.booleans(), "mode")
    outer = not mode if ex.draw(st.booleans(), "outer mode differs") else mode
    inv = "nograd.set_grad_enabled"
    inside = lin.inside
    prev = torch.is_grad_enabled()
    try:
        torch._C._set_grad_enabled(outer)
        if form == "context manager":
            with torch.set_grad_enabled(mode):
                y = run()
        elif form == "decorator":
            y = torch.set_grad_enabled(mode)(run)()
        else:
            torch.set_grad_enabled(mode)
            y = run()
        after = torch.is_grad_enabled()
    finally:
        torch._C._set_grad_enabled(prev)
    what = f"{name} under torch.set_grad_enabled({mode}) as a {form} (grad mode {outer} before)"
    expect(inv, inside == [mode], f"torch.is_grad_enabled() was {inside} under {what}")
    recorded = (y.requires_grad, y.grad_fn is not None)
    expect(inv, recorded == (mode, mode), f"{what}: requires_grad, has grad_fn = {recorded}")
    # the function form leaves its mode set; the others put the one before back
    want = mode if form == "function" else outer
    expect(inv, after is want, f"after {what}, torch.is_grad_enabled() is {after}, not {want}")
    if mode:
        _backward_reaches_root(inv, ex, x, y, factor, what)


def _inference_tensor(ex: Example, x, device: str) -> tuple[str, torch.Tensor]:
    with torch.inference_mode():
        t = torch.tensor(x.values, dtype=TORCH_DTYPES[x.dtype], device=device)
        views = {
            "the tensor": lambda: t,
            "t[...]": lambda: t[...],
            "t.view(-1)": lambda: t.view(-1),
            "t.unsqueeze(0)": lambda: t.unsqueeze(0),
        }
        made = ex.draw(st.sampled_from(sorted(views)), "made")
        t = views[made]()
    return made, t


@property_test("inference.inplace_outside_raises")
def test_inplace_on_inference_tensor_outside_inference_mode_raises(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=("plain",), layout_kinds=("contiguous",))
    made, t = _inference_tensor(ex, x, device)
    write = ex.draw(st.sampled_from(writes_for(x.dtype, device=device)), "write")
    value = ex.draw(elements(x.dtype), "value")
    where = ex.draw(
        st.sampled_from(["grad mode", "no_grad", "inference_mode(False)", "inference_mode"]),
        "where",
    )
    inv = "inference.inplace_outside_raises"
    what = f"{write} on {made} made under inference_mode, in {where}"
    if where == "inference_mode":
        before = to_numpy(t)
        with torch.inference_mode(), attributed_to(inv, what):
            write.apply(t, value)
        expect_values(inv, t, write.expected(before, value), what)
        return
    mode = {
        "grad mode": torch.enable_grad,
        "no_grad": torch.no_grad,
        "inference_mode(False)": lambda: torch.inference_mode(False),
    }[where]
    with mode():
        expect_raises(inv, "INFERENCE_INPLACE", lambda: write.apply(t, value), what)


@property_test("inference.view_inplace_raises")
def test_view_made_in_inference_mode_refuses_inplace_with_grad(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=("leaf", "view", "nonleaf"), layout_kinds=WRITABLE_LAYOUTS)
    view = ex.draw(views(x.shape, x.tensor.is_contiguous(), writable=True), "view")
    with torch.inference_mode():
        v = view(x.tensor)
    inv = "inference.view_inplace_raises"
    expect(inv, not v.is_inference(), f"{view} of a normal tensor made under inference_mode")
    write = ex.draw(st.sampled_from(writes_for(x.dtype, device=x.device)), "write")
    value = ex.draw(elements(x.dtype), "value")
    expect_raises(
        inv,
        "INFERENCE_VIEW_INPLACE",
        lambda: write.apply(v, value),
        f"{write} with grad on, on {view} made under inference_mode",
    )
