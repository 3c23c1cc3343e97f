"""Inference mode in the model beyond its tensors (oracle/modes.py): views of
normal tensors made inside it, and writes to inference tensors inside and
outside it. Hand-worked from torch 2.13's behaviour (no torch here)."""

from __future__ import annotations

import numpy as np

from oracle import Engine, ErrorKind

from .helpers import raises

E = ErrorKind


def _leaf(eng, values, rg=False, inference=False):
    return eng.leaf(np.array(values, dtype=float), "float64", rg, inference=inference)


def _row(eng, t, start=1):
    return eng.call("getitem", [t], ((slice(start, None),),))


def test_inference_mode_turns_grad_mode_off_and_back():
    eng = Engine()
    x = _leaf(eng, [1, 2], rg=True)
    with eng.inference_mode():
        assert not eng.grad_enabled and eng.inference_enabled
        with eng.no_grad():
            pass
        assert eng.inference_enabled
    assert eng.grad_enabled and not eng.inference_enabled
    assert eng.call("mul_s", [x], (2.0,)).requires_grad


def test_a_view_made_in_inference_mode_refuses_a_write_with_grad_on():
    eng = Engine()
    x = _leaf(eng, [1, 2, 3], rg=True)
    b = eng.call("mul_s", [x], (2.0,))
    with eng.inference_mode():
        v = _row(eng, b)
    # a normal tensor, tracked as a view: it shares b's counter and requires grad
    assert not v.inference and not v.counterless and v.base is b and v.version == b.version
    assert v.requires_grad and v.is_leaf
    raises(E.INFERENCE_VIEW_INPLACE, eng.call, "add_s_", [v], (1.0,))
    np.testing.assert_array_equal(b.values(), [2, 4, 6])  # refused before it wrote
    assert b.version == 0
    # so is a view of it, made with grad on or under no_grad: the mark sticks
    raises(E.INFERENCE_VIEW_INPLACE, eng.call, "add_s_", [_row(eng, v)], (1.0,))
    with eng.no_grad():
        w = _row(eng, v)
    raises(E.INFERENCE_VIEW_INPLACE, eng.call, "add_s_", [w], (1.0,))
    # and a view of the leaf itself: the inference mark comes before the leaf's
    with eng.inference_mode():
        xv = _row(eng, x)
    raises(E.INFERENCE_VIEW_INPLACE, eng.call, "add_s_", [xv], (1.0,))


def test_written_under_no_grad_or_inside_then_its_grad_fn_cannot_be_read():
    for where in ("no_grad", "inference_mode"):
        eng = Engine()
        b = eng.call("clone", [_leaf(eng, [1, 2, 3], rg=True)])
        with eng.inference_mode():
            v = _row(eng, b)
        with eng.no_grad() if where == "no_grad" else eng.inference_mode():
            eng.call("mul_s_", [v], (3.0,))
        np.testing.assert_array_equal(b.values(), [1, 6, 9])
        assert b.version == 1
        raises(E.INFERENCE_VIEW_INPLACE, lambda v=v: v.is_leaf)
        raises(E.INFERENCE_VIEW_INPLACE, eng.call, "mul_s", [v], (2.0,))


def test_a_view_of_a_tensor_without_grad_is_writable():
    eng = Engine()
    plain = _leaf(eng, [1, 2, 3])
    with eng.inference_mode():
        v = _row(eng, plain)
    eng.call("add_s_", [v], (1.0,))  # nothing requires grad: nothing checks
    np.testing.assert_array_equal(plain.values(), [1, 3, 4])
    assert plain.version == 1
    # but not with an operand that requires grad
    raises(E.INFERENCE_VIEW_INPLACE, eng.call, "add_", [v, _leaf(eng, [1, 1], rg=True)])


def test_multi_output_views_made_in_inference_mode_are_inference_views():
    eng = Engine()
    b = eng.call("clone", [_leaf(eng, [1, 2, 3, 4], rg=True)])
    with eng.inference_mode():
        v = eng.call("split_k", [b], (2, 0, 1))
    assert v.inference_view and not v.multi_output
    raises(E.INFERENCE_VIEW_INPLACE, eng.call, "zero_", [v])


def test_inference_tensors_are_written_only_inside_inference_mode():
    eng = Engine()
    t = _leaf(eng, [1, 2, 3], inference=True)
    tv = _row(eng, t)  # a view of an inference tensor is one
    assert tv.counterless
    for target in (t, tv):
        raises(E.INFERENCE_INPLACE, eng.call, "add_s_", [target], (1.0,))
        with eng.no_grad():
            raises(E.INFERENCE_INPLACE, eng.call, "add_s_", [target], (1.0,))
    with eng.inference_mode():
        eng.call("mul_s_", [t], (2.0,))
        eng.call("zero_", [_row(eng, t, 2)])
    raises(E.INFERENCE_VERSION, lambda: t.version)  # still no counter
    # torch writes, then refuses outside: the four adds of 1 landed before the refusals
    np.testing.assert_array_equal(t.values(), [6, 12, 0])


def test_an_inference_tensor_written_through_shared_elements_is_left_undefined():
    # torch writes, then refuses (no version counter): which of two values
    # sent to one element lands is up to the kernel, as in any such write
    eng = Engine()
    t = _leaf(eng, [1.0, 2.0], inference=True)
    with eng.no_grad():
        e = eng.call("expand", [t], ((2, 2),))
    source = _leaf(eng, [[5.0, 6.0], [7.0, 8.0]])
    raises(E.INFERENCE_INPLACE, eng.call, "index_put_", [e, source], ([1, 0],))
    assert eng.undefined
    raises(E.INFERENCE_INPLACE, eng.call, "add_s_", [t], (1.0,))
    assert eng.undefined is None  # written and refused, but well defined
