"""The in-place view ops in the model (issue 37: transpose_, t_, squeeze_,
unsqueeze_, swapdims_, as_strided_; Engine._op_inplace_view). Each case is
torch 2.13.0's measured behaviour, worked by hand; gradients against central
differences (no torch here)."""

from __future__ import annotations

import numpy as np
import pytest

from oracle import Engine, ErrorKind
from oracle.view_rows import INPLACE_VIEWS

from .helpers import F64, numeric_grads, raises

E = ErrorKind
W = np.array([[1.0, -2.0], [3.0, 0.5], [-1.5, 2.5]])  # a weight of shape (3, 2)


def _mid(eng, rg=True):
    """y = x * 1 of a leaf x = arange(6) (an intermediate), and v = y.view(2, 3)."""
    x = eng.leaf(np.arange(6.0), F64, requires_grad=rg)
    y = eng.call("mul_s", [x], (1.0,))
    return x, y, eng.call("view", [y], ((2, 3),))


def test_the_set_is_the_six_of_torch():
    assert INPLACE_VIEWS == (
        "transpose_",
        "t_",
        "squeeze_",
        "unsqueeze_",
        "swapdims_",
        "as_strided_",
    )


@pytest.mark.parametrize(
    "op, params, shape, strides",
    [
        ("transpose_", (0, 1), (3, 2), (1, 3)),
        ("t_", (), (3, 2), (1, 3)),
        ("swapdims_", (-1, 0), (3, 2), (1, 3)),
        ("unsqueeze_", (0,), (1, 2, 3), (6, 3, 1)),
        ("squeeze_", (0,), (2, 3), (3, 1)),  # no dim of size 1: unchanged, still bumped
        ("as_strided_", ((3, 2), (1, 3), 0), (3, 2), (1, 3)),
    ],
)
def test_the_tensor_itself_changes_its_geometry_keeps_its_storage_and_base(
    op, params, shape, strides
):
    eng = Engine()
    _, y, v = _mid(eng)
    storage, before = v.storage, v.grad_fn()
    assert eng.call(op, [v], params) is v  # returns self
    assert (v.shape, v.strides, v.offset) == (shape, strides, 0)
    assert v.storage is storage and v.base is y  # still a view of the same base
    assert v.version == 1 and y.version == 1  # one bump, on the shared counter
    # the twin's node on the old history; current, so read without regenerating
    node = v.grad_fn()
    assert node.name == op and node.edges[0] is before
    assert y.grad_fn().name == "mul_s"  # the base's history is not touched


def test_the_gradient_maps_back_through_the_old_geometry_then_a_write():
    """y.view(2, 3).transpose_(0, 1), written in place, then (v * W).sum(): the
    later write regenerates v's grad_fn from the base (AsStridedBackward0)."""

    def program(eng, leaves):
        y = eng.call("mul_s", leaves, (1.0,))
        v = eng.call("view", [y], ((2, 3),))
        eng.call("transpose_", [v], (0, 1))
        eng.call("mul_s_", [v], (2.0,))
        return eng.call("mul", [v, eng.leaf(W, F64)])

    eng = Engine()
    x = eng.leaf(np.arange(6.0), F64, requires_grad=True)
    out = program(eng, [x])
    eng.call("backward_g", [out, eng.leaf(np.ones((3, 2)), F64)], (False,))
    expected = numeric_grads(program, [np.arange(6.0)], F64, np.ones((3, 2)))[0]
    np.testing.assert_allclose(x.grad, expected, atol=1e-6)
    np.testing.assert_allclose(x.grad, 2 * W.T.reshape(-1))  # by hand: v[i, j] = y[3j + i]


@pytest.mark.parametrize("op, params", [("as_strided_", ((2, 2), (1, 2), 1)), ("t_", ())])
def test_the_gradient_of_an_intermediate_that_is_no_view(op, params):
    def program(eng, leaves):
        y = eng.call("mul_s", [eng.call("view", leaves, ((2, 3),))], (3.0,))
        eng.call(op, [y], params)
        return eng.call("mul_s", [y], (1.0,))

    eng = Engine()
    x = eng.leaf(np.arange(6.0), F64, requires_grad=True)
    out = program(eng, [x])
    w = np.arange(1.0, 1.0 + out.values().size).reshape(out.shape)
    eng.call("backward_g", [out, eng.leaf(w, F64)], (False,))
    expected = numeric_grads(program, [np.arange(6.0)], F64, w)[0]
    np.testing.assert_allclose(x.grad, expected, atol=1e-6)


@pytest.mark.parametrize("op, params", [("transpose_", (0, 1)), ("unsqueeze_", (1,))])
def test_refused_where_any_in_place_op_is_and_before_it_changes_anything(op, params):
    eng = Engine()
    x = eng.leaf(np.ones((2, 3)), F64, requires_grad=True)
    raises(E.INPLACE_ON_LEAF, eng.call, op, [x], params)
    raises(E.INPLACE_ON_LEAF_VIEW, eng.call, op, [eng.call("view", [x], ((3, 2),))], params)
    assert (x.shape, x.version) == ((2, 3), 0)
    for mode, kind in (
        (eng.no_grad, E.NO_GRAD_VIEW_INPLACE),
        (eng.inference_mode, E.INFERENCE_VIEW_INPLACE),
    ):
        _, y, _ = _mid(eng)
        with mode():
            v = eng.call("view", [y], ((2, 3),))
        raises(kind, eng.call, op, [v], params)
        assert (v.shape, v.version) == ((2, 3), 0)
    _, y, _ = _mid(eng)
    piece = eng.call("unbind_k", [eng.call("view", [y], ((2, 1, 3),))], (0, 0))
    raises(E.MULTI_OUTPUT_VIEW_INPLACE, eng.call, op, [piece], params)
    # nothing requires grad, or grad mode is off: allowed, and bumped
    with eng.no_grad():
        assert eng.call(op, [x], params).version == 1
    _, y, _ = _mid(eng, rg=False)
    with eng.no_grad():
        v = eng.call("view", [y], ((2, 3),))
    eng.call(op, [v], params)
    assert v.version == 1 and v.grad_fn() is None


@pytest.mark.parametrize("where", ["no_grad", "inference_mode"])
def test_a_view_made_in_a_mode_changed_there_refuses_its_grad_fn_and_later_writes(where):
    eng = Engine()
    _, y, _ = _mid(eng)
    kind = E.NO_GRAD_VIEW_INPLACE if where == "no_grad" else E.INFERENCE_VIEW_INPLACE
    with getattr(eng, where)():
        v = eng.call("view", [y], ((2, 3),))
        eng.call("t_", [v], ())
    assert v.shape == (3, 2) and v.version == 1
    raises(kind, v.grad_fn)  # its base's counter moved: no regeneration allowed
    raises(kind, eng.call, "mul_s_", [v], (2.0,))


def test_a_grad_mode_view_changed_under_no_grad_regenerates_from_its_base():
    def program(eng, leaves):
        y = eng.call("mul_s", leaves, (1.0,))
        v = eng.call("view", [y], ((2, 3),))
        with eng.no_grad():
            eng.call("t_", [v], ())
        return eng.call("mul", [v, eng.leaf(W, F64)])

    eng = Engine()
    x = eng.leaf(np.arange(6.0), F64, requires_grad=True)
    out = program(eng, [x])
    assert out.grad_fn().edges[0].name == "AsStridedBackward0"
    eng.call("backward_g", [out, eng.leaf(np.ones((3, 2)), F64)], (False,))
    np.testing.assert_allclose(x.grad, W.T.reshape(-1))


def test_an_intermediate_changed_under_no_grad_keeps_its_old_node():
    """Its history still gives the old shape: a gradient of the new one that
    does not broadcast to it is refused at backward (t_), one that does is
    summed back (unsqueeze_)."""
    for op, params, refused in (("t_", (), True), ("unsqueeze_", (0,), False)):
        eng = Engine()
        x = eng.leaf(np.arange(6.0).reshape(2, 3), F64, requires_grad=True)
        y = eng.call("mul_s", [x], (1.0,))
        with eng.no_grad():
            eng.call(op, [y], params)
        out = eng.call("sum", [eng.call("mul_s", [y], (1.0,))])
        if refused:
            raises(E.GRAD_SHAPE_MISMATCH, eng.call, "backward", [out])
        else:
            eng.call("backward", [out])
            np.testing.assert_array_equal(x.grad, np.ones((2, 3)))


def test_the_bump_trips_a_saved_tensor_and_retain_grad_stays_on_the_old_node():
    eng = Engine()
    x = eng.leaf(np.arange(6.0), F64, requires_grad=True)
    y = eng.call("mul_s", [x], (1.0,))
    z = eng.call("sum", [eng.call("sin", [y])])  # saves y
    eng.call("retain_grad", [y])
    eng.call("unsqueeze_", [y], (0,))
    raises(E.SAVED_TENSOR_MODIFIED, eng.call, "backward", [z])
    out = eng.call("sum", [eng.call("mul_s", [y], (2.0,))])
    eng.call("backward", [out])
    assert y.grad.shape == (6,)  # the old node's gradient: (6,), not y's (1, 6)
    np.testing.assert_array_equal(x.grad, np.full(6, 2.0))


def test_an_inference_tensor_changes_then_refuses_outside_and_keeps_no_counter_inside():
    eng = Engine()
    x = eng.leaf(np.ones((2, 3)), F64, inference=True)
    raises(E.INFERENCE_INPLACE, eng.call, "t_", [x], ())
    assert x.shape == (3, 2)  # changed before the refusal
    with eng.inference_mode():
        eng.call("t_", [x], ())
    assert x.shape == (2, 3)
    raises(E.INFERENCE_VERSION, lambda: x.version)
