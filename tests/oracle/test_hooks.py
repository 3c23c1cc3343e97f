"""Tensor hooks, post-accumulate-grad hooks, retain_grad and create_graph in
the model, worked by hand (no torch)."""

from __future__ import annotations

import numpy as np

from oracle import Engine, ErrorKind

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
    g = eng.call("autograd_grad", [eng.call("mul_s", [y], (1.0,)), y, one], (True, True))
    np.testing.assert_array_equal(g.values(), [3.0, 3.0])
    eng.call("hook_mul", [x], (5.0,))
    g = eng.call("autograd_grad", [y, x, one], (True, True))
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
    g = eng.call("autograd_grad", [y, x, _leaf(eng, [1.0], False)], (True, True))
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


def test_a_retained_grad_follows_a_write_through_a_view():
    eng = Engine()
    x, y = _retained(eng)
    eng.call("mul_s_", [eng.call("narrow", [y], (0, 0, 2))], (5.0,))
    _backward3(eng, y)
    np.testing.assert_array_equal(y.grad, [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(x.grad, [30.0, 30.0, 6.0])


def _second(op, params, xs, v, w):
    """d = grad(op(x), x, v, create_graph=True); d.backward(w): (d, x.grad)."""
    eng = Engine()
    x = _leaf(eng, xs)
    out = eng.call(op, [x], params)
    d = eng.call("grad_cg", [out, x, _leaf(eng, v, False)])
    if d.requires_grad:
        eng.call("backward_g", [d, _leaf(eng, w, False)], (False,))
    return d, x.grad


def _numeric_second(f, xs, v, w, h=1e-5):
    """w * v * f''(x) by central differences of f."""
    xs = np.array(xs)
    return np.array(w) * np.array(v) * (f(xs + h) - 2 * f(xs) + f(xs - h)) / h**2


def test_create_graph_gives_second_derivatives():
    xs, v, w = [0.3, -0.7, 1.1], [1.0, 2.0, -0.5], [0.5, 1.0, 3.0]
    cases = [
        ("exp", (), np.exp),
        ("sin", (), np.sin),
        ("cos", (), np.cos),
        ("tanh", (), np.tanh),
        ("sigmoid", (), lambda x: 1 / (1 + np.exp(-x))),
        ("pow_s", (3,), lambda x: x**3),
        ("pow_s", (2,), lambda x: x**2),
        ("pow_s", (1,), lambda x: x),
    ]
    for op, params, f in cases:
        d, grad = _second(op, params, xs, v, w)
        assert d.requires_grad and not d.is_leaf, op
        np.testing.assert_allclose(grad, _numeric_second(f, xs, v, w), rtol=1e-4, atol=1e-4)


def test_a_gradient_outside_any_graph_for_linear_ops():
    for op, params in (("mul_s", (3.0,)), ("neg", ()), ("pow_s", (0,))):
        d, grad = _second(op, params, [1.0, 2.0], [1.0, 1.0], [1.0, 1.0])
        assert not d.requires_grad and d.is_leaf and grad is None, op
    eng = Engine()
    x = _leaf(eng, [1.0])
    d = eng.call("grad_cg", [eng.call("mul_s", [x], (3.0,)), x, _leaf(eng, [2.0], False)])
    np.testing.assert_array_equal(d.values(), [6.0])
    raises(E.NO_GRAD_FN, eng.call, "backward_g", [d, _leaf(eng, [1.0], False)], (False,))


def test_create_graph_keeps_the_first_graph():
    eng = Engine()
    x = _leaf(eng, [0.5])
    out = eng.call("exp", [x])
    one = _leaf(eng, [1.0], False)
    eng.call("grad_cg", [out, x, one])
    eng.call("backward_g", [out, one], (False,))  # the graph was kept
    np.testing.assert_allclose(x.grad, np.exp([0.5]))


def test_backward_through_a_create_graph_gradient_frees_what_it_ran():
    eng = Engine()
    x = _leaf(eng, [0.5])
    out = eng.call("tanh", [x])  # d reads tanh's result: through TanhBackward
    one = _leaf(eng, [1.0], False)
    d = eng.call("grad_cg", [out, x, one])
    eng.call("backward_g", [d, _leaf(eng, [1.0], False)], (False,))
    raises(E.BACKWARD_TWICE, eng.call, "backward_g", [out, one], (False,))
    raises(E.BACKWARD_TWICE, eng.call, "backward_g", [d, _leaf(eng, [1.0], False)], (False,))
    eng = Engine()
    x = _leaf(eng, [0.5])
    out = eng.call("sin", [x])  # d = v * cos(x): a node of its own
    d = eng.call("grad_cg", [out, x, one])
    eng.call("backward_g", [d, _leaf(eng, [1.0], False)], (False,))
    eng.call("backward_g", [out, one], (False,))
    np.testing.assert_allclose(x.grad, [-np.sin(0.5) + np.cos(0.5)])


def test_op_node_reached_both_ways_runs_once():
    """d = grad(tanh(x), x, v, create_graph=True); (d + tanh(x)).backward(w):
    TanhBackward gets both gradients, runs once, and is freed after."""
    eng = Engine()
    x = _leaf(eng, [0.5])
    out = eng.call("tanh", [x])
    one = _leaf(eng, [1.0], False)
    d = eng.call("grad_cg", [out, x, one])
    eng.call("backward_g", [eng.call("add", [d, out]), _leaf(eng, [1.0], False)], (False,))
    t = np.tanh(0.5)
    np.testing.assert_allclose(x.grad, [-2 * t * (1 - t * t) + (1 - t * t)])
    raises(E.BACKWARD_TWICE, eng.call, "backward_g", [out, one], (False,))


def test_index_add_saves_its_index_only_for_a_source_that_requires_grad():
    """(measured on 2.13.0: a second backward raises only then)"""
    for source_rg in (False, True):
        eng = Engine()
        t = eng.call("clone", [_leaf(eng, np.ones((2, 3)))])
        src = _leaf(eng, np.ones((2, 3)), source_rg)
        eng.call("index_add_", [t, src], (0, [0, 1]))
        one = _leaf(eng, np.ones((2, 3)), False)
        eng.call("backward_g", [t, one], (False,))
        if source_rg:
            raises(E.BACKWARD_TWICE, eng.call, "backward_g", [t, one], (False,))
        else:
            eng.call("backward_g", [t, one], (False,))


def test_only_the_first_hook_since_the_grad_fn_changed_reads_it():
    """torch 2.0.1 to 2.14.1: register_hook makes t._backward_hooks (None again
    whenever t's grad_fn changes) and reads t.grad_fn just after: a stale
    one-of-several view raises there, a removed hook too, and the dict stays;
    a later hook joins it without reading grad_fn, so it does not raise."""
    eng = Engine()
    x = _leaf(eng, [1.0, 1.0, 1.0])
    y = eng.call("mul_s", [x], (2.0,))
    u = eng.call("unbind_k", [y], (0, 1))
    eng.call("mul_s_", [y], (2.0,))
    raises(E.MULTI_OUTPUT_VIEW_INPLACE, eng.call, "hook_removed", [u], (3.0,))
    eng.call("hook_mul", [u], (3.0,))  # the dict is there: grad_fn is not read
    y2 = eng.call("mul_s", [x], (2.0,))
    u2 = eng.call("unbind_k", [y2], (0, 1))
    eng.call("hook_mul", [u2], (3.0,))  # on the fresh grad_fn
    eng.call("mul_s_", [y2], (2.0,))
    eng.call("hook_mul", [u2], (5.0,))  # joins the dict: no raise
