"""Version counters: every in-place op moves them, nothing else does, and
backward checks the versions of what it saved."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from conformance import build
from conformance.check import attributed_to, expect, expect_no_raise, expect_raises
from conformance.harness import Example, property_test
from conformance.saving import draw_scenario
from conformance.writes import bumps_for, writes_for
from strategies.dtypes import DTYPES, elements
from strategies.layouts import WRITABLE_LAYOUTS
from strategies.views import views


@property_test("version.bumps_on_inplace")
def test_every_inplace_op_bumps_the_version(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", layout_kinds=WRITABLE_LAYOUTS)
    op = ex.draw(st.sampled_from(bumps_for(x.dtype, device=x.device)), "in-place op")
    # in-place on a leaf that requires grad, or a view of one, needs no_grad
    grad_mode = x.role in ("plain", "nonleaf") and ex.draw(st.booleans(), "grad mode")
    before = x.tensor._version
    with torch.set_grad_enabled(grad_mode), attributed_to("version.bumps_on_inplace", str(op)):
        op.apply(x.tensor, ex.draw(elements(x.dtype), "value"))
    expect(
        "version.bumps_on_inplace",
        x.tensor._version > before,
        f"{op} left the version at {x.tensor._version} (was {before})",
    )


def _reads(x, view) -> list[tuple[str, object]]:
    t = x.tensor
    kind = DTYPES[x.dtype].kind
    reads = [
        ("x.clone()", lambda: t.clone()),
        ("x.detach()", lambda: t.detach()),
        ("x.data", lambda: t.data),
        ("x.contiguous()", lambda: t.contiguous()),
        ("x.to(torch.float64)", lambda: t.to(torch.float64)),
        ("x.tolist()", lambda: t.tolist()),
        ("x == x", lambda: t == t),
        ("torch.cat([x, x])", lambda: torch.cat([t.reshape(-1), t.reshape(-1)])),
        ("repr(x)", lambda: repr(t)),
        (repr(view), lambda: view(t)),
    ]
    if kind != "bool":
        reads += [("x + x", lambda: t + t), ("x * 2", lambda: t * 2), ("x.sum()", lambda: t.sum())]
    if kind in ("float", "complex"):
        reads += [("x.mean()", lambda: t.mean())]
        if not build.lacks("x.exp()", torch.exp, [((2,), x.dtype)], x.device):
            reads += [("x.exp()", lambda: t.exp())]
    return reads


@property_test("version.unchanged_out_of_place")
def test_out_of_place_ops_leave_the_version(device, data):
    ex = Example(data, device)
    x = ex.tensor("x")
    view = ex.draw(views(x.shape, x.tensor.is_contiguous()), "view")
    name, read = ex.draw(st.sampled_from(_reads(x, view)), "op")
    before = x.tensor._version
    with torch.set_grad_enabled(ex.draw(st.booleans(), "grad mode")):
        read()
    expect(
        "version.unchanged_out_of_place",
        x.tensor._version == before,
        f"{name} moved x's version from {before} to {x.tensor._version}",
    )


@property_test("version.saved_modified_raises")
def test_writing_a_saved_tensor_makes_backward_raise(device, data):
    ex = Example(data, device)
    scenario = draw_scenario(ex, "savers")
    write = ex.draw(
        st.sampled_from(writes_for(scenario.x.dtype, device=scenario.x.device)), "write"
    )
    with torch.no_grad():
        write.apply(scenario.saved, ex.draw(elements(scenario.x.dtype), "value"))
    expect_raises(
        "version.saved_modified_raises",
        "SAVED_TENSOR_MODIFIED",
        scenario.backward,
        f"backward of {scenario.op} after {scenario.op.saved}.{write}",
    )


@property_test("version.unsaved_modified_ok")
def test_writing_an_unsaved_tensor_leaves_backward_working(device, data):
    ex = Example(data, device)
    scenario = draw_scenario(ex, "non-savers")
    targets = {"x": scenario.x.tensor, "other": scenario.other, "y": scenario.y}
    written = ex.draw(st.sampled_from(sorted(targets)), "written tensor")
    if written == "y" and scenario.y.dim() and any(s == 0 for s in scenario.y.stride()):
        written = "other"  # an expanded result cannot be written
    write = ex.draw(
        st.sampled_from(writes_for(scenario.x.dtype, device=scenario.x.device)), "write"
    )
    with torch.no_grad():
        write.apply(targets[written], ex.draw(elements(scenario.x.dtype), "value"))
    expect_no_raise(
        "version.unsaved_modified_ok",
        scenario.backward,
        f"backward of {scenario.op} after {written}.{write}",
    )


@property_test("version.no_grad_bumps")
def test_inplace_under_no_grad_still_bumps(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", layout_kinds=WRITABLE_LAYOUTS)
    op = ex.draw(st.sampled_from(bumps_for(x.dtype, device=x.device)), "in-place op")
    before = x.tensor._version
    with torch.no_grad(), attributed_to("version.no_grad_bumps", str(op)):
        op.apply(x.tensor, ex.draw(elements(x.dtype), "value"))
    expect(
        "version.no_grad_bumps",
        x.tensor._version > before,
        f"{op} under no_grad left the version at {x.tensor._version} (was {before})",
    )
