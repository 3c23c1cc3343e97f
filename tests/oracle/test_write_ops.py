"""out= arguments, resize_ and set_, _foreach_ in place, in the model: values
worked by hand, versions, storages, and which step raises (no torch)."""

from __future__ import annotations

import numpy as np
import pytest

from oracle import Engine, ErrorKind
from oracle.write_rows import can_cast

from .helpers import raises

E = ErrorKind


def _leaf(eng, values, dtype="float64", rg=False):
    return eng.leaf(np.array(values), dtype, rg)


# ---- out= ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "inputs", "want"),
    [
        ("add_out", ([1.0, 2.0], [10.0, 20.0]), [11.0, 22.0]),
        ("mul_out", ([1.0, 2.0], [10.0, 20.0]), [10.0, 40.0]),
        ("neg_out", ([1.0, -2.0],), [-1.0, 2.0]),
        ("exp_out", ([0.0, 1.0],), [1.0, np.e]),
    ],
)
def test_out_returns_out_holding_the_values_and_bumps_only_it(op, inputs, want):
    eng = Engine()
    out = _leaf(eng, [7.0, 7.0])
    xs = [_leaf(eng, v) for v in inputs]
    storage = out.storage
    got = eng.call(op, [out, *xs])
    assert got is out and out.storage is storage
    np.testing.assert_allclose(out.values(), want)
    assert out.version == 1 and all(x.version == 0 for x in xs)
    np.testing.assert_array_equal(xs[0].values(), inputs[0])


def test_out_of_another_shape_is_resized_keeping_its_storage_when_it_fits():
    eng = Engine()
    out = _leaf(eng, np.zeros(7))
    storage = out.storage
    a = _leaf(eng, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    eng.call("neg_out", [out, a])
    assert out.shape == (2, 3) and out.strides == (3, 1) and out.storage is storage
    np.testing.assert_array_equal(out.values(), -a.values())
    assert out.version == 1


def test_resized_out_grows_its_storage_in_place_and_its_base_keeps_its_values():
    eng = Engine()
    base = _leaf(eng, np.arange(6.0))
    view = eng.call("getitem", [base], ((slice(2, 4, None),),))
    a = _leaf(eng, [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    eng.call("add_out", [view, a, a])
    assert view.shape == (2, 3) and view.offset == 2 and view.storage is base.storage
    assert base.storage.buf.size == 8  # grown: offset 2 + 6 elements
    np.testing.assert_array_equal(base.values(), [0, 1, 2, 2, 2, 4])
    np.testing.assert_array_equal(view.values(), [[2, 2, 2], [4, 4, 4]])
    assert base.version == view.version == 1


def test_resized_out_takes_the_inputs_layout():
    eng = Engine()
    a = eng.call("t", [_leaf(eng, np.arange(6.0).reshape(3, 2))])  # strides (1, 2)
    out = _leaf(eng, np.zeros(0))
    eng.call("exp_out", [out, a])
    assert out.shape == (2, 3) and out.strides == (1, 2)


def test_out_refuses_arguments_that_require_grad_in_grad_mode_only():
    eng = Engine()
    a = _leaf(eng, [1.0, 2.0], rg=True)
    raises(E.OUT_AUTOGRAD, eng.call, "neg_out", [_leaf(eng, [0.0, 0.0]), a])
    out_rg = _leaf(eng, [0.0, 0.0], rg=True)
    raises(E.OUT_AUTOGRAD, eng.call, "neg_out", [out_rg, _leaf(eng, [1.0, 2.0])])
    with eng.no_grad():
        out = _leaf(eng, [0.0, 0.0])
        eng.call("neg_out", [out, a])
        eng.call("neg_out", [out_rg, a])
    assert not out.requires_grad and out.grad_fn() is None
    assert out_rg.requires_grad and out_rg.is_leaf and out_rg.version == 1


def test_out_checks_overlap_then_shapes_then_dtype_before_writing():
    eng = Engine()
    a, b = _leaf(eng, np.ones((2, 3))), _leaf(eng, np.ones(4))
    out = _leaf(eng, np.zeros(5), "int64")
    raises(E.NOT_BROADCASTABLE, eng.call, "add_out", [out, a, b])
    raises(E.OUT_CAST, eng.call, "add_out", [out, a, a])
    assert out.shape == (5,) and out.version == 0  # not resized
    expanded = eng.call("expand", [_leaf(eng, np.zeros(3))], ((2, 3),))
    raises(E.OVERLAPPING_WRITE, eng.call, "add_out", [expanded, a, b])


@pytest.mark.parametrize(
    ("src", "dst", "ok"),
    [
        ("float32", "float64", True),
        ("float32", "float16", True),
        ("float32", "complex128", True),
        ("float32", "int64", False),
        ("complex64", "float64", False),
        ("int64", "bool", False),
        ("int64", "int8", True),
        ("bool", "uint8", True),
    ],
)
def test_can_cast(src, dst, ok):
    assert can_cast(src, dst) is ok


def test_out_casts_the_result_into_its_dtype():
    eng = Engine()
    a = _leaf(eng, [1.5, -2.25], "float32")
    out = _leaf(eng, [0.0, 0.0], "complex128")
    eng.call("add_out", [out, a, a])
    assert out.dtype == "complex128" and out.computed_in == "float32"
    np.testing.assert_array_equal(out.values(), [3.0 + 0j, -4.5 + 0j])
    raises(E.OUT_DTYPE, eng.call, "neg_out", [out, a])  # neg: only out of its dtype
    ints = _leaf(eng, [100, 27], "int64")
    small = _leaf(eng, [0, 0], "int8")
    eng.call("mul_out", [small, ints, ints])  # 10000 and 729 wrap around in int8
    np.testing.assert_array_equal(small.values(), np.array([10000, 729]).astype(np.int8))


# ---- resize_ and set_ --------------------------------------------------------------


def test_resize_keeps_the_storage_and_its_values_in_storage_order():
    eng = Engine()
    x = eng.call("t", [_leaf(eng, np.arange(6.0).reshape(2, 3))])  # strides (1, 3)
    storage = x.storage
    assert eng.call("resize_", [x], ((2, 2),)) is x
    assert x.shape == (2, 2) and x.strides == (2, 1) and x.storage is storage
    np.testing.assert_array_equal(x.values(), [[0, 1], [2, 3]])  # storage order
    assert x.version == 1 and eng.undefined is None


def test_resize_to_the_same_shape_changes_nothing():
    eng = Engine()
    x = eng.call("t", [_leaf(eng, np.arange(6.0).reshape(2, 3))])
    eng.call("resize_", [x], ((3, 2),))
    assert x.strides == (1, 3) and x.version == 0


def test_resize_growing_the_storage_leaves_the_new_elements_undefined():
    eng = Engine()
    base = _leaf(eng, np.arange(4.0))
    alias = eng.call("detach", [base])
    eng.call("resize_", [alias], ((3, 2),))
    assert alias.storage is base.storage and base.storage.buf.size == 6
    assert eng.undefined is not None
    np.testing.assert_array_equal(base.values(), np.arange(4.0))  # base sees its old elements
    assert base.version == 1  # detach() shares the counter


def test_resize_to_another_shape_bumps_the_version():
    eng = Engine()
    x = _leaf(eng, np.arange(4.0))
    eng.call("resize_", [x], ((2,),))
    assert x.shape == (2,) and x.version == 1
    eng.call("resize_", [x], ((2,),))  # the same shape: no bump
    assert x.version == 1


def test_resize_of_a_tensor_that_requires_grad_raises_in_any_mode():
    eng = Engine()
    x = _leaf(eng, np.ones(3), rg=True)
    raises(E.RESIZE_REQUIRES_GRAD, eng.call, "resize_", [x], ((4,),))
    view = eng.call("getitem", [eng.call("mul_s", [x], (2.0,))], ((slice(0, 2, None),),))
    with eng.no_grad():
        raises(E.RESIZE_REQUIRES_GRAD, eng.call, "resize_", [x], ((4,),))
        raises(E.RESIZE_REQUIRES_GRAD, eng.call, "resize_", [view], ((1,),))
    assert x.shape == (3,) and x.version == 0


def test_set_shares_the_source_geometry_but_not_its_counter():
    eng = Engine()
    x = _leaf(eng, np.zeros(2))
    base = _leaf(eng, np.arange(6.0).reshape(2, 3))
    y = eng.call("getitem", [base], ((slice(None), slice(1, None, None)),))
    assert eng.call("set_", [x, y]) is x
    assert x.storage is y.storage and (x.offset, x.shape, x.strides) == (1, (2, 2), (3, 1))
    assert x.base is None and x.version == 1 and y.version == 0
    eng.call("add_s_", [y], (1.0,))
    np.testing.assert_array_equal(x.values(), [[2, 3], [5, 6]])
    assert x.version == 1 and y.version == 1
    eng.call("mul_s_", [x], (10.0,))
    np.testing.assert_array_equal(base.values(), [[0, 20, 30], [3, 50, 60]])
    assert x.version == 2 and base.version == 1


def test_set_keeps_a_views_base_and_refuses_a_leaf_that_requires_grad():
    eng = Engine()
    b = _leaf(eng, np.zeros(4))
    v = eng.call("getitem", [b], ((slice(0, 2, None),),))
    eng.call("set_", [v, _leaf(eng, np.ones(3))])
    assert v.base is b and v.version == b.version == 1
    np.testing.assert_array_equal(b.values(), np.zeros(4))
    leaf = _leaf(eng, np.ones(2), rg=True)
    raises(E.INPLACE_ON_LEAF, eng.call, "set_", [leaf, _leaf(eng, np.zeros(2))])
    with eng.no_grad():
        eng.call("set_", [leaf, _leaf(eng, np.zeros(3))])
    assert leaf.requires_grad and leaf.shape == (3,)


# ---- _foreach_ in place ------------------------------------------------------------


def test_foreach_writes_each_tensor_as_add_and_mul_do_and_records_it():
    eng = Engine()
    a = _leaf(eng, [1.0, 2.0], rg=True)
    b = _leaf(eng, [3.0], rg=True)
    x, y = eng.call("mul_s", [a], (2.0,)), eng.call("mul_s", [b], (3.0,))
    fx, fy = x.grad_fn(), y.grad_fn()
    assert eng.call("foreach_add_s_", [x, y], (1.0,)) is None
    assert x.grad_fn() is not fx and y.grad_fn() is not fy
    assert (x.version, y.version) == (1, 1)
    two, five = _leaf(eng, [2.0, 2.0]), _leaf(eng, [5.0])
    eng.call("foreach_mul_l_", [x, y, two, five])
    np.testing.assert_array_equal(x.values(), [6.0, 10.0])
    np.testing.assert_array_equal(y.values(), [50.0])
    total = eng.call("add", [eng.call("sum", [x]), eng.call("sum", [y])])
    eng.call("backward", [total])
    np.testing.assert_array_equal(a.grad, [4.0, 4.0])  # d(2a + 1) * 2 / da
    np.testing.assert_array_equal(b.grad, [15.0])


def test_foreach_refuses_a_leaf_that_requires_grad_before_writing_anything():
    eng = Engine()
    plain, leaf = _leaf(eng, [1.0, 1.0]), _leaf(eng, [1.0], rg=True)
    raises(E.INPLACE_ON_LEAF, eng.call, "foreach_add_s_", [plain, leaf], (1.0,))
    assert plain.version == 0 and plain.values().tolist() == [1.0, 1.0]
    with eng.no_grad():
        eng.call("foreach_add_s_", [plain, leaf], (1.0,))
    assert leaf.values().tolist() == [2.0] and leaf.is_leaf


def test_foreach_refuses_a_written_list_with_a_conjugate_or_negative_bit():
    # after the leaf check, before any write; the other list may hold one
    eng = Engine()
    c = _leaf(eng, [1.0 + 1.0j], dtype="complex128")
    plain = _leaf(eng, [1.0])
    for bit in (eng.call("conj", [c]), eng.call("neg_view", [plain])):
        other = _leaf(eng, [2.0])
        raises(E.MUTABLE_LIST_BIT, eng.call, "foreach_add_s_", [other, bit], (1.0,))
        assert (other.version, bit.version) == (0, 0) and other.values().tolist() == [2.0]
    with eng.no_grad():
        bit = eng.call("conj", [c])
        raises(E.MUTABLE_LIST_BIT, eng.call, "foreach_mul_s_", [bit, plain], (2.0,))
    leaf = _leaf(eng, [1.0 + 0.0j], dtype="complex128", rg=True)
    leaf_bit = eng.call("conj", [leaf])
    raises(E.INPLACE_ON_LEAF_VIEW, eng.call, "foreach_add_s_", [leaf_bit, c], (1.0,))
    z = _leaf(eng, [0.0 + 0.0j], dtype="complex128")
    eng.call("foreach_add_l_", [z, plain, eng.call("conj", [c]), _leaf(eng, [1.0])])
    assert z.values().tolist() == [1.0 - 1.0j]


def test_foreach_shape_error_on_the_second_tensor_after_the_first_was_written():
    eng = Engine()
    x, y = _leaf(eng, [1.0, 1.0]), _leaf(eng, [1.0, 1.0, 1.0])
    ok, bad = _leaf(eng, [2.0, 2.0]), _leaf(eng, [1.0, 1.0, 1.0, 1.0])
    raises(E.NOT_BROADCASTABLE, eng.call, "foreach_mul_l_", [x, y, ok, bad])
    assert x.values().tolist() == [2.0, 2.0] and x.version == 1 and y.version == 0


def test_foreach_in_place_is_recorded_per_tensor():
    eng = Engine()
    a = _leaf(eng, [1.0], rg=True)
    x = eng.call("mul_s", [a], (2.0,))
    before = x.grad_fn()
    eng.call("foreach_mul_s_", [x, _leaf(eng, [0.0])], (3.0,))
    assert x.grad_fn() is not before and x.version == 1
    eng.call("backward_g", [x, _leaf(eng, [1.0])], (False,))
    np.testing.assert_array_equal(a.grad, [6.0])


def test_foreach_with_a_scalar_saves_no_tensor_for_it():
    eng = Engine()
    a = _leaf(eng, [1.0, 2.0], rg=True)
    x, y, z = (eng.call("clone", [a]) for _ in range(3))
    eng.call("foreach_mul_s_", [x, z], (3.0,))
    eng.call("backward_g", [z, _leaf(eng, [1.0, 1.0])], (False,))
    eng.call("backward_g", [z, _leaf(eng, [1.0, 1.0])], (False,))  # nothing saved: no error
    np.testing.assert_array_equal(a.grad, [6.0, 6.0])
    eng.call("mul_s_", [y], (3.0,))  # y.mul_(c) saves c as a wrapped 0-d tensor
    eng.call("backward_g", [y, _leaf(eng, [1.0, 1.0])], (False,))
    raises(E.BACKWARD_TWICE, eng.call, "backward_g", [y, _leaf(eng, [1.0, 1.0])], (False,))
