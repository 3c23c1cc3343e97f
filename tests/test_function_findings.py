"""The known-failure entries for custom Functions under torch.compile
(conformance/known-failures.toml; docs/findings.md, "Custom Functions under
torch.compile") cover their own class of divergence and nothing next to it,
and the compiled repro script defines the Functions its program calls."""

from __future__ import annotations

import pytest

from conformance.known_failures import SHIPPED, load

COLUMN = "cpu/aot_eager"
ENTRIES = load(SHIPPED)


def _covered(invariant: str, ops: set[str], text: str, column: str = COLUMN) -> bool:
    return any(e.covers(invariant, column, None, ops, text) for e in ENTRIES)


def _raised(eager: str, compiled: str) -> str:
    return f"[compile.raises] eager and aot_eager differ at the call: eager {eager}; {compiled}"


NONDIFF = (
    "compiled raised unclassified AssertionError (AssertionError: Expected fwd_out to be a "
    "BaseListVariable)"
)
LEAF = (
    "raised INPLACE_ON_LEAF (RuntimeError: a leaf Variable that requires grad has been used in "
    "an in-place operation.)"
)
NO_GRAD_VIEW = (
    "compiled raised NO_GRAD_VIEW_INPLACE (InternalTorchDynamoError: RuntimeError: A view was "
    "created in no_grad mode and its base or another view of its base has been modified inplace)"
)
CUSTOM_VIEW = (
    "compiled raised CUSTOM_FUNCTION_VIEW (BackendCompilerFailed: RuntimeError: Output 0 of "
    "ApplyTemplate is a view and its base or another view of its base has been modified inplace.)"
)

SAVED = (
    "raised SAVED_TENSOR_MODIFIED (RuntimeError: one of the variables needed for gradient "
    "computation has been modified by an inplace operation: [CPUFloatType [2]] ...)"
)
LATER = "[compile.raises] eager and aot_eager differ at the eager step after it, 0: eager "

CASES = [
    (
        "compile.raises",
        {"mul_s", "fn_scale", "neg_"},
        LATER + SAVED + "; compiled did not raise",
        True,
    ),
    ("compile.raises", {"mul_s", "sin", "neg_"}, LATER + SAVED + "; compiled did not raise", False),
    (
        "compile.raises",
        {"fn_scale"},
        LATER + "raised NOT_BROADCASTABLE (...); compiled did not raise",
        False,
    ),
    ("compile.raises", {"mul_s", "fn_nondiff"}, _raised("did not raise", NONDIFF), True),
    ("compile.raises", {"mul_s", "sign"}, _raised("did not raise", NONDIFF), False),
    ("compile.raises", {"fn_nondiff"}, _raised("did not raise", "compiled raised X (...)"), False),
    ("compile.raises", {"clone", "select", "fn_mul_"}, _raised(LEAF, NO_GRAD_VIEW), True),
    ("compile.raises", {"clone", "select", "mul_"}, _raised(LEAF, NO_GRAD_VIEW), False),
    ("compile.raises", {"clone", "fn_mul_"}, _raised("did not raise", NO_GRAD_VIEW), False),
    ("compile.raises", {"mul_s", "fn_view", "add_s_"}, _raised("did not raise", CUSTOM_VIEW), True),
    ("compile.raises", {"mul_s", "view", "add_s_"}, _raised("did not raise", CUSTOM_VIEW), False),
    (
        "compile.raises",
        {"mul_s", "fn_view", "add_s_"},
        _raised("raised CUSTOM_FUNCTION_VIEW (...)", CUSTOM_VIEW),
        False,
    ),
]


@pytest.mark.parametrize("invariant, ops, text, known", CASES)
def test_the_function_compile_entries_cover_their_class_only(invariant, ops, text, known):
    assert _covered(invariant, ops, text) is known


def test_the_dynamo_entries_hold_under_every_backend():
    text = _raised("did not raise", NONDIFF)
    assert _covered("compile.raises", {"fn_nondiff"}, text, "cpu/eager")
    assert not _covered("compile.raises", {"mul_s", "fn_view", "add_s_"}, CUSTOM_VIEW, "cpu/eager")


def test_the_compiled_repro_defines_the_functions_it_calls():
    import numpy as np

    from conformance.compiled.compare import Divergence
    from conformance.compiled.program import CompiledProgram, CStep
    from conformance.compiled.repro import repro_script
    from conformance.compiled.targets import Target
    from strategies.programs import Leaf

    leaf = Leaf(np.asarray([0.5, -1.0]), "float32", "cpu", True)
    program = CompiledProgram(
        args=(CStep("leaf", out=0, leaf=leaf),),
        body=(CStep("mul_s", (0,), (1.0,), out=1), CStep("fn_scale", (1,), (2.0,), out=2)),
    )
    found = Divergence("compile.outputs", "call", "after the call: ...", (2,))
    script = repro_script(program, Target("aot_eager", True, ""), found)
    assert "class Scale(torch.autograd.Function):" in script
    assert "class SignND" not in script
