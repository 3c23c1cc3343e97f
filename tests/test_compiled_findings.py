"""The torch.compile findings (docs/findings.md, "torch.compile"): a backend's
failure is reported by the error it wraps, and the shipped known-failure
entries for them cover their own class of divergence and nothing next to it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from conformance.compiled.compare import compare, diverges
from conformance.compiled.minimize import minimize
from conformance.compiled.program import Call, CompiledProgram, CStep
from conformance.compiled.repro import repro_script
from conformance.compiled.run import execute
from conformance.compiled.targets import Target
from conformance.known_failures import SHIPPED, load
from strategies.programs import Leaf

AOT_EAGER = Target("aot_eager", True, "")
COLUMN = "cpu/aot_eager"


def _leaf(out: int, values, requires_grad: bool = False) -> CStep:
    leaf = Leaf(np.asarray(values, dtype=np.float64), "float32", "cpu", requires_grad)
    return CStep("leaf", out=out, leaf=leaf)


# t0.data = t1; t1.tanh_(): AOTAutograd refuses a set_() on an input that has
# other mutations, and Dynamo wraps its AssertionError in BackendCompilerFailed
SET_DATA_THEN_WRITE = CompiledProgram(
    args=(_leaf(0, [2.5, 0.0], requires_grad=True), _leaf(1, [1.5, -1.0])),
    body=(CStep("set_data", (0, 1)), CStep("tanh_", (1,))),
)
CAUSE = "BackendCompilerFailed: AssertionError: Encountered a set_ on a graph input"


def test_a_backend_failure_is_reported_by_the_error_it_wraps():
    found = compare(
        SET_DATA_THEN_WRITE,
        execute(SET_DATA_THEN_WRITE, None),
        execute(SET_DATA_THEN_WRITE, AOT_EAGER),
    )
    assert found is not None and found.invariant == "compile.raises"
    assert f"compiled raised unclassified BackendCompilerFailed ({CAUSE}" in found.message


def test_the_repro_script_prints_the_wrapped_error(tmp_path):
    found = compare(
        SET_DATA_THEN_WRITE,
        execute(SET_DATA_THEN_WRITE, None),
        execute(SET_DATA_THEN_WRITE, AOT_EAGER),
    )
    script = tmp_path / "repro.py"
    script.write_text(repro_script(SET_DATA_THEN_WRITE, AOT_EAGER, found))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0  # it ends in the assertion that the calls differ
    assert CAUSE in run.stdout


SHIPPED_ENTRIES = load(SHIPPED)


def _covered(invariant: str, ops: set[str], text: str) -> bool:
    return any(e.covers(invariant, COLUMN, None, ops, text) for e in SHIPPED_ENTRIES)


def _raised(eager: str, compiled: str) -> str:
    return f"[compile.raises] eager and aot_eager differ at the call: eager {eager}; {compiled}"


def _backend(cause: str) -> str:
    return f"compiled raised unclassified BackendCompilerFailed (BackendCompilerFailed: {cause})"


QUIET = "did not raise"
OVERLAP = (
    "raised OVERLAPPING_WRITE (RuntimeError: unsupported operation: more than one element of "
    "the written-to tensor refers to a single memory location. Please clone() the tensor "
    "before performing the operation.)"
)
SET_ = "AssertionError: Encountered a set_ on a graph input, but the input has other mutations"
TANGENTS = "AssertionError: outs_to_grad length (2) != tangents length (1)"
NUMEL = "RuntimeError: Cannot call numel() on tensor with symbolic sizes/strides"
AFTER = "at the eager step after it, 0: eager did not raise; compiled raised unclassified "
MADE_INSIDE = (
    "RuntimeError (RuntimeError: Output 0 of Transpose is a view and is being modified "
    "inplace. This view was created inside a custom Function (or because an input was "
    "returned as-is))"
)
MULTI_VIEW = (
    "RuntimeError (RuntimeError: Output 0 of UnbindBackward0 is a view and is being modified "
    "inplace. This view is the output of a function that returns multiple views.)"
)
SHARE = "after the call: t0 and t1 share memory compiled; eager: separate"
SEPARATE = "after the call: t0 and t2 do not share memory compiled; eager: shared"
LEAF = "after the call: t3.is_leaf is True compiled, False eager"
ALIASED = "aliased inputs"
# triaged from the ten-seed ci sweep
CHAIN = (
    "RuntimeError: During torch.compile, encountered a mutation on a view chain of length 2, "
    "where view 1 was an as_strided() call. as_strided() is non-compositional"
)
ROSE = (
    "after the eager step 0 after the call: t5's version counter rose compiled (0 -> 1); "
    "eager's stayed (0 -> 0)"
)
STAYED = (
    "after the eager step 0 after the call: t5's version counter stayed compiled (0 -> 0); "
    "eager's rose (0 -> 1)"
)
HOLDS = "after the call: argument t0 (uint8[2]) holds [10, 9] compiled, [8, 8] eager"
VALUES = "t2 holds [[0.0, 0.0]] compiled, [[1.0, 2.0]] eager"
REPLAY = _raised(
    QUIET,
    "compiled raised INDEX_OUT_OF_RANGE (IndexError: Dimension out of range (expected to be "
    "in range of [-1, 0], but got 1))",
)
REPLAY_T = _raised(
    QUIET,
    "compiled raised INVALID_SHAPE (RuntimeError: t() expects a tensor with <= 2 dimensions, "
    "but self is 3D)",
)
NO_GRAD_VIEW = (
    "raised NO_GRAD_VIEW_INPLACE (RuntimeError: A view was created in no_grad mode and is "
    "being modified inplace with grad mode enabled.)"
)
NO_GRAD_VIEW_COMPILED = [
    _raised(NO_GRAD_VIEW, "compiled did not raise"),
    _raised(NO_GRAD_VIEW, "compiled raised INPLACE_ON_LEAF_VIEW (RuntimeError: a view of a leaf)"),
    _raised(NO_GRAD_VIEW, "compiled raised MULTI_OUTPUT_VIEW_INPLACE (TorchRuntimeError: ...)"),
]
ASSERT = (
    "RuntimeError (RuntimeError: out != nullptr INTERNAL ASSERT FAILED at "
    '"/__w/pytorch/pytorch/torch/csrc/autograd/variable.cpp":207, please report a bug to '
    "PyTorch.)"
)

STRICTER = _raised(QUIET, "compiled " + OVERLAP)
LEAF_ERROR = (
    "raised INPLACE_ON_LEAF (RuntimeError: a leaf Variable that requires grad is being used in "
    "an in-place operation.)"
)
VIEW_ERROR = (
    "raised INPLACE_ON_LEAF_VIEW (TorchRuntimeError: RuntimeError when making fake tensor call)"
)

CASES = [
    # each finding as the suite reports it: covered
    ("compile.raises", {"set_data", "tanh_"}, _raised(QUIET, _backend(SET_)), True),
    ("compile.raises", {"expand", "mul_s_"}, _raised(OVERLAP, "compiled did not raise"), True),
    ("compile.raises", {"mark_dirty", "graph_break"}, _raised(QUIET, _backend(TANGENTS)), True),
    ("compile.raises", {"view", "zero_", ALIASED}, _raised(QUIET, _backend(NUMEL)), True),
    ("compile.aliasing", {"unsqueeze", "set_data"}, SHARE, True),
    ("compile.aliasing", {"expand", "set_data", "setitem"}, SEPARATE, True),
    ("compile.autograd_flags", {"mul_s", "view", "div_s_", "zero_", ALIASED}, LEAF, True),
    ("compile.raises", {"mul_s", "transpose", "exp_"}, AFTER + MADE_INSIDE, True),
    ("compile.input_mutation", {"copy_"}, "argument t2 (float64[]) holds -0.25 compiled", True),
    # their neighbours: not covered
    (
        "compile.raises",
        {"set_data", "tanh_"},
        _raised(QUIET, _backend("RuntimeError: other")),
        False,
    ),
    ("compile.raises", {"tanh_"}, _raised(QUIET, _backend(SET_)), False),
    ("compile.raises", {"expand"}, _raised(OVERLAP, "compiled raised RuntimeError (other)"), False),
    ("compile.raises", {"expand"}, _raised(QUIET, "compiled raised " + OVERLAP), False),
    ("compile.raises", {"clone", "mul_s_"}, _raised(QUIET, _backend(TANGENTS)), False),
    ("compile.raises", {"view", "zero_"}, _raised(QUIET, _backend(NUMEL)), False),
    ("compile.raises", {"view", ALIASED}, _raised(QUIET, _backend("RuntimeError: other")), False),
    ("compile.aliasing", {"unsqueeze", "transpose"}, SHARE, False),
    (
        "compile.aliasing",
        {"set_data"},
        "after the call: t1 starts at storage offset 2 compiled, 0 eager",
        False,
    ),
    ("compile.autograd_flags", {"mul_s", "view", "div_s_"}, LEAF, False),
    ("compile.raises", {"mul_s", "unbind"}, AFTER + MULTI_VIEW, False),
    ("compile.input_mutation", {"copy_"}, "argument t2 (float64[2]) holds [0.0, 1.0]", False),
    ("compile.input_mutation", {"copy_"}, "argument t2 (float32[]) holds -0.25 compiled", False),
    # triaged from the ten-seed ci sweep (docs/findings.md, "Found by the ci sweep")
    ("compile.raises", {"data", "as_strided", "mul_"}, _raised(OVERLAP, _backend(CHAIN)), True),
    ("compile.raises", {"as_strided", "mul_"}, _raised(QUIET, _backend(CHAIN)), True),
    ("compile.raises", {"data", "narrow", "mul_"}, _raised(QUIET, _backend(CHAIN)), False),
    ("compile.raises", {"as_strided", "mul_"}, _raised(QUIET, _backend(NUMEL)), False),
    ("compile.version", {"clone", "set_grad", "sum", "backward"}, ROSE, True),
    ("compile.version", {"clone", "sum", "backward"}, ROSE, False),
    ("compile.version", {"clone", "set_grad", "sum", "backward"}, STAYED, False),
    ("compile.input_mutation", {"expand", "split_with_sizes", "setitem_t"}, HOLDS, True),
    ("compile.input_mutation", {"expand", "setitem"}, HOLDS, False),
    ("compile.outputs", {"expand", "setitem_t"}, "after the call: " + VALUES, False),
    ("compile.raises", {"mul_s", "diagonal", "mul_s_", ALIASED}, REPLAY, True),
    ("compile.raises", {"mul_s", "diagonal", "mul_s_"}, REPLAY, False),
    ("compile.raises", {"neg_", "exp", "clone", "t", ALIASED}, REPLAY_T, True),
    ("compile.raises", {"neg_", "exp", "clone", "t"}, REPLAY_T, False),
    ("compile.outputs", {"mul_s", "unfold", "hsplit", "add_"}, "after the call: " + VALUES, True),
    ("compile.outputs", {"mul_s", "narrow", "add_"}, "after the call: " + VALUES, False),
    ("compile.input_mutation", {"unfold", "add_"}, HOLDS, False),
    *[
        ("compile.raises", {"clone", "tensor_split", "graph_break", "zero_"}, text, True)
        for text in NO_GRAD_VIEW_COMPILED
    ],
    ("compile.raises", {"clone", "tensor_split", "zero_"}, NO_GRAD_VIEW_COMPILED[0], False),
    (
        "compile.raises",
        {"clone", "graph_break", "zero_"},
        _raised(
            "raised INPLACE_ON_LEAF_VIEW (RuntimeError: a view of a leaf)", "compiled did not raise"
        ),
        False,
    ),
    (
        "compile.raises",
        {"clone", "graph_break", "zero_"},
        AFTER.replace("eager did not raise", "eager raised NO_GRAD_VIEW_INPLACE (...)"),
        False,
    ),
    ("compile.raises", {"clone", "retain_grad", "mul_"}, AFTER + ASSERT, True),
    ("compile.raises", {"clone", "mul_"}, AFTER + ASSERT, False),
    ("compile.raises", {"clone", "as_strided", "narrow", "exp_"}, STRICTER, True),
    ("compile.raises", {"clone", "expand", "narrow", "exp_"}, STRICTER, False),
    (
        "compile.raises",
        {"clone", "as_strided", "narrow", "exp_"},
        _raised(QUIET, "compiled raised PARTIAL_OVERLAP (RuntimeError: ...)"),
        False,
    ),
    ("compile.raises", {"setitem"}, _raised(LEAF_ERROR, "compiled " + VIEW_ERROR), True),
    ("compile.raises", {"add_"}, _raised(LEAF_ERROR, "compiled " + VIEW_ERROR), False),
    ("compile.raises", {"setitem"}, _raised(VIEW_ERROR, "compiled " + LEAF_ERROR), False),
]

# triaged from the ten-seed ci sweep after the surface merge (seeds 1, 3, 9)
LEAF_VIEW_WRITE = _raised(
    QUIET,
    "compiled raised INPLACE_ON_LEAF_VIEW (RuntimeError: a view of a leaf Variable that "
    "requires grad is being used in an in-place operation.)",
)
DOUBLE = (
    "[compile.raises] eager and aot_eager differ at the eager step after it, 1: eager did not "
    "raise; compiled raised unclassified RuntimeError (RuntimeError: torch.compile with "
    "aot_autograd does not currently support double backward)"
)
CONJ = _raised(
    QUIET,
    "compiled raised UNRESOLVED_CONJ (BackendCompilerFailed: RuntimeError: view_as_real doesn't "
    "work on unresolved conjugated tensors.  To resolve the conjugate tensor so you can view it "
    "as real, use self.resolve_conj(); however, be warned that the resulting tensor will NOT "
    "alias the original.)",
)
CASES += [
    ("compile.raises", {"getitem", "graph_break", "data", "sub_"}, LEAF_VIEW_WRITE, True),
    ("compile.raises", {"getitem", "data", "sub_"}, LEAF_VIEW_WRITE, False),
    ("compile.raises", {"getitem", "graph_break", "sub_"}, LEAF_VIEW_WRITE, False),
    (
        "compile.raises",
        {"getitem", "graph_break", "data", "sub_"},
        _raised("raised INPLACE_ON_LEAF (...)", "compiled raised INPLACE_ON_LEAF_VIEW (...)"),
        False,
    ),
    ("compile.raises", {"cos", "grad_cg", "backward_g"}, DOUBLE, True),
    ("compile.raises", {"cos", "autograd_grad", "backward_g"}, DOUBLE, False),
    (
        "compile.raises",
        {"cos", "grad_cg", "backward_g"},
        DOUBLE.replace("does not currently support double backward", "other"),
        False,
    ),
    ("compile.raises", {"mul_s", "conj", "real", "add_"}, CONJ, True),
    ("compile.raises", {"mul_s", "conj", "add_"}, CONJ, False),
    ("compile.raises", {"view_as_real", "conj", "add_"}, CONJ, False),
    (
        "compile.raises",
        {"mul_s", "conj", "real", "add_"},
        _raised(QUIET, "compiled raised INDEX_OUT_OF_RANGE (BackendCompilerFailed: ...)"),
        False,
    ),
]
NONDIFF = (
    "AssertionError: aot_autograd() does not yet handle non-differentiable view input "
    "mutations. input 0 (t1) and input 1 (t0) share storage but are not differentiable views "
    "of each other."
)
ANY_LEAF = "AssertionError: any_leaf=True != all_leaf=False for outer_indices=[0, 1]"
CASES += [
    ("compile.raises", {"detach", "mul_s_", ALIASED}, _raised(QUIET, _backend(NONDIFF)), True),
    ("compile.raises", {"detach", "mul_s_"}, _raised(QUIET, _backend(NONDIFF)), False),
    ("compile.raises", {"detach", "mul_s_", ALIASED}, _raised(QUIET, _backend(SET_)), False),
    (
        "compile.raises",
        {"getitem", "graph_break", "exp_"},
        _raised(QUIET, _backend(ANY_LEAF)),
        True,
    ),
    ("compile.raises", {"getitem", "exp_", ALIASED}, _raised(QUIET, _backend(ANY_LEAF)), False),
    ("compile.raises", {"getitem", "graph_break", "exp_"}, _raised(QUIET, _backend(NUMEL)), False),
]

# out= let into compiled programs (docs/findings.md, "out= let into compiled programs")
NEG_OUT = _raised(
    "raised OUT_DTYPE (RuntimeError: Found dtype Double but expected Float)",
    "compiled did not raise",
)
FAKE_RESIZE = _raised(
    QUIET,
    "compiled raised unclassified TorchRuntimeError (TorchRuntimeError: RuntimeError when making "
    "fake tensor call: RuntimeError: tried to directly modify sizes for customized tensor)",
)
FN_VIEW_ERRORS = _raised(
    "raised CUSTOM_FUNCTION_VIEW (RuntimeError: ... You can fix this by cloning the output of the "
    "custom Function.)",
    "compiled raised NO_GRAD_VIEW_INPLACE (TorchRuntimeError: ...)",
)
DTYPE_VIEWS = _backend(
    "AssertionError: aot_autograd() does not yet handle input mutations on views with "
    "different dtypes."
)
SHARED = "[compile.aliasing] eager and aot_eager differ after the call: t1 and t3 share memory "
CASES += [
    ("compile.raises", {"neg_out"}, NEG_OUT, True),
    ("compile.raises", {"add_out"}, NEG_OUT, False),
    ("compile.raises", {"mul_out"}, FAKE_RESIZE, True),
    ("compile.raises", {"mul_out"}, _raised(QUIET, "compiled raised unclassified X (...)"), False),
    ("compile.raises", {"fn_view", "add_s_"}, FN_VIEW_ERRORS, True),
    ("compile.raises", {"view", "add_s_"}, FN_VIEW_ERRORS, False),
    ("compile.raises", {"mul_s", "view_dtype", "sin_"}, _raised(QUIET, DTYPE_VIEWS), True),
    ("compile.input_mutation", {"getitem", "detach", "add_"}, HOLDS, True),
    ("compile.input_mutation", {"getitem", "mul_"}, HOLDS, False),
    ("compile.aliasing", {"pow", "mul_s", ALIASED}, SHARED + "compiled; eager: separate", True),
    ("compile.aliasing", {"pow", "mul_s"}, SHARED + "compiled; eager: separate", False),
]


@pytest.mark.parametrize("invariant, ops, text, known", CASES)
def test_the_shipped_compile_entries_cover_their_class_only(invariant, ops, text, known):
    assert _covered(invariant, ops, text) is known


def _traces(eager_error: str | None, compiled_error: str | None):
    from conformance.compiled.run import Outcome, Trace

    return (
        Trace([Outcome("call", eager_error, "eager's")]),
        Trace([Outcome("call", compiled_error, "compiled")]),
    )


@pytest.mark.parametrize(
    "eager, compiled, diverges",
    [
        # eager's error is of no documented class: only that both raise is held
        ("unclassified NotImplementedError", "unclassified TorchRuntimeError", False),
        ("unclassified NotImplementedError", None, True),
        # a documented error: the compiled call raises the same class
        ("OVERLAPPING_WRITE", "unclassified BackendCompilerFailed", True),
        ("OVERLAPPING_WRITE", "PARTIAL_OVERLAP", True),
        ("OVERLAPPING_WRITE", "OVERLAPPING_WRITE", False),
        (None, "unclassified BackendCompilerFailed", True),
    ],
)
def test_an_undocumented_eager_error_holds_only_that_the_call_raises(eager, compiled, diverges):
    found = compare(SET_DATA_THEN_WRITE, *_traces(eager, compiled))
    assert (found is not None) is diverges
    if diverges:
        assert found.invariant == "compile.raises"


def _raises_alike(program, error: str) -> None:
    """The program's first call raises `error` eagerly and compiled, which the
    comparison takes for agreement."""
    eager, compiled = execute(program, None), execute(program, AOT_EAGER)
    assert eager.outcomes[0].error == compiled.outcomes[0].error == error
    assert compare(program, eager, compiled) is None


def test_a_copy_from_a_src_with_more_dimensions_raises_alike_compiled():
    # eager: "The size of tensor a (2) must match the size of tensor b (3)";
    # the meta kernel under Dynamo: "expand: the requested shape has too few
    # dimensions", wrapped in TorchRuntimeError. Both are NOT_BROADCASTABLE.
    program = CompiledProgram(
        args=(_leaf(0, [[1.0, 2.0, 3.0]] * 2), _leaf(1, [1.0, 2.0])),
        body=(CStep("copy_", (1, 0)),),
    )
    _raises_alike(program, "NOT_BROADCASTABLE")


def test_a_gradient_torch_autograd_grad_does_not_reach_is_none_on_both_sides():
    # t2 = t0.exp(); torch.autograd.grad(t2, t1, g, allow_unused=True) with
    # t1 unused: None, after the call, eagerly on both sides
    program = CompiledProgram(
        args=(
            _leaf(0, [1.0, 2.0], requires_grad=True),
            _leaf(1, [3.0, 4.0], requires_grad=True),
            _leaf(3, [1.0, 1.0]),
        ),
        body=(CStep("exp", (0,), out=2),),
        tail=(CStep("autograd_grad", (2, 1, 3), (False, True), out=4),),
    )
    eager, compiled = execute(program, None), execute(program, AOT_EAGER)
    assert [o.error for o in eager.outcomes] == [None, None], eager.outcomes
    assert 4 not in eager.outcomes[-1].snapshot.tokens
    assert compare(program, eager, compiled) is None


@pytest.mark.parametrize("shapes", [([-0.75], [[-3.5]]), ([[-0.75]], [2.0])], ids=["self", "mat2"])
def test_mm_of_a_tensor_that_is_not_2d_raises_alike_compiled(shapes):
    # eager: "self must be a matrix" (or mat2); the meta kernel: "a must be
    # 2D" (or b), wrapped in TorchRuntimeError. Both are SHAPE_MISMATCH.
    program = CompiledProgram(
        args=(_leaf(0, shapes[0]), _leaf(1, shapes[1])),
        body=(CStep("mm", (0, 1), no_grad=True, out=2),),
    )
    _raises_alike(program, "SHAPE_MISMATCH")


def test_a_view_the_strides_cannot_give_raises_alike_compiled():
    # eager: "view size is not compatible with input tensor's size and
    # stride"; the decomposition Dynamo runs on fake tensors: "Cannot view a
    # tensor with shape ... as a tensor with shape", in TorchRuntimeError.
    # Both are VIEW_INCOMPATIBLE (seed 6 of the ci sweep).
    program = CompiledProgram(
        args=(_leaf(0, np.ones((2, 2, 3, 3)), requires_grad=True),),
        body=(
            CStep("clone", (0,), out=1),
            CStep("movedim", (1,), (3, -4), out=2),
            CStep("view", (2,), ((6, 2, 3),)),
        ),
    )
    _raises_alike(program, "VIEW_INCOMPATIBLE")


def test_a_cast_into_out_that_is_refused_raises_alike_compiled():
    # eager: "result type ComplexFloat can't be cast to the desired output
    # type Float"; the reference's _safe_copy_out on fake tensors: "Attempting
    # to cast from torch.complex64 to out tensor with dtype torch.float32, but
    # this can't be cast because it is not safe!", in TorchRuntimeError. Both
    # are OUT_CAST (seed 0 of the ci sweep with out= let in).
    z = Leaf(np.asarray([1 + 1j, 2 - 1j]), "complex64", "cpu", False)
    program = CompiledProgram(
        args=(_leaf(0, [0.0, 0.0]), CStep("leaf", out=1, leaf=z), CStep("leaf", out=2, leaf=z)),
        body=(CStep("add_out", (0, 1, 2), no_grad=True),),
    )
    _raises_alike(program, "OUT_CAST")


def test_an_out_argument_read_before_an_eager_out_resize_stays_resizable():
    # ci --compile aot_eager, seed 4: torch.mul(t5, t6, out=t4) after the call
    # grows t4 from [1, 2] to [1, 3, 3, 1]; reading t4 through Tensor.numpy
    # after the call had marked its storage non-resizable, so the resize
    # failed halfway and t4 read past its storage, on both sides
    program = CompiledProgram(
        args=(
            _leaf(4, [[1.5, 1.0]]),
            CStep(
                "leaf", out=5, leaf=Leaf(np.arange(9).reshape(1, 3, 3, 1), "int16", "cpu", False)
            ),
            CStep("leaf", out=6, leaf=Leaf(np.asarray(-7), "int16", "cpu", False)),
        ),
        body=(),
        tail=(CStep("mul_out", (4, 5, 6)),),
    )
    eager = execute(program, None)
    assert [o.error for o in eager.outcomes] == [None, None], eager.outcomes
    assert eager.outcomes[-1].snapshot.seen[0].values.ravel().tolist() == [
        -7.0 * k for k in range(9)
    ]
    assert diverges(program, AOT_EAGER) is None


# --- call sequences (issue 35): a compiled function called again


def _written_then_read(second: CStep, change: str, detail: str) -> CompiledProgram:
    """t0.add_(1); t2 = t1 * 2, first on separate inputs, then again with t1
    made by `second` (from t0)."""
    a, b = _leaf(0, np.arange(6.0)), _leaf(1, np.arange(6.0))
    return CompiledProgram(
        args=(a, b),
        body=(CStep("add_s_", (0,), (1.0,)), CStep("mul_s", (1,), (2.0,), out=2)),
        calls=(Call(change, detail, (a, second)),),
    )


VIEW_LATER = _written_then_read(
    CStep("as_strided", (0,), ((6,), (1,), 0), out=1), "aliasing", "t1 is a view of t0"
)
SAME_LATER = _written_then_read(
    CStep("same", (0,), out=1), "aliasing", "t1 is t0 (the same tensor twice)"
)


def test_aliasing_that_appears_on_a_later_call_is_not_recompiled():
    """pytorch#139789: the second call passes t1 as a view of t0, which the
    function writes; Dynamo reuses the graph compiled for separate inputs,
    and t2 is computed from t1's stale values. Compiled afresh for those
    inputs, it agrees: compile.recompile, naming the call and its change."""
    found = diverges(VIEW_LATER, AOT_EAGER)
    assert found is not None and found.invariant == "compile.recompile", found
    assert found.call == 1 and not found.afresh
    assert "at call 2 of 2 (aliasing: t1 is a view of t0; Dynamo compiled no new graph" in (
        found.message
    )
    assert "[compile.outputs]" in found.message
    assert diverges(VIEW_LATER.alone(1), AOT_EAGER) is None  # afresh: eager's result
    text = f"[{found.invariant}] eager and aot_eager differ {found.message}"
    assert _covered(found.invariant, VIEW_LATER.ops, text)


def test_the_same_tensor_twice_recompiles_and_agrees():
    """Dynamo dedups an input passed twice and recompiles: aot_eager agrees
    with eager, and the #139789 entry does not excuse the class (the planted
    backend reuses_first_graph breaks exactly this)."""
    eager, compiled = execute(SAME_LATER, None), execute(SAME_LATER, AOT_EAGER)
    assert compiled.later_graphs == [1]
    assert compare(SAME_LATER, eager, compiled, exact=True) is None
    text = (
        "[compile.recompile] eager and aot_eager differ at call 2 of 2 (aliasing: t1 is t0 "
        "(the same tensor twice); Dynamo compiled 1 new graph for it): [compile.outputs] ..."
    )
    assert not _covered("compile.recompile", SAME_LATER.ops, text)


def test_a_later_call_that_fails_alone_is_the_fresh_programs():
    """A difference the later call's inputs show compiled afresh is no
    recompile's: it comes back `afresh`, named by its own rule, and is
    minimized as the fresh program. The planted rounds_float64 is right on
    float32 and wrong on float64, whichever call brings it."""
    plant = Target("tests.compile_plants:rounds_float64")
    wide = Leaf(np.asarray([0.1, 0.7]), "float64", "cpu", False)
    program = CompiledProgram(
        args=(_leaf(0, [0.1, 0.7]),),
        body=(CStep("mul_s", (0,), (3.0,), out=1),),
        calls=(Call("dtype", "t0 is float64 (was float32)", (CStep("leaf", out=0, leaf=wide),)),),
    )
    found = diverges(program, plant)
    assert found is not None and found.invariant == "compile.outputs", found
    assert found.call == 1 and found.afresh
    small, again = minimize(program, plant, found, attempts_left=4)
    assert again.invariant == "compile.outputs" and small.calls == ()
    assert small.args[0].leaf.dtype == "float64"


def test_the_repro_script_replays_the_sequence(tmp_path):
    found = diverges(VIEW_LATER, AOT_EAGER)
    script = tmp_path / "repro.py"
    script.write_text(repro_script(VIEW_LATER, AOT_EAGER, found))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0, run.stdout
    assert "call 2 of 2:" in run.stdout and "<-- differs" in run.stdout
    assert "differ at call(s) [2]" in run.stderr


def test_zero_through_an_expanded_intermediate_entry():
    raised = _raised(
        QUIET,
        "compiled raised OVERLAPPING_WRITE (BackendCompilerFailed: RuntimeError: more than one "
        "element of the written-to tensor refers to a single memory location)",
    )
    assert _covered("compile.raises", {"abs", "expand", "zero_"}, raised)
    assert not _covered("compile.raises", {"abs", "expand", "mul_s_"}, raised)  # zero_ only


def test_complex64_div_rounding_entries():
    """Eager's own div_ and div round complex64 differently: excused for
    complex64 div_ only."""
    for invariant in ("compile.outputs", "compile.input_mutation"):
        text = f"[{invariant}] eager and aot_eager differ after the call: t5 holds [(1+2j)] ..."
        assert any(
            e.covers(invariant, COLUMN, {"complex64"}, {"div_"}, text) for e in SHIPPED_ENTRIES
        )
        assert not any(
            e.covers(invariant, COLUMN, {"float32"}, {"div_"}, text) for e in SHIPPED_ENTRIES
        )
        assert not any(
            e.covers(invariant, COLUMN, {"complex64"}, {"mul_"}, text) for e in SHIPPED_ENTRIES
        )


def test_no_grad_view_error_order_entry():
    order = _raised(
        "raised NO_GRAD_VIEW_INPLACE (RuntimeError: A view was created in no_grad mode ... both "
        "outside (if you want the inplace to be tracked).)",
        "compiled raised INPLACE_ON_LEAF_VIEW (TorchRuntimeError: ...)",
    )
    assert _covered("compile.raises", {"unflatten", "set_data", "neg_"}, order)
    quiet = _raised(
        "raised NO_GRAD_VIEW_INPLACE (RuntimeError: A view was created in no_grad mode ... both "
        "outside (if you want the inplace to be tracked).)",
        QUIET,
    )
    assert not _covered("compile.raises", {"unflatten", "set_data", "neg_"}, quiet)


def test_an_expand_the_new_shape_refuses_is_the_same_error():
    """A later call's other shape makes a fixed expand() refuse: eager's
    NOT_BROADCASTABLE, and the meta kernel's spelling of it (ci seed 9)."""
    leaf = Leaf(np.ones((1, 3, 2, 2)), "int16", "cpu", False)
    program = CompiledProgram(
        args=(CStep("leaf", out=0, leaf=leaf),),
        body=(CStep("expand", (0,), ((2, 2, 3, 2, 1),), out=1),),
    )
    eager, compiled = execute(program, None), execute(program, AOT_EAGER)
    assert eager.outcomes[0].error == compiled.outcomes[0].error == "NOT_BROADCASTABLE"
    assert compare(program, eager, compiled) is None


def test_set_data_across_a_graph_break_entry():
    said = _backend(
        "AssertionError: aot_autograd() does not yet handle non-differentiable view input "
        "mutations. input 0 (t1) and input 1 (t0) share storage"
    )
    text = _raised(QUIET, said)
    assert _covered("compile.raises", {"set_data", "graph_break", "copy_"}, text)
    assert not _covered("compile.raises", {"set_data", "copy_"}, text)  # no break: not this


def test_set_data_of_another_complex_dtype_entry():
    text = _raised(
        QUIET, "compiled raised unclassified AssertionError (AssertionError: True != False)"
    )
    assert _covered("compile.raises", {"permute", "set_data"}, text)
    assert not _covered("compile.raises", {"permute", "copy_"}, text)


def test_empty_output_beside_aliased_inputs_entry():
    text = "[compile.grad] eager and aot_eager differ after the eager step 0 after the call: "
    text += "t2.grad is None compiled, [[-0.0, -0.0]] eager"
    assert _covered("compile.grad", {"mul_s", "narrow", "zero_", ALIASED}, text)
    assert not _covered("compile.grad", {"mul_s", "narrow", "zero_"}, text)  # no aliased inputs


# --- ci --compile inductor: the entries for inductor hold for its column only
# (inductor is built on aot_eager: aot_eager's entries hold for inductor, not
# the reverse)

INDUCTOR = "cpu/inductor"


def _covered_in(column: str, invariant: str, ops: set[str], text: str) -> bool:
    return any(e.covers(invariant, column, None, ops, text) for e in SHIPPED_ENTRIES)


def _differ(target: str, where: str, text: str, invariant: str = "compile.raises") -> str:
    return f"[{invariant}] eager and {target} differ {where}: {text}"


def _entry(finding: str):
    (entry,) = [e for e in SHIPPED_ENTRIES if e.finding == finding]
    return entry


def test_inductor_whole_view_output_entry():
    after = "after the eager step 0 after the call"
    said = "t3.requires_grad is True compiled, False eager"
    ops = {"mul_s", "view", "requires_grad_"}
    text = _differ("inductor", after, said, "compile.autograd_flags")
    assert _covered_in(INDUCTOR, "compile.autograd_flags", ops, text)
    assert not _covered_in(COLUMN, "compile.autograd_flags", ops, text)  # inductor only
    assert not _covered_in(INDUCTOR, "compile.autograd_flags", {"mul_s", "view"}, text)
    other = text.replace("requires_grad is True compiled, False eager", "is_leaf is True compiled")
    assert not _covered_in(INDUCTOR, "compile.autograd_flags", ops, other)


def test_inductor_complex_as_strided_write_entry():
    said = "t4 holds (15+0j) compiled, (20+0j) eager"
    text = _differ("inductor", "after the call", said, "compile.outputs")
    ops = {"mul_", "clone", "as_strided", "sum"}
    assert _covered_in(INDUCTOR, "compile.outputs", ops, text)
    assert not _covered_in(COLUMN, "compile.outputs", ops, text)  # inductor only
    assert not _covered_in(INDUCTOR, "compile.outputs", {"mul_", "clone", "narrow", "sum"}, text)
    real = _differ(
        "inductor", "after the call", "t4 holds 15.0 compiled, 20.0 eager", "compile.outputs"
    )
    assert not _covered_in(INDUCTOR, "compile.outputs", ops, real)  # complex values only


INFERENCE = _differ(
    "inductor",
    "at the call",
    "eager raised INFERENCE_INPLACE (RuntimeError: Inplace update to inference tensor outside "
    "InferenceMode is not allowed.You can make a clone to get a normal tensor before doing "
    "inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.); compiled "
    "did not raise",
)


def test_inductor_inference_write_entry():
    assert _covered_in(INDUCTOR, "compile.raises", {"add_s_"}, INFERENCE)
    assert not _covered_in(COLUMN, "compile.raises", {"add_s_"}, INFERENCE)  # inductor only
    raised = INFERENCE.replace("compiled did not raise", "compiled raised INPLACE_ON_LEAF (...)")
    assert not _covered_in(INDUCTOR, "compile.raises", {"add_s_"}, raised)


EMPTY_COMPLEX = _differ(
    "inductor",
    "at the call",
    "eager did not raise; compiled raised DTYPE_VIEW_LAYOUT (BackendCompilerFailed: RuntimeError: "
    "self.stride(0) must be divisible by 2 to view Double as ComplexDouble (different element "
    "sizes), but got 3)",
)


def test_inductor_empty_complex_view_dtype_entry():
    """ci seed 4: t3 = t2.div(c); t4 = t2.detach(); t4.tanh_() of an empty
    complex128 t2 that requires grad, refused by inductor alone."""
    ops = {"div_s", "detach", "tanh_"}
    assert _covered_in(INDUCTOR, "compile.raises", ops, EMPTY_COMPLEX)
    assert not _covered_in(COLUMN, "compile.raises", ops, EMPTY_COMPLEX)  # inductor only
    assert not _covered_in(INDUCTOR, "compile.raises", {"div_s", "tanh_"}, EMPTY_COMPLEX)
    real = EMPTY_COMPLEX.replace("to view Double as ComplexDouble", "to view Float as Double")
    assert not _covered_in(INDUCTOR, "compile.raises", ops, real)
    eager_raised = EMPTY_COMPLEX.replace(
        "eager did not raise", "eager raised DTYPE_VIEW_LAYOUT (.)"
    )
    assert not _covered_in(INDUCTOR, "compile.raises", ops, eager_raised)


# --- triaged after the findfix merge: a default-profile run on 2.13.0, and
# --compile aot_eager on 2.4.1 (ci seed 0)

INDEX_COPY = (
    "eager raised INDEX_OUT_OF_RANGE (IndexError: index_copy_(): index 1 is out of "
    "bounds for dimension 1 with size 1); compiled raised INPLACE_ON_LEAF (TorchRuntimeError: "
    "RuntimeError when making fake tensor call: RuntimeError: a leaf Variable that requires grad "
    "is being used in an in-place operation.)"
)


def test_index_copy_out_of_range_error_class_entry():
    """An aot_eager entry: it holds for inductor too (built on aot_eager)."""
    ops = {"index_copy_", "sin_"}
    for target, column in (("aot_eager", COLUMN), ("inductor", INDUCTOR)):
        text = _differ(target, "at the call", INDEX_COPY)
        assert _covered_in(column, "compile.raises", ops, text)
    text = _differ("aot_eager", "at the call", INDEX_COPY)
    assert not _covered_in(COLUMN, "compile.raises", {"index_add_", "sin_"}, text)
    other = text.replace("index_copy_(): index 1 is out of bounds", "index 1 is out of bounds")
    assert not _covered_in(COLUMN, "compile.raises", ops, other)  # another op's index check
    compiled_side = _raised(QUIET, "compiled raised INDEX_OUT_OF_RANGE (IndexError: ...)")
    assert not _covered_in(COLUMN, "compile.raises", ops, compiled_side)


def test_data_write_of_saved_input_entry():
    """2.4.1 only: 2.13.0 and 2.14.1 compile it."""
    text = (
        "aot_eager: the compiled call raised BackendCompilerFailed: backend='aot_eager' raised: "
        "RuntimeError: one of the variables needed for gradient computation has been modified "
        "by an inplace operation: [torch.HalfTensor [3]], which is output 0 of CloneBackward0"
    )
    assert _covered("data.write_is_silent", set(), text)
    assert not _covered("data.write_changes_gradient", set(), text)
    assert not _covered("data.write_is_silent", set(), "aot_eager: backward raised: other")
    entry = _entry("compile-data-write-of-saved-input-refused")
    assert entry.applies_to_build("2.4.1") and not entry.applies_to_build("2.13.0")


def test_complex_scalar_mul_conj_entry():
    said = _backend(
        "RuntimeError: aten::_conj() Expected a value of type 'Tensor' for argument 'self' but "
        "instead found type 'complex'."
    )
    text = _raised(QUIET, said)
    assert _covered("compile.raises", {"mul_s"}, text)
    assert _covered_in(INDUCTOR, "compile.raises", {"getitem", "clone", "mul_s"}, text)
    assert not _covered("compile.raises", {"add_s"}, text)
    assert not _covered("compile.raises", {"mul_s"}, _raised(QUIET, _backend("RuntimeError: x")))
    entry = _entry("compile-complex-scalar-mul-conj-refused")
    assert entry.applies_to_build("2.4.1") and not entry.applies_to_build("2.13.0")


def test_leaf_setitem_no_error_entry():
    view_of_leaf = (
        "raised INPLACE_ON_LEAF_VIEW (RuntimeError: a view of a leaf Variable that requires grad "
        "is being used in an in-place operation.)"
    )
    text = _raised(view_of_leaf, "compiled did not raise")
    assert _covered("compile.raises", {"setitem_s"}, text)
    assert not _covered("compile.raises", {"fill_"}, text)
    other = _raised(view_of_leaf, "compiled raised INPLACE_ON_LEAF (RuntimeError: a leaf)")
    assert not _covered("compile.raises", {"setitem_s"}, other)
    tensor_value = {"setitem"}  # t0[2, 2:2:3] = t1: the same run's next draw
    assert _covered("compile.raises", tensor_value, text)
    assert not _covered("compile.raises", tensor_value, other)
    entries = [e for e in SHIPPED_ENTRIES if e.finding == "compile-leaf-setitem-no-error"]
    assert len(entries) == 2
    assert all(e.applies_to_build("2.4.1") and not e.applies_to_build("2.13.0") for e in entries)


def test_dynamic_aliased_unhashable_symint_entry():
    text = _raised(QUIET, _backend("TypeError: unhashable type: non-nested SymInt"))
    assert _covered("compile.raises", {"zero_", "exp", ALIASED}, text)
    assert not _covered("compile.raises", {"zero_", "exp"}, text)  # no aliased inputs
    other = _raised(QUIET, _backend("TypeError: unhashable type: 'list'"))
    assert not _covered("compile.raises", {"zero_", "exp", ALIASED}, other)
    entry = _entry("compile-dynamic-aliased-unhashable-symint")
    assert entry.applies_to_build("2.4.1") and not entry.applies_to_build("2.13.0")


def test_fn_nondiff_output_requires_grad_entry():
    """2.4.1 only, under every backend (Dynamo's): no target."""
    said = "t1.requires_grad is True compiled, False eager"
    for target, column in (("aot_eager", COLUMN), ("inductor", INDUCTOR)):
        text = _differ(target, "after the call", said, "compile.autograd_flags")
        assert _covered_in(column, "compile.autograd_flags", {"fn_nondiff"}, text)
    text = _differ("aot_eager", "after the call", said, "compile.autograd_flags")
    assert not _covered("compile.autograd_flags", {"fn_view"}, text)
    leaf = text.replace("requires_grad is True compiled, False eager", "is_leaf is True compiled")
    assert not _covered("compile.autograd_flags", {"fn_nondiff"}, leaf)
    entry = _entry("compile-fn-nondiff-output-requires-grad")
    assert entry.applies_to_build("2.4.1") and not entry.applies_to_build("2.13.0")


def test_donated_buffers_entry():
    """ci seeds 1, 4, 8 (aot_eager) and 3, 9 (inductor): backward(retain_graph=True)
    after a call compiled with dynamic shapes, refused by its donated buffers."""
    text = (
        "[compile.raises] eager and aot_eager differ at the eager step after it, 0: eager did "
        "not raise; compiled raised unclassified RuntimeError (RuntimeError: This backward "
        "function was compiled with non-empty donated buffers which requires "
        "create_graph=False and retain_graph=False. Please keep backward(create_graph=False, "
        "retain_graph=False) or turn off donated buffer)"
    )
    for column in (COLUMN, "cpu/inductor"):
        assert any(
            e.covers("compile.raises", column, None, {"mul_s", "div"}, text)
            for e in SHIPPED_ENTRIES
        )
    assert not _covered("compile.grad", {"mul_s", "div"}, text)


def test_fn_view_of_a_plain_input_entry():
    """ci --compile aot_eager seed 0 (issue 37 c): ViewFn.apply(t4) of a t4 that
    requires no grad, then t4.copy_(t6) with t6 requiring grad: eager refuses reading
    t5.is_leaf, the compiled call hands back an ordinary view; every backend."""
    said = "t5.is_leaf is False compiled, raises eager"
    for target, column in (("aot_eager", COLUMN), ("inductor", INDUCTOR)):
        text = _differ(target, "after the call", said, "compile.autograd_flags")
        assert _covered_in(column, "compile.autograd_flags", {"fn_view", "copy_"}, text)
    text = _differ("aot_eager", "after the call", said, "compile.autograd_flags")
    assert not _covered("compile.autograd_flags", {"copy_"}, text)  # no custom Function
