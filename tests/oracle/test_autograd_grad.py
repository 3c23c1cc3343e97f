"""torch.autograd.grad in the model: returned, not accumulated; only the nodes
that lead to the input run (so only they check saved tensors and are freed)."""

from __future__ import annotations

import numpy as np

from oracle import Engine, ErrorKind
from strategies.argspace import LEFT_OUT

from .helpers import numeric_grads, raises

E = ErrorKind


def _leaf(eng, values, rg=True):
    return eng.leaf(np.array(values, dtype=float), "float64", rg)


def test_gradient_is_returned_and_no_grad_changes():
    eng = Engine()
    x = _leaf(eng, [1.0, -2.0, 3.0])
    y = eng.call("mul", [x, x])  # dy/dx = 2x
    g = eng.call("autograd_grad", [y, x, _leaf(eng, [1.0, 10.0, 100.0], False)], (True, True))
    np.testing.assert_array_equal(g.values(), [2.0, -40.0, 600.0])
    assert x.grad is None and not g.requires_grad and g.storage is not x.storage
    eng.call("backward_g", [y, _leaf(eng, [1.0, 1.0, 1.0], False)], (False,))
    np.testing.assert_array_equal(x.grad, [2.0, -4.0, 6.0])  # backward alone put it there


def test_with_respect_to_an_intermediate_and_an_unused_input():
    eng = Engine()
    x = _leaf(eng, [0.5, 1.0])
    y = eng.call("exp", [x])
    z = eng.call("mul_s", [y], (3.0,))
    gy = eng.call("autograd_grad", [z, y, _leaf(eng, [1.0, 2.0], False)], (True, True))
    np.testing.assert_array_equal(gy.values(), [3.0, 6.0])
    unrelated = _leaf(eng, [7.0])
    one = _leaf(eng, [1.0, 1.0], False)
    assert eng.call("autograd_grad", [z, unrelated, one], (True, True)) is None
    raises(
        E.INPUT_NO_GRAD,
        eng.call,
        "autograd_grad",
        [z, _leaf(eng, [1.0], False), _leaf(eng, [1.0, 1.0], False)],
        (True, True),
    )


def test_only_the_nodes_leading_to_the_input_run():
    eng = Engine()
    x = _leaf(eng, [0.5, 1.0])
    a = eng.call("exp", [x])  # saves its result
    b = eng.call("mul_s", [x], (3.0,))
    out = eng.call("add", [a, b])
    eng.call("add_s_", [a], (1.0,))  # exp's saved result is now stale
    one = _leaf(eng, [1.0, 1.0], False)
    gb = eng.call("autograd_grad", [out, b, one], (False, True))  # ExpBackward never runs
    np.testing.assert_array_equal(gb.values(), [1.0, 1.0])
    raises(E.SAVED_TENSOR_MODIFIED, eng.call, "autograd_grad", [out, x, one], (True, True))


def test_retain_graph_false_frees_what_ran():
    eng = Engine()
    x = _leaf(eng, [0.5, 1.0])
    y = eng.call("sin", [x])  # saves x
    one = _leaf(eng, [1.0, 1.0], False)
    eng.call("autograd_grad", [y, x, one], (False, True))
    raises(E.BACKWARD_TWICE, eng.call, "backward_g", [y, one], (False,))


def test_an_unused_input_raises_unless_allow_unused():
    # "allow_unused: If False, specifying inputs that were not used when computing
    # outputs ... is an error"; left out, it is False. No node leads to the input,
    # so none runs and none is freed: y's graph is whole after the error (as torch's)
    for allow_unused in (False, LEFT_OUT, True):
        eng = Engine()
        x = _leaf(eng, [0.5, 1.0])
        y = eng.call("sin", [x])  # saves x
        one, unrelated = _leaf(eng, [1.0, 1.0], False), _leaf(eng, [7.0])
        args = ("autograd_grad", [y, unrelated, one], (LEFT_OUT, allow_unused))
        if allow_unused:
            assert eng.call(*args) is None
        else:
            raises(E.UNUSED_INPUT, eng.call, *args)
        eng.call("backward_g", [y, one], (LEFT_OUT,))
        np.testing.assert_array_equal(x.grad, np.cos([0.5, 1.0]))


def test_gradient_matches_finite_differences():
    def grad_of(e, ts):
        y = e.call("tanh", [e.call("mul", [ts[0], ts[0]])])
        w = e.leaf(np.array([1.0, -1.0, 0.5]), "float64")
        return e.call("autograd_grad", [y, ts[0], w], (False, True))

    xs = [np.array([0.3, -0.7, 1.1])]
    eng = Engine()
    got = grad_of(eng, [eng.leaf(xs[0], "float64", True)]).values()

    def chain(e, ts):
        return e.call("tanh", [e.call("mul", [ts[0], ts[0]])])

    (want,) = numeric_grads(chain, xs, "float64", np.array([1.0, -1.0, 0.5]))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_assigning_grad_checks_shape_and_dtype_then_accumulates():
    eng = Engine()
    x = _leaf(eng, [1.0, 2.0])
    raises(E.GRAD_ASSIGN_MISMATCH, eng.call, "set_grad", [x, _leaf(eng, [1.0, 2.0, 3.0], False)])
    raises(E.GRAD_ASSIGN_MISMATCH, eng.call, "set_grad", [x, eng.leaf(np.ones(2), "float32")])
    assert x.grad is None
    eng.call("set_grad", [x, _leaf(eng, [10.0, 20.0], False)])
    eng.call("backward", [eng.call("sum", [eng.call("mul_s", [x], (3.0,))])], (False,))
    np.testing.assert_array_equal(x.grad, [13.0, 23.0])


def test_every_path_to_the_input_is_summed():
    # t0 / t0.clone().squeeze(0): one path to t0 is a direct edge, the other
    # runs through squeeze and clone; torch sums both (d(x/x)/dx = 0). A
    # search that stopped at the first edge reaching t0 pruned the second
    # path and predicted 1 / x (the ci profile's false alarm).
    eng = Engine()
    x = _leaf(eng, [[2.0, 4.0]])
    quotient = eng.call("div", [x, eng.call("squeeze", [eng.call("clone", [x])], (0,))])
    g = eng.call("autograd_grad", [quotient, x, _leaf(eng, [[1.0, 1.0]], False)], (False, True))
    np.testing.assert_array_equal(g.values(), [[0.0, 0.0]])


def test_autograd_grad_fills_retained_grads_on_the_nodes_that_run():
    eng = Engine()
    x = _leaf(eng, [1.0, 1.0])
    a = eng.call("mul_s", [x], (2.0,))
    eng.call("retain_grad", [a])
    b = eng.call("mul_s", [a], (3.0,))
    eng.call("retain_grad", [b])
    side = eng.call("mul_s", [x], (5.0,))
    eng.call("retain_grad", [side])
    out = eng.call("add", [b, side])
    g = eng.call("autograd_grad", [out, a, _leaf(eng, [1.0, 1.0], False)], (True, True))
    np.testing.assert_array_equal(g.values(), [3.0, 3.0])
    np.testing.assert_array_equal(a.grad, [3.0, 3.0])  # the input's own node ran its hooks
    np.testing.assert_array_equal(b.grad, [1.0, 1.0])
    assert side.grad is None and x.grad is None  # off the path: nothing
