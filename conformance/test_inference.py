"""inference_mode: its tensors have no version counter and cannot be saved
for backward."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from conformance.check import expect, expect_raises
from conformance.harness import Example, property_test
from strategies.tensors import TORCH_DTYPES


@property_test("inference.no_version_counter")
def test_inference_tensors_have_no_version(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=("plain",), layout_kinds=("contiguous",))
    with torch.inference_mode():
        t = torch.tensor(x.values, dtype=TORCH_DTYPES[x.dtype], device=device)
        made = ex.draw(st.sampled_from(["the tensor", "t * 1", "t.clone()", "t[...]"]), "made")
        t = {
            "the tensor": t,
            "t * 1": t * 1 if x.dtype != "bool" else t,
            "t.clone()": t.clone(),
            "t[...]": t[...],
        }[made]
    expect("inference.no_version_counter", t.is_inference(), f"{made} is not an inference tensor")
    expect_raises(
        "inference.no_version_counter",
        "INFERENCE_VERSION",
        lambda: t._version,
        f"reading _version of {made} made under inference_mode",
    )


@property_test("inference.not_saved_for_backward")
def test_inference_tensor_cannot_be_saved(device, data):
    ex = Example(data, device)
    x = ex.tensor("x", roles=("leaf",))
    with torch.inference_mode():
        t = torch.tensor(x.values, dtype=TORCH_DTYPES[x.dtype], device=device)
    saver = ex.draw(st.sampled_from(["x * t", "t * x", "x / t", "torch.mul(x, t)"]), "op")
    compute = {
        "x * t": lambda: x.tensor * t,
        "t * x": lambda: t * x.tensor,
        "x / t": lambda: x.tensor / t,
        "torch.mul(x, t)": lambda: torch.mul(x.tensor, t),
    }[saver]
    expect_raises(
        "inference.not_saved_for_backward",
        "INFERENCE_SAVED",
        compute,
        f"{saver} with x requiring grad and t an inference tensor",
    )
