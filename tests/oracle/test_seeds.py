"""The examples of the three seed articles, worked through the oracle by hand."""

from __future__ import annotations

import numpy as np

from oracle import Engine, ErrorKind

from .helpers import raises


def _vec(eng, values, rg=False):
    return eng.leaf(np.array(values, dtype=float), "float32", requires_grad=rg)


def _backward_sum(eng, t):
    eng.call("backward", [eng.call("sum", [t])], (False,))


# ---- seed 000: clone(), copy_(), detach(), parameter initialisation -------
def test_000_clone_grads_add_up_on_the_source():
    eng = Engine()
    a = _vec(eng, [1, 2, 3], rg=True)
    b = eng.call("clone", [a])
    assert b.storage is not a.storage and b.has_grad_fn and not b.is_leaf
    c = eng.call("mul_s", [a], (2.0,))
    d = eng.call("mul_s", [b], (3.0,))
    _backward_sum(eng, c)
    _backward_sum(eng, d)
    np.testing.assert_array_equal(a.grad, [5, 5, 5])
    assert b.grad is None


def test_000_copy_into_fresh_tensor_also_routes_grads_to_source():
    eng = Engine()
    a = _vec(eng, [1, 2, 3], rg=True)
    b = eng.call("copy_", [eng.call("zeros_like", [a]), a])
    assert b.storage is not a.storage and b.has_grad_fn
    _backward_sum(eng, eng.call("mul_s", [a], (2.0,)))
    _backward_sum(eng, eng.call("mul_s", [b], (3.0,)))
    np.testing.assert_array_equal(a.grad, [5, 5, 5])


def test_000_detach_shares_memory_and_cuts_the_graph():
    eng = Engine()
    a = _vec(eng, [1, 2, 3], rg=True)
    b = eng.call("detach", [a])
    assert b.storage is a.storage and not b.requires_grad
    _backward_sum(eng, eng.call("mul_s", [a], (2.0,)))
    np.testing.assert_array_equal(a.grad, [2, 2, 2])
    d = eng.call("sum", [eng.call("mul_s", [b], (3.0,))])
    raises(ErrorKind.NO_GRAD_FN, eng.call, "backward", [d], (False,))
    np.testing.assert_array_equal(a.grad, [2, 2, 2])


def test_000_initialising_a_leaf_in_place():
    eng = Engine()
    a = _vec(eng, [1, 2, 3, 4])
    w = _vec(eng, [0, 0, 0, 0])
    eng.call("requires_grad_", [w], (True,))
    raises(ErrorKind.INPLACE_ON_LEAF, eng.call, "copy_", [w, a])
    assert w.version == 0 and not w.values().any()
    eng.call("copy_", [eng.call("data", [w]), a])
    np.testing.assert_array_equal(w.values(), [1, 2, 3, 4])
    assert w.requires_grad and w.is_leaf
    w2 = _vec(eng, [0, 0, 0, 0])
    eng.call("requires_grad_", [w2], (True,))
    eng.call("copy_", [eng.call("detach", [w2]), a])
    np.testing.assert_array_equal(w2.values(), [1, 2, 3, 4])
    assert w2.version == 1  # detach() shares the counter, .data does not
    assert w.version == 0


# ---- seed 001: a @ b with detach() and clone() --------------------------------
def _ab(eng):
    return _vec(eng, [1, 1], rg=True), _vec(eng, [2, 2], rg=True)


def _iadd_first(eng, t):
    """`t[0] += 2` in Python: getitem, in-place add, setitem back."""
    v = eng.call("getitem", [t], ((0,),))
    eng.call("add_s_", [v], (2.0,))
    eng.call("setitem", [t, v], ((0,),))


def test_001_matmul_grads():
    eng = Engine()
    a, b = _ab(eng)
    eng.call("backward", [eng.call("matmul", [a, b])], (False,))
    np.testing.assert_array_equal(a.grad, [2, 2])
    np.testing.assert_array_equal(b.grad, [1, 1])


def test_001_detached_operand_gets_no_grad():
    eng = Engine()
    a, b = _ab(eng)
    a_ = eng.call("detach", [a])
    assert not a_.requires_grad
    eng.call("backward", [eng.call("matmul", [a_, b])], (False,))
    assert a.grad is None
    np.testing.assert_array_equal(b.grad, [1, 1])


def test_001_writing_through_detach_changes_the_source():
    eng = Engine()
    a, b = _ab(eng)
    a_ = eng.call("detach", [a])
    _iadd_first(eng, a_)
    np.testing.assert_array_equal(a.values(), [3, 1])
    assert a.version == a_.version == 2
    eng.call("backward", [eng.call("matmul", [a, b])], (False,))
    np.testing.assert_array_equal(a.grad, [2, 2])
    np.testing.assert_array_equal(b.grad, [3, 1])


def test_001_clone_protects_the_source():
    eng = Engine()
    a, b = _ab(eng)
    a_ = eng.call("clone", [a])
    _iadd_first(eng, a_)
    assert a.version == 0 and a_.version == 2
    np.testing.assert_array_equal(a.values(), [1, 1])
    eng.call("backward", [eng.call("matmul", [a, b])], (False,))
    np.testing.assert_array_equal(a.grad, [2, 2])
    np.testing.assert_array_equal(b.grad, [1, 1])


def test_001_grads_flow_back_through_the_clone():
    eng = Engine()
    a, b = _ab(eng)
    a_ = eng.call("clone", [a])
    _iadd_first(eng, a_)
    eng.call("backward", [eng.call("matmul", [a_, b])], (False,))
    np.testing.assert_array_equal(a.grad, [2, 2])
    np.testing.assert_array_equal(b.grad, [3, 1])


# ---- seed 003: .data versus detach() ------------------------------------------
def test_003_writing_through_data_silently_changes_the_gradient():
    eng = Engine()
    a = _vec(eng, [1, 2, 3], rg=True)
    out = eng.call("tanh", [a])
    c = eng.call("data", [out])
    eng.call("zero_", [c])
    assert not c.requires_grad and out.requires_grad
    np.testing.assert_array_equal(out.values(), [0, 0, 0])
    _backward_sum(eng, out)
    np.testing.assert_array_equal(a.grad, [1, 1, 1])


def test_003_writing_through_detach_is_caught():
    eng = Engine()
    a = _vec(eng, [1, 2, 3], rg=True)
    out = eng.call("tanh", [a])
    c = eng.call("detach", [out])
    eng.call("zero_", [c])
    assert out.version == 1
    s = eng.call("sum", [out])
    raises(ErrorKind.SAVED_TENSOR_MODIFIED, eng.call, "backward", [s], (False,))
