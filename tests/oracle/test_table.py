"""The OPS table, error classification, tolerances, and the no-torch rule."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from oracle import DTYPES, OPS, Engine, ErrorKind, classify, tolerance

ROOT = Path(__file__).resolve().parents[2]
NAMES = """clone detach detach_ data set_data copy_ zeros_like
getitem select view reshape transpose t permute expand unsqueeze squeeze
add sub mul div add_s sub_s mul_s div_s neg exp log tanh sigmoid relu sin cos sqrt abs pow_s
sum mean sum_dim mm matmul
flip cumsum take gather index_fill_ lerp_ max_dim_k aminmax_k var_mean_k std_mean_k
unsafe_split_k unsafe_chunk_k unsafe_split_with_sizes_k
add_ sub_ mul_ div_ add_s_ sub_s_ mul_s_ div_s_ zero_ fill_ exp_ tanh_ sigmoid_ relu_ sin_ neg_
clamp_ clamp_min_ setitem setitem_s backward backward_g requires_grad_ retain_grad zero_grad
narrow diagonal movedim swapaxes swapdims unflatten unfold as_strided mT T H mH adjoint
unbind_k split_k split_with_sizes_k chunk_k tensor_split_k hsplit_k vsplit_k
setitem_t index_put_ masked_fill_ index_add_ index_copy_ scatter_ autograd_grad set_grad
fn_scale fn_mul_ fn_add_dirty_ fn_none_grad fn_nondiff fn_view sin_hooked_detach sin_hooked_x2_x2
add_out mul_out exp_out neg_out resize_ set_
foreach_add_s_ foreach_mul_s_ foreach_add_l_ foreach_mul_l_
conj neg_view resolve_conj resolve_neg view_as_real view_as_complex real imag view_dtype""".split()
NAMES += "transpose_ t_ squeeze_ unsqueeze_ swapdims_ as_strided_".split()  # in-place views
NAMES += "hook_mul hook_add hook_none hook_removed post_hook_mul grad_cg".split()  # gradapi
NAMES += """node_prehook_mul node_prehook_add node_prehook_none node_prehook_removed
acc_prehook_mul acc_prehook_add node_hook_mul node_hook_add node_hook_none
node_hook_removed""".split()  # gradapi: Node hooks


def test_every_op_has_one_consistent_row():
    assert sorted(OPS) == sorted(NAMES)
    for name, spec in OPS.items():
        assert spec.name == name
        tensors = {int(i) for i in re.findall(r"\{t(\d)\}", spec.torch)}
        params = {int(i) for i in re.findall(r"\{p(\d)\}", spec.torch)}
        assert tensors == set(range(spec.arity)), name
        assert params == set(range(len(spec.params))), name
        assert len(spec.param_kinds) in (0, len(spec.params)), name
        assert spec.statement == (
            " = " in spec.torch or name in ("backward", "backward_g", "retain_grad")
        ), name
        assert set(spec.dtypes) <= {"float", "complex", "int", "bool"} and spec.dtypes
        assert spec.exact_bump or spec.inplace


def test_saves_follow_the_reference_table():
    assert OPS["mul"].saves == ("other_if_self_requires_grad", "self_if_other_requires_grad")
    assert OPS["div"].saves == ("other", "self_if_other_requires_grad")
    assert OPS["mm"].saves == OPS["mul"].saves
    for op in ("exp", "tanh", "sigmoid", "relu", "sqrt", "exp_", "tanh_", "sigmoid_", "relu_"):
        assert OPS[op].saves == ("result",), op
    for op in ("log", "sin", "cos", "abs", "pow_s", "sin_", "clamp_"):
        assert OPS[op].saves == ("self",), op
    for op in ("add", "sub", "neg", "sum", "mean", "clone", "copy_", "zero_", "fill_", "add_s"):
        assert OPS[op].saves == (), op
    assert not OPS["clamp_"].exact_bump


def test_tolerance_and_classify():
    assert tolerance("int8") == tolerance("bool") == (0.0, 0.0)
    assert tolerance("float16")[0] > tolerance("float32")[0] > tolerance("float64")[0]
    assert set(DTYPES) >= {"bfloat16", "complex64", "uint8"}
    K = ErrorKind
    cases = [
        ("a view of a leaf Variable that requires grad is being used", K.INPLACE_ON_LEAF_VIEW),
        ("a leaf Variable that requires grad is being used in an in-place", K.INPLACE_ON_LEAF),
        (
            "Output 0 of T is a view of a view which was created in no_grad mode and is ...",
            K.NO_GRAD_VIEW_INPLACE,
        ),
        (
            "A view was created in no_grad mode ... is ambiguous and error-prone",
            K.NO_GRAD_VIEW_INPLACE,
        ),
        ("output with shape [3] doesn't match the broadcast shape [2, 3]", K.NOT_BROADCASTABLE),
        (
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
            K.INDEX_OUT_OF_RANGE,
        ),
        ("shape '[4, 2]' is invalid for input of size 6", K.INVALID_SHAPE),
        ("mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)", K.SHAPE_MISMATCH),
        ("something else entirely", None),
    ]
    for message, kind in cases:
        assert classify(message) is kind, message


@pytest.mark.parametrize("name", sorted(OPS))
def test_a_failed_call_leaves_the_state_alone(name):
    if name == "fn_mul_":  # MulDirty writes, then refuses the leaf (tests/oracle/test_functions.py)
        return
    eng = Engine()
    w = eng.leaf(np.ones((2, 3)), "float32", requires_grad=True)
    before = (w.values(), w.version, w.requires_grad, w.is_leaf, w.grad)
    spec = OPS[name]
    tensors = [w] + [eng.leaf(np.ones((5,)), "float32")] * (spec.arity - 1)
    params = {
        "getitem": ((7,),),
        "select": (0, 9),
        "view": ((7,),),
        "reshape": ((7,),),
        "transpose": (0, 5),
        "permute": ((0,),),
        "expand": ((4, 4),),
        "unsqueeze": (9,),
        "squeeze": (5,),
        "sum_dim": (3,),
        "pow_s": (2,),
        "fill_": (1.0,),
        "clamp_": (0, 1),
        "setitem": ((slice(None),),),
        "setitem_s": ((9,), 1.0),
        "backward": (False,),
        "backward_g": (False,),
        "requires_grad_": (False,),
    }
    p = params.get(name, (1.0,) * len(spec.params))
    try:
        eng.call(name, tensors, p)
    except Exception:
        after = (w.values(), w.version, w.requires_grad, w.is_leaf, w.grad)
        np.testing.assert_array_equal(after[0], before[0])
        assert after[1:] == before[1:]


def test_the_oracle_and_its_tests_never_import_torch():
    code = (
        "import sys, importlib, pkgutil, oracle\n"
        "for m in pkgutil.iter_modules(oracle.__path__):\n"
        "    importlib.import_module('oracle.' + m.name)\n"
        "import tests.oracle\n"
        "for m in pkgutil.iter_modules(tests.oracle.__path__):\n"
        "    importlib.import_module('tests.oracle.' + m.name)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
    for path in list((ROOT / "oracle").glob("*.py")) + list(Path(__file__).parent.glob("*.py")):
        text = path.read_text()
        assert not re.search(r"^\s*(import torch|from torch)", text, re.M), path


def test_the_contract_example_runs():
    eng = Engine()
    a = eng.leaf(np.array([1.0, 2.0, 3.0]), dtype="float32", requires_grad=True, device="cpu")
    b = eng.call("clone", [a])
    c = eng.call("mul", [a], (2.0,))  # the short form of mul_s
    eng.call("backward", [eng.call("sum", [c])])  # retain_graph=False
    with eng.no_grad():
        eng.call("add_", [a], (1.0,))
    assert b.has_grad_fn and a.version == 1
    np.testing.assert_array_equal(a.grad, [2, 2, 2])
