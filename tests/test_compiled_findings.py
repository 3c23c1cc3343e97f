"""The torch.compile findings (docs/findings.md, "torch.compile"): a backend's
failure is reported by the error it wraps, and the shipped known-failure
entries for them cover their own class of divergence and nothing next to it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from conformance.compiled.compare import compare, diverges
from conformance.compiled.program import CompiledProgram, CStep
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
        tail=(CStep("autograd_grad", (2, 1, 3), (False,), out=4),),
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
