"""`x.data = y`: x takes y's memory, whatever y's dtype and requires_grad."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from conformance.check import expect, expect_raises, expect_values, shares_storage
from conformance.harness import rule_test
from strategies.dtypes import DTYPES, arrays
from strategies.shapes import shapes
from strategies.tensors import DTYPE_NAMES, leaf_tensor


@rule_test("data.shares_storage")
def test_set_data_takes_the_source_memory(ex):
    """`x.data = y` across dtypes and with a source that requires grad: x is then
    on y's storage with y's dtype, shape and values, and keeps its own
    requires_grad; an integer source into an x that requires grad is refused."""
    shape = ex.draw(shapes(), "shape")
    target = ex.draw(st.sampled_from(ex.dtypes()), "target dtype")
    source = ex.draw(st.sampled_from(ex.dtypes()), "source dtype")
    ex.record(target)
    ex.record(source)
    graded = DTYPES[target].can_require_grad and ex.draw(st.booleans(), "x requires grad")
    source_graded = DTYPES[source].can_require_grad and ex.draw(st.booleans(), "y requires grad")
    x = leaf_tensor(ex.draw(arrays(target, shape), "x values"), target, ex.device, graded)
    values = ex.draw(arrays(source, shape), "y values")
    y = leaf_tensor(values, source, ex.device, source_graded)

    def assign() -> None:
        x.data = y

    if graded and not DTYPES[source].can_require_grad:
        expect_raises(
            "data.shares_storage",
            "DTYPE_CANNOT_REQUIRE_GRAD",
            assign,
            f"x.data = y with x {target} requiring grad and y {source}",
        )
        return
    assign()
    what = f"after x.data = y (x {target}, y {source}{' requiring grad' if source_graded else ''})"
    expect("data.shares_storage", shares_storage(x, y), f"x is not on y's storage {what}")
    expect(
        "data.shares_storage",
        (DTYPE_NAMES[x.dtype], tuple(x.shape)) == (source, tuple(np.shape(values))),
        f"x is {DTYPE_NAMES[x.dtype]} {tuple(x.shape)} {what}",
    )
    expect("data.shares_storage", x.requires_grad == graded, f"x.requires_grad changed {what}")
    expect_values("data.shares_storage", x.detach(), values, f"x's values {what}")
