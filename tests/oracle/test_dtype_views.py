"""x.view(dtype) in the model: the storage's bytes read and written as another
dtype (hand-worked bit patterns), torch's layout rules and errors, and the
alias it is (x's version counter, no base, no grad)."""

from __future__ import annotations

import numpy as np

from oracle import Engine, ErrorKind

from .helpers import raises

BAD = ErrorKind.DTYPE_VIEW_LAYOUT


def test_same_bytes_as_another_dtype():
    eng = Engine()
    x = eng.leaf(np.array([[1.0, 2.0], [1.5, -2.0]]), "float32", True)
    y = eng.call("mul_s", [x], (1.0,))
    v = eng.call("view_dtype", [y], ("int32",))
    np.testing.assert_array_equal(v.values(), [[0x3F800000, 0x40000000], [0x3FC00000, -0x40000000]])
    assert v.storage is y.storage and v.counter is y.counter and v.base is None
    assert not v.requires_grad and v._fn is None
    h = eng.call("view_dtype", [y], ("float16",))  # each float32 split in two halves
    assert (h.shape, h.strides) == ((2, 4), (4, 1))
    np.testing.assert_array_equal(h.values()[0], [0.0, 1.875, 0.0, 2.0])
    b = eng.call("view_dtype", [y], ("bfloat16",))  # bfloat16: a float32's high half
    np.testing.assert_array_equal(b.values()[1], [0.0, 1.5, 0.0, -2.0])
    d = eng.call("view_dtype", [y], ("float64",))
    assert d.shape == (2, 1)
    np.testing.assert_array_equal(
        d.values().reshape(-1), np.array([1.0, 2.0, 1.5, -2.0], np.float32).view(np.float64)
    )
    c = eng.call("view_dtype", [y], ("complex64",))
    np.testing.assert_array_equal(c.values(), [[1 + 2j], [1.5 - 2j]])


def test_writes_either_way_and_one_version_counter():
    eng = Engine()
    x = eng.leaf(np.array([1.0, 2.0]), "float32")
    v = eng.call("view_dtype", [x], ("int32",))
    eng.call("add_s_", [v], (1,))  # the last bit of each mantissa
    np.testing.assert_array_equal(
        x.values(), np.array([0x3F800001, 0x40000001]).astype(np.int32).view(np.float32)
    )
    assert x.version == v.version == 1
    eng.call("fill_", [x], (0.5,))
    np.testing.assert_array_equal(v.values(), [0x3F000000, 0x3F000000])
    i = eng.leaf(np.array([1, 2]), "int16")
    np.testing.assert_array_equal(
        eng.call("view_dtype", [i], ("float16",)).values(),
        np.array([1, 2], np.int16).view(np.float16),
    )


def test_layout_rules_in_torch_order():
    eng = Engine()
    x = eng.leaf(np.arange(8.0).reshape(2, 4), "float32")
    raises(BAD, eng.call, "view_dtype", [eng.leaf(np.array(1.0), "float32")], ("float16",))
    raises(BAD, eng.call, "view_dtype", [eng.call("t", [x])], ("float16",))
    assert eng.call("view_dtype", [eng.call("t", [x])], ("int32",)).strides == (1, 4)
    raises(BAD, eng.call, "view_dtype", [eng.call("narrow", [x], (1, 0, 3))], ("float64",))
    raises(BAD, eng.call, "view_dtype", [eng.call("narrow", [x], (1, 1, 2))], ("float64",))
    odd = eng.call("as_strided", [eng.leaf(np.arange(12.0), "float32")], ((2, 2), (3, 1), 0))
    raises(BAD, eng.call, "view_dtype", [odd], ("float64",))


def test_an_inexact_write_under_a_dtype_view_is_left_undefined():
    eng = Engine()
    x = eng.leaf(np.array([1.0, 2.0]), "float32")
    eng.call("view_dtype", [x], ("int32",))
    eng.call("exp_", [x])  # torch's last bit and NumPy's may differ: the int view shows it
    assert eng.undefined
    eng.call("zero_", [x])
    assert not eng.undefined
