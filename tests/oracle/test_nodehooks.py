"""Node hooks (torch.autograd.graph.Node.register_prehook / register_hook) in
the model, worked by hand (no torch). Numbers measured against torch 2.0.1,
2.4.1 and 2.13.0 where marked."""

from __future__ import annotations

import numpy as np

from oracle import Engine, ErrorKind

from .helpers import raises

E = ErrorKind


def _leaf(eng, values, rg=True, dtype="float64"):
    return eng.leaf(np.array(values, dtype=float), dtype, rg)


def _backward(eng, t, retain=False):
    eng.call("backward", [eng.call("sum", [t])], (retain,))


def _doubled(values):
    """A model, a leaf x of `values` that requires grad, and y = x * 2."""
    eng = Engine()
    x = _leaf(eng, values)
    return eng, x, eng.call("mul_s", [x], (2.0,))


def test_a_prehook_replaces_the_grad_outputs_of_its_node():
    eng, x, y = _doubled([1.0, 2.0])
    eng.call("node_prehook_mul", [y], (3.0,))
    _backward(eng, y)
    np.testing.assert_array_equal(x.grad, [6.0, 6.0])  # 1 * 3, then * 2


def test_prehooks_run_in_order_none_and_removed_leave_the_gradient():
    eng, x, y = _doubled([1.0])
    eng.call("node_prehook_add", [y], (1.0,))
    eng.call("node_prehook_none", [y])
    eng.call("node_prehook_removed", [y], (10.0,))
    eng.call("node_prehook_mul", [y], (3.0,))
    _backward(eng, y)
    np.testing.assert_array_equal(x.grad, [12.0])  # (1 + 1) * 3 * 2


def test_a_prehook_runs_after_the_tensor_hooks_of_its_node():
    # torch 2.0.1/2.4.1/2.13.0: the tensor hook's 1 + 10, then * 3 (66 for x * 2)
    eng, x, y = _doubled([1.0])
    eng.call("node_prehook_mul", [y], (3.0,))  # registered first, runs second
    eng.call("hook_add", [y], (10.0,))
    _backward(eng, y)
    np.testing.assert_array_equal(x.grad, [66.0])


def test_retain_grad_sees_the_gradient_before_the_prehooks():
    # measured on 2.0.1, 2.4.1, 2.13.0 (notes/autograd.rst lists retain_grad
    # after the pre-hooks: docs/findings.md); the differential does not draw it
    eng, x, y = _doubled([1.0])
    eng.call("retain_grad", [y])
    eng.call("hook_mul", [y], (10.0,))
    eng.call("node_prehook_mul", [y], (3.0,))
    _backward(eng, y)
    np.testing.assert_array_equal(y.grad, [10.0])
    np.testing.assert_array_equal(x.grad, [60.0])


def test_a_prehook_on_accumulate_grad_runs_after_the_leaf_hooks():
    # torch: tensor hook (2 + 10), AccumulateGrad pre-hook (* 3): 36
    eng, x, y = _doubled([1.0])
    eng.call("acc_prehook_mul", [y], (3.0,))  # y.grad_fn.next_functions[0][0]
    eng.call("hook_add", [x], (10.0,))
    _backward(eng, y)
    np.testing.assert_array_equal(x.grad, [36.0])


def test_accumulate_grad_prehook_runs_before_the_post_accumulate_hook():
    eng, x, y = _doubled([1.0])
    eng.call("post_hook_mul", [x], (0.5,))
    eng.call("acc_prehook_add", [y], (1.0,))
    _backward(eng, y)
    np.testing.assert_array_equal(x.grad, [1.5])  # (2 + 1) * 0.5


def test_the_accumulate_grad_node_is_shared_while_a_graph_holds_it():
    eng, x, y = _doubled([1.0])
    eng.call("acc_prehook_mul", [y], (3.0,))
    _backward(eng, eng.call("exp", [x]))  # another graph, the same AccumulateGrad
    np.testing.assert_allclose(x.grad, [3 * np.e])


def test_retain_grad_does_not_keep_a_detached_graph_and_its_hooks_alive():
    # torch 2.0.1, 2.4.1, 2.13.0, 2.14.1: cos(1) = 0.5403, not 1.5403. The
    # retains_grad hook lives on y's grad_fn; y.detach_() drops that node, the
    # AccumulateGrad it alone held and the pre-hook on it
    eng, x, y = _doubled([1.0])
    eng.call("retain_grad", [y])
    eng.call("acc_prehook_add", [y], (1.0,))
    with eng.no_grad():
        eng.call("detach_", [y])
    _backward(eng, eng.call("sin", [x]))
    np.testing.assert_allclose(x.grad, [np.cos(1.0)])


def test_retain_grad_moves_to_a_views_regenerated_grad_fn():
    # torch 2.0.1 to 2.14.1: t1 = t0.reshape(1, 2, 1); t1.retain_grad(); a
    # no_grad write into t0; t1.backward(g) fills t1.grad: the hook moves to
    # the grad_fn t1 regenerates, though its old one is then freed
    eng = Engine()
    x = _leaf(eng, [[1.0, 1.0]])
    v = eng.call("reshape", [x], ((1, 2, 1),))
    eng.call("retain_grad", [v])
    with eng.no_grad():
        eng.call("setitem_s", [x], ((slice(None), 0), 0.75))
    eng.call("backward", [eng.call("sum", [v])], (False,))
    np.testing.assert_array_equal(v.grad, [[[1.0], [1.0]]])


def test_a_post_hook_replaces_the_grad_inputs_of_its_node():
    eng, x, y = _doubled([1.0, 2.0])
    eng.call("node_hook_add", [y], (1.0,))  # after MulBackward: 2 + 1
    eng.call("node_prehook_mul", [y], (3.0,))  # before it: 3 * 2 + 1
    _backward(eng, y)
    np.testing.assert_array_equal(x.grad, [7.0, 7.0])


def test_post_hooks_run_in_order_none_and_removed_leave_the_gradient():
    # torch 2.13.0: 7 (measured)
    eng, x, y = _doubled([1.0])
    eng.call("node_hook_mul", [y], (3.0,))
    eng.call("node_hook_removed", [y], (10.0,))
    eng.call("node_hook_none", [y])
    eng.call("node_hook_add", [y], (1.0,))
    _backward(eng, y)
    np.testing.assert_array_equal(x.grad, [7.0])  # 2 * 3 + 1


def test_node_hooks_stay_with_their_node_after_an_in_place_write():
    # torch: x * 2, pre-hook * 3 on MulBackward0, then y.mul_(5): 30
    eng, x, y = _doubled([1.0])
    eng.call("node_prehook_mul", [y], (3.0,))
    eng.call("mul_s_", [y], (5.0,))
    eng.call("node_hook_add", [y], (1.0,))  # on the in-place node: 5 + 1, then * 3 * 2
    _backward(eng, y)
    np.testing.assert_array_equal(x.grad, [36.0])


def test_node_hooks_run_again_on_every_backward_through_their_node():
    eng, x, y = _doubled([1.0])
    eng.call("node_hook_mul", [y], (3.0,))
    _backward(eng, y, retain=True)
    _backward(eng, y)
    np.testing.assert_array_equal(x.grad, [12.0])


def test_node_hooks_round_in_the_gradient_dtype():
    # torch: float16 x * 2, pre-hook * 0.25, post hook + 1 on grad (1e-3, 3): (1.001, 2.5)
    eng = Engine()
    x = _leaf(eng, [1.0, 2.0], dtype="float16")
    y = eng.call("mul_s", [x], (2.0,))
    eng.call("node_prehook_mul", [y], (0.25,))
    eng.call("node_hook_add", [y], (1.0,))
    g = eng.leaf(np.array([1e-3, 3.0]), "float16")
    eng.call("backward_g", [y, g], (False,))
    np.testing.assert_array_equal(x.grad, np.array([1.001, 2.5], dtype=np.float16))


def test_node_hooks_of_a_node_that_does_not_run_never_run():
    eng, x, y = _doubled([1.0])
    z = eng.call("mul_s", [y], (5.0,))
    eng.call("node_prehook_mul", [y], (3.0,))
    eng.call("node_hook_add", [y], (1.0,))
    one = _leaf(eng, [1.0], False)
    g = eng.call("autograd_grad", [z, y, one], (True, True))  # y's node is not run
    np.testing.assert_array_equal(g.values(), [5.0])
    g = eng.call("autograd_grad", [z, x, one], (True, True))  # it is now
    np.testing.assert_array_equal(g.values(), [31.0])  # 5 * 3 * 2 + 1


def test_a_node_hook_on_a_leaf_grad_fn_raises():
    eng = Engine()
    x = _leaf(eng, [1.0])
    raises(E.NO_NODE, eng.call, "node_prehook_mul", [x], (2.0,))
    raises(E.NO_NODE, eng.call, "node_hook_none", [x])
