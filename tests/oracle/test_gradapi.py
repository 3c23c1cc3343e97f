"""Tensor hooks, post-accumulate-grad hooks, retain_grad and create_graph in
the model, worked by hand (no torch)."""

from __future__ import annotations

import numpy as np

from oracle import Engine, ErrorKind, Release

from .helpers import raises

E = ErrorKind


def _leaf(eng, values, rg=True, dtype="float64"):
    return eng.leaf(np.array(values, dtype=float), dtype, rg)


def _backward(eng, t):
    eng.call("backward", [eng.call("sum", [t])], (False,))


def test_a_leaf_hook_replaces_the_gradient_that_reaches_grad():
    eng = Engine()
    x = _leaf(eng, [1.0, 2.0])
    eng.call("hook_mul", [x], (3.0,))
    _backward(eng, eng.call("mul_s", [x], (2.0,)))
    np.testing.assert_array_equal(x.grad, [6.0, 6.0])  # 2 * 3


def test_a_hook_returning_none_or_removed_leaves_the_gradient():
    eng = Engine()
    x = _leaf(eng, [1.0, 2.0])
    eng.call("hook_none", [x])
    eng.call("hook_removed", [x], (10.0,))
    _backward(eng, eng.call("mul_s", [x], (2.0,)))
    np.testing.assert_array_equal(x.grad, [2.0, 2.0])


def test_hooks_run_in_registration_order_on_the_previous_result():
    eng = Engine()
    x = _leaf(eng, [1.0])
    eng.call("hook_mul", [x], (2.0,))
    eng.call("hook_add", [x], (1.0,))
    _backward(eng, x)
    np.testing.assert_array_equal(x.grad, [3.0])  # (1 * 2) + 1, not (1 + 1) * 2
    y = _leaf(eng, [1.0])
    eng.call("hook_add", [y], (1.0,))
    eng.call("hook_mul", [y], (2.0,))
    _backward(eng, y)
    np.testing.assert_array_equal(y.grad, [4.0])


def test_a_non_leaf_hook_changes_what_flows_on_and_what_retain_grad_keeps():
    eng = Engine()
    x = _leaf(eng, [1.0, -1.0])
    y = eng.call("mul_s", [x], (2.0,))
    eng.call("retain_grad", [y])
    eng.call("hook_add", [y], (1.0,))  # registered after retain_grad: runs before it
    _backward(eng, eng.call("mul_s", [y], (3.0,)))
    np.testing.assert_array_equal(y.grad, [4.0, 4.0])  # 3 + 1
    np.testing.assert_array_equal(x.grad, [8.0, 8.0])  # (3 + 1) * 2


def test_a_hook_stays_with_the_grad_fn_it_was_registered_on():
    eng = Engine()
    x = _leaf(eng, [1.0])
    y = eng.call("mul_s", [x], (2.0,))
    eng.call("hook_mul", [y], (10.0,))  # bound to MulBackward
    eng.call("mul_s_", [y], (3.0,))  # y's grad_fn is MulBackward (in place) now
    eng.call("hook_add", [y], (1.0,))  # bound to the new one
    _backward(eng, y)
    np.testing.assert_array_equal(x.grad, [120.0])
    # (1 + 1) reaches the in-place node, * 3 to the old y, * 10 by its hook, * 2 to x


def test_autograd_grad_returns_the_hooked_gradient():
    eng = Engine()
    x = _leaf(eng, [1.0, 2.0])
    y = eng.call("mul_s", [x], (2.0,))
    eng.call("hook_mul", [y], (3.0,))
    one = _leaf(eng, [1.0, 1.0], False)
    g = eng.call("autograd_grad", [eng.call("mul_s", [y], (1.0,)), y, one], (True,))
    np.testing.assert_array_equal(g.values(), [3.0, 3.0])
    eng.call("hook_mul", [x], (5.0,))
    g = eng.call("autograd_grad", [y, x, one], (True,))
    np.testing.assert_array_equal(g.values(), [30.0, 30.0])  # 1 * 3 * 2 * 5


def test_hooks_round_in_the_gradient_dtype():
    eng = Engine()
    x = _leaf(eng, [1.0], dtype="float16")
    eng.call("hook_add", [x], (1.0,))
    eng.call("backward_g", [x, eng.leaf(np.array([1e-4]), "float16")], (False,))
    assert x.grad.tolist() == [1.0]  # 1 + 1e-4 rounds to 1 in float16


def test_register_hook_refuses_a_tensor_that_does_not_require_grad():
    eng = Engine()
    raises(E.HOOK_NO_GRAD, eng.call, "hook_mul", [_leaf(eng, [1.0], False)], (2.0,))
    raises(E.HOOK_NO_GRAD, eng.call, "post_hook_mul", [_leaf(eng, [1.0], False)], (2.0,))


def test_post_accumulate_hook_runs_after_each_accumulation():
    eng = Engine()
    x = _leaf(eng, [1.0, 2.0])
    eng.call("post_hook_mul", [x], (3.0,))
    _backward(eng, eng.call("mul_s", [x], (2.0,)))
    np.testing.assert_array_equal(x.grad, [6.0, 6.0])
    _backward(eng, eng.call("mul_s", [x], (2.0,)))
    np.testing.assert_array_equal(x.grad, [24.0, 24.0])  # (6 + 2) * 3


def test_post_accumulate_hook_refuses_a_non_leaf():
    eng = Engine()
    y = eng.call("mul_s", [_leaf(eng, [1.0])], (2.0,))
    raises(E.POST_HOOK_NON_LEAF, eng.call, "post_hook_mul", [y], (2.0,))


def test_post_accumulate_hook_sees_what_tensor_hooks_left():
    eng = Engine()
    x = _leaf(eng, [1.0])
    eng.call("post_hook_mul", [x], (2.0,))
    eng.call("hook_add", [x], (1.0,))  # before AccumulateGrad
    _backward(eng, eng.call("mul_s", [x], (3.0,)))
    np.testing.assert_array_equal(x.grad, [8.0])  # (3 + 1) * 2


def test_autograd_grad_runs_no_post_accumulate_hook():
    eng = Engine()
    x = _leaf(eng, [1.0])
    eng.call("post_hook_mul", [x], (2.0,))
    y = eng.call("mul_s", [x], (3.0,))
    g = eng.call("autograd_grad", [y, x, _leaf(eng, [1.0], False)], (True,))
    np.testing.assert_array_equal(g.values(), [3.0])
    assert x.grad is None


def _retained(eng):
    x = _leaf(eng, [1.0, 1.0, 1.0])
    y = eng.call("mul_s", [x], (2.0,))
    eng.call("retain_grad", [y])
    return x, y


def _backward3(eng, y):  # (y * 3).backward(ones), graph kept
    one = _leaf(eng, [1.0, 1.0, 1.0], False)
    eng.call("backward_g", [eng.call("mul_s", [y], (3.0,)), one], (True,))


def test_a_retained_grad_accumulates_and_follows_a_write():
    eng = Engine()
    x, y = _retained(eng)
    _backward3(eng, y)
    np.testing.assert_array_equal(y.grad, [3.0, 3.0, 3.0])
    eng.call("mul_s_", [y], (7.0,))
    _backward3(eng, y)
    np.testing.assert_array_equal(y.grad, [6.0, 6.0, 6.0])  # the newest y's: not * 7
    np.testing.assert_array_equal(x.grad, [6.0 + 42.0] * 3)


def test_a_retained_grad_follows_a_write_through_a_view_from_2_3():
    eng = Engine()
    x, y = _retained(eng)
    eng.call("mul_s_", [eng.call("narrow", [y], (0, 0, 2))], (5.0,))
    _backward3(eng, y)
    np.testing.assert_array_equal(y.grad, [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(x.grad, [30.0, 30.0, 6.0])
    old = Engine(Release(retain_grad_follows_view_writes=False))
    x, y = _retained(old)
    old.call("mul_s_", [old.call("narrow", [y], (0, 0, 2))], (5.0,))
    _backward3(old, y)
    np.testing.assert_array_equal(y.grad, [15.0, 15.0, 3.0])  # the version before the write
