"""Aliasing, version counters, saved tensors, leaves, views and grad mode."""

from __future__ import annotations

import numpy as np
import pytest

from oracle import Engine, ErrorKind

from .helpers import raises

E = ErrorKind


def _leaf(eng, values, rg=False, dtype="float32"):
    return eng.leaf(np.array(values, dtype=complex if "complex" in dtype else float), dtype, rg)


def _backward(eng, t, retain=False):
    eng.call("backward", [eng.call("sum", [t])], (retain,))


# ---- storage and counters ---------------------------------------------------
def test_views_and_detach_share_storage_and_counter_data_only_storage_clone_neither():
    eng = Engine()
    x = _leaf(eng, [[1, 2], [3, 4]])
    view, det, dat, cl = (
        eng.call(op, [x], p) for op, p in [("t", ()), ("detach", ()), ("data", ()), ("clone", ())]
    )
    assert view.storage is det.storage is dat.storage is x.storage
    assert view.counter is det.counter is x.counter and dat.counter is not x.counter
    assert cl.storage is not x.storage and cl.counter is not x.counter
    assert view.base is x and det.base is None and dat.base is None and cl.base is None
    eng.call("add_s_", [dat], (1.0,))
    assert x.version == 0 and dat.version == 1
    eng.call("add_s_", [view], (1.0,))
    assert x.version == det.version == 1
    np.testing.assert_array_equal(x.values(), [[3, 4], [5, 6]])
    np.testing.assert_array_equal(cl.values(), [[1, 2], [3, 4]])


def test_base_is_always_the_root_and_geometry_matches_torch():
    eng = Engine()
    x = _leaf(eng, np.arange(24.0).reshape(2, 3, 4))
    v = eng.call("getitem", [x], ((slice(None), slice(1, 3)),))
    w = eng.call("select", [v], (2, -1))
    assert v.base is x and w.base is x
    assert (v.shape, v.strides, v.offset) == ((2, 2, 4), (12, 4, 1), 4)
    assert (w.shape, w.strides, w.offset) == ((2, 2), (12, 4), 7)
    e = eng.call("expand", [eng.call("unsqueeze", [w], (0,))], ((3, 2, 2),))
    assert e.strides == (0, 12, 4)
    c = eng.call("clone", [eng.call("transpose", [x], (0, 2))])
    assert c.strides == (1, 4, 12)  # clone keeps a dense permuted layout


def test_set_data_swaps_storage_but_keeps_the_counter():
    eng = Engine()
    a, b = _leaf(eng, [1, 2, 3], rg=True), _leaf(eng, [7, 8])
    counter = a.counter
    eng.call("set_data", [a, b])
    assert a.storage is b.storage and a.counter is counter and a.shape == (2,)
    eng.call("add_s_", [b], (1.0,))
    assert a.version == 0 and b.version == 1
    np.testing.assert_array_equal(a.values(), [8, 9])
    raises(E.DTYPE_CANNOT_REQUIRE_GRAD, eng.call, "set_data", [a, _leaf(eng, [1], dtype="int64")])


def test_reshape_is_a_view_when_it_can_be_and_a_copy_otherwise():
    eng = Engine()
    x = _leaf(eng, np.ones((2, 3)), rg=True)
    assert eng.call("reshape", [x], ((3, 2),)).base is x
    r = eng.call("reshape", [eng.call("t", [x])], ((6,),))
    assert r.base is None and r.storage is not x.storage and r.has_grad_fn
    raises(E.VIEW_INCOMPATIBLE, eng.call, "view", [eng.call("t", [x])], ((6,),))


# ---- version counters -----------------------------------------------------------
@pytest.mark.parametrize(
    "op,params",
    [
        ("add_s_", (1.0,)),
        ("zero_", ()),
        ("fill_", (2.0,)),
        ("exp_", ()),
        ("clamp_", (0.0, 1.0)),
        ("neg_", ()),
    ],
)
def test_every_in_place_op_bumps_the_shared_counter(op, params):
    eng = Engine()
    x = _leaf(eng, [0.5, -0.5])
    v = eng.call("getitem", [x], ((slice(0, 1),),))
    eng.call(op, [v], params)
    assert x.version >= 1 and v.version == x.version


def test_setitem_bumps_once_and_detach_requires_grad_do_not():
    eng = Engine()
    x = _leaf(eng, [1, 2, 3])
    eng.call("setitem_s", [x], ((0,), 5.0))
    eng.call("setitem", [x, _leaf(eng, [9, 9])], ((slice(1, None),),))
    assert x.version == 2
    np.testing.assert_array_equal(x.values(), [5, 9, 9])
    eng.call("requires_grad_", [x], (True,))
    eng.call("detach_", [x])
    assert x.version == 2 and not x.requires_grad


def test_leaf_in_place_rules_and_no_grad():
    eng = Engine()
    w = _leaf(eng, [1, 2], rg=True)
    raises(E.INPLACE_ON_LEAF, eng.call, "add_s_", [w], (1.0,))
    assert w.version == 0
    raises(E.INPLACE_ON_LEAF_VIEW, eng.call, "add_s_", [eng.call("getitem", [w], ((0,),))], (1.0,))
    with eng.no_grad():
        eng.call("add_s_", [w], (1.0,))
        r = eng.call("mul_s", [w], (2.0,))
    assert w.version == 1 and not r.requires_grad and r.is_leaf
    np.testing.assert_array_equal(w.values(), [2, 3])


def test_no_grad_views():
    eng = Engine()
    x = _leaf(eng, [1, 2, 3], rg=True)
    with eng.no_grad():
        v = eng.call("getitem", [x], ((slice(0, 2),),))
    assert v.requires_grad and v.is_leaf and not v.has_grad_fn
    raises(E.NO_GRAD_VIEW_INPLACE, eng.call, "mul_s_", [v], (2.0,))
    plain = _leaf(eng, [1, 2, 3])
    with eng.no_grad():
        pv = eng.call("getitem", [plain], ((slice(1, None),),))
    raises(E.NO_GRAD_VIEW_INPLACE, eng.call, "add_", [pv, _leaf(eng, [1, 1], rg=True)])
    y = eng.call("mul_s", [x], (2.0,))
    with eng.no_grad():
        yv = eng.call("getitem", [y], ((slice(0, 2),),))
    eng.call("mul_s_", [y], (2.0,))  # the base moves on...
    raises(E.NO_GRAD_VIEW_INPLACE, lambda: yv.is_leaf)  # ...and reading the view's grad_fn raises
    raises(E.NO_GRAD_VIEW_INPLACE, eng.call, "mul_s", [yv], (2.0,))
    assert yv.requires_grad and yv.grad is None


def test_in_place_on_a_plain_view_with_a_requires_grad_operand_gives_the_base_history():
    eng = Engine()
    p = _leaf(eng, [0, 0, 0])
    v = eng.call("getitem", [p], ((slice(1, None),),))
    leaf = _leaf(eng, [1, 2, 3], rg=True)
    eng.call("add_", [v, eng.call("getitem", [leaf], ((slice(1, None),),))])
    assert p.requires_grad and not p.is_leaf and p._fn.name == "CopySlices"
    assert v._fn.name == "AsStridedBackward0"
    _backward(eng, eng.call("mul", [p, p]))
    np.testing.assert_array_equal(leaf.grad, [0, 4, 6])


def test_stale_view_regenerates_its_grad_fn_lazily():
    eng = Engine()
    p = _leaf(eng, [0, 0, 0])
    v = eng.call("getitem", [p], ((slice(1, None),),))
    leaf = _leaf(eng, [1, 1, 1], rg=True)
    eng.call("add_", [p, leaf])
    assert v.requires_grad and v._fn is None  # not regenerated yet: a raw leaf...
    raises(E.INPLACE_ON_LEAF, eng.call, "add_s_", [v], (1.0,))  # ...as torch sees it
    assert not v.is_leaf  # reading grad_fn regenerates it
    eng.call("add_s_", [v], (1.0,))
    _backward(eng, eng.call("mul_s", [v], (3.0,)))
    np.testing.assert_array_equal(leaf.grad, [0, 3, 3])


def test_copy_into_a_leaf_that_requires_grad_raises_and_changes_nothing():
    eng = Engine()
    w, a = _leaf(eng, [0, 0], rg=True), _leaf(eng, [1, 2])
    raises(E.INPLACE_ON_LEAF, eng.call, "copy_", [w, a])
    assert w.version == 0 and not w.values().any() and w.is_leaf


def test_overlap_checks():
    eng = Engine()
    x = _leaf(eng, [1, 2, 3, 4])
    e = eng.call("expand", [eng.call("getitem", [x], ((slice(0, 1),),))], ((3,),))
    raises(E.OVERLAPPING_WRITE, eng.call, "add_s_", [e], (1.0,))
    eng.call("zero_", [e])  # fill_/zero_ do not check
    a, b = (eng.call("getitem", [x], ((s,),)) for s in (slice(1, None), slice(None, 3)))
    raises(E.PARTIAL_OVERLAP, eng.call, "add_", [a, b])
    raises(E.PARTIAL_OVERLAP, eng.call, "copy_", [a, b])
    eng.call("add_", [x, eng.call("detach", [x])])  # full overlap is fine
    assert eng.undefined is None
    s0, s1 = (eng.call("getitem", [x], ((slice(i, None, 2),),)) for i in (0, 1))
    eng.call("add_", [s0, eng.call("getitem", [x], ((slice(0, 3, 2),),))])
    assert eng.undefined is None  # same elements, same order: well defined


# ---- what autograd saves -------------------------------------------------------
@pytest.mark.parametrize(
    "op,raises_",
    [
        ("exp_", True),
        ("tanh_", True),
        ("sigmoid_", True),
        ("relu_", True),
        ("sin_", False),
        ("neg_", False),
        ("mul_s_", False),
        ("clamp_", False),
    ],
)
def test_in_place_then_add_(op, raises_):
    eng = Engine()
    x = _leaf(eng, [0.5, 1.5], rg=True)
    y = eng.call("clone", [x])
    params = {"mul_s_": (2.0,), "clamp_": (0.0, 1.0)}.get(op, ())
    eng.call(op, [y], params)
    eng.call("add_s_", [y], (1.0,))
    s = eng.call("sum", [y])
    if raises_:
        raises(E.SAVED_TENSOR_MODIFIED, eng.call, "backward", [s], (False,))
    else:
        eng.call("backward", [s], (False,))


def test_mul_saves_other_only_when_self_requires_grad():
    eng = Engine()
    x, c = _leaf(eng, [1, 2], rg=True), _leaf(eng, [3, 4])
    m = eng.call("mul", [x, c])
    eng.call("add_s_", [c], (1.0,))
    raises(E.SAVED_TENSOR_MODIFIED, eng.call, "backward", [eng.call("sum", [m])], (False,))
    eng2 = Engine()
    x, c = _leaf(eng2, [1, 2], rg=True), _leaf(eng2, [3, 4])
    m = eng2.call("mul", [c, x])  # saves c (self) only because x (other) needs grad
    eng2.call("add_s_", [c], (1.0,))
    raises(E.SAVED_TENSOR_MODIFIED, eng2.call, "backward", [eng2.call("sum", [m])], (False,))
    eng3 = Engine()
    x, c = _leaf(eng3, [1, 2], rg=True), _leaf(eng3, [3, 4])
    m = eng3.call("add", [x, c])
    eng3.call("add_s_", [c], (1.0,))
    _backward(eng3, m)


def test_x_mul_x_in_place_breaks_backward():
    eng = Engine()
    x = eng.call("clone", [_leaf(eng, [1, 2], rg=True)])
    eng.call("mul_", [x, x])
    raises(E.SAVED_TENSOR_MODIFIED, eng.call, "backward", [eng.call("sum", [x])], (False,))


def test_saved_input_sees_set_data_but_a_saved_output_does_not():
    eng = Engine()
    x = _leaf(eng, [1, 2], rg=True)
    y = eng.call("mul_s", [x], (1.0,))
    p = eng.call("mul", [y, y])  # saves y as an input: the tensor object itself
    eng.call("set_data", [y, _leaf(eng, [10, 20])])
    _backward(eng, p)
    np.testing.assert_array_equal(x.grad, [20, 40])  # 2 * y as it is now
    eng2 = Engine()
    x = _leaf(eng2, [0.0, 1.0], rg=True)
    r = eng2.call("exp", [x])  # saves its result: a shallow copy
    eng2.call("set_data", [r, _leaf(eng2, [5, 5])])
    _backward(eng2, r)
    np.testing.assert_allclose(x.grad, np.exp([0.0, 1.0]), rtol=1e-6)


def test_detach_in_place_of_a_saved_non_leaf():
    eng = Engine()
    y = eng.call("mul_s", [_leaf(eng, [1, 2], rg=True)], (2.0,))
    p = eng.call("pow_s", [y], (2,))
    eng.call("detach_", [y])
    raises(E.SAVED_TENSOR_DETACHED, eng.call, "backward", [eng.call("sum", [p])], (False,))
    raises(E.DETACH_VIEW_INPLACE, eng.call, "detach_", [eng.call("t", [p])])


# ---- backward --------------------------------------------------------------------
@pytest.mark.parametrize(
    "op,params,twice_ok",
    [
        ("add_s", (1.0,), True),
        ("sub_s", (1.0,), True),
        ("mul_s", (2.0,), False),
        ("div_s", (2.0,), False),
        ("exp", (), False),
        ("neg", (), True),
        ("clone", (), True),
        ("mean", (), True),
    ],
)
def test_backward_twice_raises_only_through_saved_tensors(op, params, twice_ok):
    eng = Engine()
    x = _leaf(eng, [1, 2], rg=True)
    s = eng.call("sum", [eng.call(op, [x], params)])
    eng.call("backward", [s], (False,))
    if twice_ok:
        eng.call("backward", [s], (False,))
        np.testing.assert_array_equal(x.grad != 0, [True, True])
    else:
        raises(E.BACKWARD_TWICE, eng.call, "backward", [s], (False,))
    eng.call("backward", [eng.call("sum", [eng.call(op, [x], params)])], (True,))


def test_copy_slices_cannot_run_twice_even_without_saved_tensors():
    eng = Engine()
    y = eng.call("mul_s", [_leaf(eng, [1, 2, 3], rg=True)], (1.0,))
    y = eng.call("add_s", [_leaf(eng, [1, 2, 3], rg=True)], (1.0,))
    eng.call("add_s_", [eng.call("getitem", [y], ((slice(0, 2),),))], (1.0,))
    s = eng.call("sum", [y])
    eng.call("backward", [s], (False,))
    raises(E.BACKWARD_TWICE, eng.call, "backward", [s], (False,))


def test_grad_accumulates_sums_broadcasts_and_keeps_the_leaf_dtype():
    eng = Engine()
    x = _leaf(eng, [[1], [2]], rg=True, dtype="float16")
    y = _leaf(eng, [1, 2, 3], dtype="float16")
    _backward(eng, eng.call("mul", [x, y]), retain=True)
    _backward(eng, eng.call("mul", [x, y]))
    np.testing.assert_array_equal(x.grad, [[12], [12]])
    eng.call("zero_grad", [x])
    assert x.grad is None


def test_backward_argument_checks():
    eng = Engine()
    x = _leaf(eng, [1, 2], rg=True)
    y = eng.call("mul_s", [x], (2.0,))
    raises(E.NONSCALAR_BACKWARD, eng.call, "backward", [y], (False,))
    raises(E.GRAD_SHAPE_MISMATCH, eng.call, "backward_g", [y, _leaf(eng, [1, 2, 3])], (False,))
    raises(E.NO_GRAD_FN, eng.call, "backward", [eng.call("sum", [_leaf(eng, [1])])], (False,))
    z = _leaf(eng, [1 + 1j], rg=True, dtype="complex64")
    raises(E.NONSCALAR_BACKWARD, eng.call, "backward", [eng.call("sum", [z])], (False,))
    eng.call("backward_g", [y, _leaf(eng, [1, -1])], (False,))
    np.testing.assert_array_equal(x.grad, [2, -2])
    eng.call("backward", [eng.call("getitem", [x], ((0,),))], (False,))  # a leaf view
    np.testing.assert_array_equal(x.grad, [3, -2])


def test_retain_grad_and_requires_grad_():
    eng = Engine()
    x = _leaf(eng, [1, 2], rg=True)
    y = eng.call("mul_s", [x], (3.0,))
    eng.call("retain_grad", [y])
    eng.call("add_s_", [y], (1.0,))  # the hook follows y's new grad_fn
    _backward(eng, eng.call("mul", [y, y]))
    np.testing.assert_array_equal(y.grad, [8, 14])
    raises(E.RETAIN_GRAD_NO_GRAD, eng.call, "retain_grad", [_leaf(eng, [1])])
    raises(E.NONLEAF_REQUIRES_GRAD, eng.call, "requires_grad_", [y], (False,))
    assert eng.call("requires_grad_", [y], (True,)) is y
    raises(
        E.DTYPE_CANNOT_REQUIRE_GRAD,
        eng.call,
        "requires_grad_",
        [_leaf(eng, [1], dtype="int32")],
        (True,),
    )
    raises(E.DTYPE_CANNOT_REQUIRE_GRAD, eng.leaf, np.ones(2), "bool", True)
    w = _leaf(eng, [1.0], rg=True)
    m = eng.call("mul_s", [w], (2.0,))
    eng.call("requires_grad_", [w], (False,))
    _backward(eng, m)
    assert w.grad is None  # AccumulateGrad skips a leaf that stopped requiring grad


def test_complex_gradients_are_conjugated():
    eng = Engine()
    z = _leaf(eng, [1 + 2j], rg=True, dtype="complex128")
    c = _leaf(eng, [3 - 1j], dtype="complex128")
    eng.call(
        "backward_g", [eng.call("mul", [z, c]), _leaf(eng, [1 + 0j], dtype="complex128")], (False,)
    )
    np.testing.assert_array_equal(z.grad, [3 + 1j])


# ---- dtypes ----------------------------------------------------------------------
def test_values_are_rounded_to_the_declared_dtype():
    eng = Engine()
    assert _leaf(eng, [1 / 3], dtype="bfloat16").values()[0] == 0.333984375
    assert _leaf(eng, [1 / 3], dtype="float16").values()[0] == np.float16(1 / 3)
    i8 = eng.leaf(np.array([100, 120]), "int8")
    np.testing.assert_array_equal(eng.call("add", [i8, i8]).values(), [-56, -16])
    b = eng.leaf(np.array([True, False]), "bool")
    assert eng.call("sum", [b]).dtype == "int64"
    z = _leaf(eng, [3 + 4j], dtype="complex64")
    a = eng.call("abs", [z])
    assert a.dtype == "float32" and a.values()[0] == 5


# ---- additions beyond the first contract -----------------------------------------
def test_overwrite_resyncs_values_without_a_bump():
    eng = Engine()
    x = _leaf(eng, [1, 2])
    v = eng.call("t", [x])
    v.overwrite(np.array([0.1, 0.2]))
    assert x.version == 0
    np.testing.assert_array_equal(x.values(), np.float32([0.1, 0.2]))


def test_undefined_flags_what_torch_leaves_unpredictable():
    eng = Engine()
    x = _leaf(eng, [1, 2, 3, 4])
    every_other = eng.call("getitem", [x], ((slice(0, 4, 2),),))  # elements 0 and 2
    eng.call("add_", [every_other, eng.call("getitem", [x], ((slice(2, 4),),))])  # 2 and 3
    assert eng.undefined  # strided alias overlap: torch does not check, order decides
    eng.call("sin", [_leaf(eng, [1e7])])
    assert eng.undefined
    eng.call("sin", [_leaf(eng, [1.0])])
    assert eng.undefined is None


def test_matmul_versions_strides_and_hidden_base():
    eng = Engine()
    v, m = _leaf(eng, [1, 2]), _leaf(eng, [[1, 2, 3], [4, 5, 6]])
    assert eng.call("matmul", [v, m]).version == 1  # mm(...).squeeze_(0)
    a = _leaf(eng, np.ones((2, 3)), rg=True)
    b = _leaf(eng, np.ones((4, 3, 1)))
    r = eng.call("matmul", [a, b])
    assert r.shape == (4, 2, 1) and r.strides == (2, 1, 2) and r.base is not None
    _backward(eng, r)
    np.testing.assert_array_equal(a.grad, np.full((2, 3), 4.0))


def test_set_data_with_another_shape_and_accumulate_grad():
    eng = Engine()
    w = _leaf(eng, [[1], [2], [3]], rg=True)
    y = eng.call("mul_s", [w], (2.0,))
    eng.call("set_data", [w, _leaf(eng, np.ones((2, 3, 1)))])
    _backward(eng, y)  # a fresh gradient that does not fit a dense leaf is copied into it
    np.testing.assert_array_equal(w.grad, np.full((2, 3, 1), 2.0))
    w = _leaf(eng, [[1], [2], [3]], rg=True)
    y = eng.call("mul_s", [w], (2.0,))
    expanded = eng.call("expand", [_leaf(eng, np.ones((1, 3, 1)))], ((2, 3, 1),))
    eng.call("set_data", [w, expanded])
    _backward(eng, y)  # a leaf that is not dense keeps the gradient as it is
    np.testing.assert_array_equal(w.grad, np.full((3, 1), 2.0))
    eng2 = Engine()
    w = _leaf(eng2, [[1], [2], [3]], rg=True)
    y = eng2.call("clone", [w])
    eng2.call("set_data", [w, _leaf(eng2, np.ones((2, 3)))])
    raises(
        E.NOT_BROADCASTABLE, eng2.call, "backward_g", [y, _leaf(eng2, np.ones((3, 1)))], (False,)
    )  # backward's own gradient is copied into the leaf's layout


def test_copy_of_unrepresentable_floats_into_integers_is_undefined():
    # C++ leaves nan, inf and out-of-range float-to-int casts undefined: torch
    # gives whatever the CPU does (int64 min on x86), so no value is predicted
    import numpy as np

    from oracle import Engine

    for bad, dtype in ((np.nan, "int64"), (np.inf, "int32"), (300.0, "uint8"), (-1.0, "uint8")):
        e = Engine()
        dst = e.leaf(np.zeros(2), dtype, False)
        e.call("copy_", [dst, e.leaf(np.array([1.0, bad]), "float32", False)])
        assert e.undefined and dtype in e.undefined, (bad, dtype)
    e = Engine()
    dst = e.leaf(np.zeros(2), "uint8", False)
    e.call("copy_", [dst, e.leaf(np.array([255.9, -0.9]), "float64", False)])
    assert e.undefined is None and dst.values().tolist() == [255, 0]
