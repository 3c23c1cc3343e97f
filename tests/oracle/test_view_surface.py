"""The wider view surface (tensor_view.rst): each op's elements worked by hand,
its gradient against finite differences, and the rules on multi-output views."""

from __future__ import annotations

import numpy as np
import pytest

from oracle import Engine, ErrorKind
from strategies.argspace import LEFT_OUT, Spread

from .helpers import numeric_grads, raises, run

E = ErrorKind
A = np.arange(12.0).reshape(3, 4)  # [[0 1 2 3] [4 5 6 7] [8 9 10 11]]

# op, params, input, the elements it selects (worked by hand), its strides
BY_HAND = [
    ("narrow", (1, 1, 2), A, [[1, 2], [5, 6], [9, 10]], (4, 1)),
    ("diagonal", (0, 0, 1), A, [0, 5, 10], (5,)),
    ("diagonal", (1, 0, 1), A, [1, 6, 11], (5,)),
    ("diagonal", (-1, 0, 1), A, [4, 9], (5,)),
    ("diagonal", (5, 0, 1), A, np.zeros(0), (5,)),
    ("movedim", (0, 1), A, A.T, (1, 4)),
    ("swapaxes", (0, 1), A, A.T, (1, 4)),
    ("swapdims", (1, 0), A, A.T, (1, 4)),
    ("mT", (), A, A.T, (1, 4)),
    ("T", (), A, A.T, (1, 4)),
    ("H", (), A, A.T, (1, 4)),
    ("mH", (), A, A.T, (1, 4)),
    ("adjoint", (), A, A.T, (1, 4)),
    (
        "unflatten",
        (1, (2, 2)),
        A,
        [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], [10, 11]]],
        (4, 2, 1),
    ),
    ("unflatten", (1, (-1, 1)), A, A.reshape(3, 4, 1), (4, 1, 1)),
    ("unfold", (1, 2, 2), A, [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], [10, 11]]], (4, 2, 1)),
    (
        "unfold",
        (0, 2, 1),
        A,
        [[[0, 4], [1, 5], [2, 6], [3, 7]], [[4, 8], [5, 9], [6, 10], [7, 11]]],
        (4, 1, 4),
    ),
    ("as_strided", ((2, 2), (1, 4), 1), A, [[1, 5], [2, 6]], (1, 4)),
    ("as_strided", ((3,), (0,), 2), A, [2, 2, 2], (0,)),
    ("unbind_k", (0, 1), A, [4, 5, 6, 7], (1,)),
    ("unbind_k", (1, -1), A, [3, 7, 11], (4,)),
    ("split_k", (2, 1, 1), A, [[2, 3], [6, 7], [10, 11]], (4, 1)),
    ("split_k", (2, 0, 1), A, [[8, 9, 10, 11]], (4, 1)),
    ("split_with_sizes_k", ([1, 0, 2], 0, 2), A, A[1:], (4, 1)),
    ("split_with_sizes_k", ([1, 0, 2], 0, 1), A, np.zeros((0, 4)), (4, 1)),
    ("chunk_k", (2, 0, 1), A, [[8, 9, 10, 11]], (4, 1)),  # pieces of ceil(3 / 2) = 2
    ("chunk_k", (3, 1, -1), A, [[2, 3], [6, 7], [10, 11]], (4, 1)),  # 2 pieces, not 3
    ("tensor_split_k", (3, 1, 0), A, [[0, 1], [4, 5], [8, 9]], (4, 1)),  # 4 = 2 + 1 + 1
    ("tensor_split_k", (3, 1, 2), A, [[3], [7], [11]], (4, 1)),
    ("tensor_split_k", (5, 0, 4), A, np.zeros((0, 4)), (4, 1)),
    ("hsplit_k", (2, 1), A, [[2, 3], [6, 7], [10, 11]], (4, 1)),
    ("vsplit_k", (3, 0), A, [[0, 1, 2, 3]], (4, 1)),
    # the list overloads: split(sizes) is split_with_sizes; tensor_split(indices)
    # cuts between the indices, one past the end giving an empty piece
    ("split_k", ([1, 3], 1, 1), A, [[1, 2, 3], [5, 6, 7], [9, 10, 11]], (4, 1)),
    ("tensor_split_k", ([1, 3], 1, 1), A, [[1, 2], [5, 6], [9, 10]], (4, 1)),
    ("tensor_split_k", ([1, 3], 1, -1), A, [[3], [7], [11]], (4, 1)),
    ("tensor_split_k", ([2, 5], 1, 2), A, np.zeros((3, 0)), (4, 1)),
    ("tensor_split_k", ([], 0, 0), A, A, (4, 1)),
    # tensor_split(indices) is x[:i0], x[i0:i1], ..., x[ik:], each a Python slice:
    # a negative index counts from the end ([-1] of 4 cuts at 3) ...
    ("tensor_split_k", ([-1], 1, 0), A, A[:, :3], (4, 1)),
    ("tensor_split_k", ([-1], 1, 1), A, [[3], [7], [11]], (4, 1)),
    ("tensor_split_k", ([1, -2], 1, 1), A, [[1], [5], [9]], (4, 1)),  # x[:, 1:2]
    # ... one beyond either end is clamped to it ([-10, 3] of 4: x[:0], x[0:3], x[3:]) ...
    ("tensor_split_k", ([-10, 3], 1, 0), A, np.zeros((3, 0)), (4, 1)),
    ("tensor_split_k", ([-10, 3], 1, 1), A, A[:, :3], (4, 1)),
    ("tensor_split_k", ([7], 0, 0), A, A, (4, 1)),
    # ... and indices that decrease give a slice that stops before it starts
    # (empty, at its start) and pieces that overlap: [3, 1] of 4 rows is
    # x[:3], x[3:1], x[1:], the last two sharing rows 1 and 2
    ("tensor_split_k", ([3, 1], 1, 0), A, A[:, :3], (4, 1)),
    ("tensor_split_k", ([3, 1], 1, 1), A, np.zeros((3, 0)), (4, 1)),
    ("tensor_split_k", ([3, 1], 1, 2), A, [[1, 2, 3], [5, 6, 7], [9, 10, 11]], (4, 1)),
    ("tensor_split_k", ([-1, -3], 1, -1), A, [[1, 2, 3], [5, 6, 7], [9, 10, 11]], (4, 1)),
    ("tensor_split_k", ([2, 0], 0, 2), A, A, (4, 1)),  # x[0:], the whole of x again
    # squeeze(dims) and squeeze(): the named dims of size 1, or every one
    ("squeeze", ((0, -1),), A.reshape(1, 3, 4, 1), A, (4, 1)),
    ("squeeze", ((1, 0),), A.reshape(1, 3, 4), A, (4, 1)),  # dim 1 has size 3: it stays
    ("squeeze", (LEFT_OUT,), A.reshape(1, 3, 1, 4), A, (4, 1)),
    # a 0-d tensor takes dims 0 and -1
    ("movedim", (0, -1), np.array(5.0), 5.0, ()),
    ("transpose", (-1, 0), np.array(5.0), 5.0, ()),
    ("squeeze", (-1,), np.array(5.0), 5.0, ()),
    # a shape or an order of dims as a list, or one by one
    ("permute", ([1, 0],), A, A.T, (1, 4)),
    ("permute", (Spread((1, 0)),), A, A.T, (1, 4)),
    ("view", (Spread((4, 3)),), A, A.reshape(4, 3), (3, 1)),
    ("view", ([2, -1],), A, A.reshape(2, 6), (6, 1)),
    # expand's sizes as a list or one by one, -1 keeping a dim's size
    ("expand", ([2, 3, 4],), A, [A, A], (0, 4, 1)),
    ("expand", (Spread((2, -1, 4)),), A, [A, A], (0, 4, 1)),
    ("expand", ((-1, 4),), A[:, :1], [[0] * 4, [4] * 4, [8] * 4], (1, 0)),
    ("expand", ([2, -1, 4],), A[:, :1], [[[0] * 4, [4] * 4, [8] * 4]] * 2, (0, 1, 0)),
]


@pytest.mark.parametrize(("op", "params", "x", "want", "strides"), BY_HAND)
def test_view_selects_the_elements_worked_by_hand(op, params, x, want, strides):
    eng = Engine()
    base = eng.leaf(x, "float64")
    v = eng.call(op, [base], params)
    np.testing.assert_array_equal(v.values(), np.asarray(want, dtype=float))
    assert v.storage is base.storage and v.base is base and v.counter is base.counter
    assert v.strides == strides or v.values().size == 0


@pytest.mark.parametrize(("op", "params", "x", "want", "strides"), BY_HAND)
def test_view_gradient_matches_finite_differences(op, params, x, want, strides):
    def program(e, ts):
        v = e.call(op, ts, params)
        return e.call("mul", [v, v])  # a gradient that depends on which element is which

    xs = [np.random.default_rng(0).uniform(-1, 1, x.shape)]
    out, _ = run(program, xs)
    w = np.random.default_rng(1).normal(size=out.shape)
    _, got = run(program, xs, "float64", w)
    want_grad = numeric_grads(program, xs, "float64", w)
    np.testing.assert_allclose(got[0], want_grad[0], rtol=1e-5, atol=1e-7)


def test_unfold_windows_overlapping_sum_their_gradients():
    # x.unfold(0, 2, 1) of [a, b, c] is [[a, b], [b, c]]: b is read twice
    out, grads = run(lambda e, ts: e.call("unfold", ts, (0, 2, 1)), [np.array([1.0, 2, 3])])
    np.testing.assert_array_equal(grads[0], [1, 2, 1])


MULTI = [
    ("unbind_k", (0, 0)),
    ("split_k", (1, 0, 0)),
    ("split_with_sizes_k", ([1, 2], 0, 1)),
    ("chunk_k", (3, 0, 2)),
]
SLICES = [
    ("tensor_split_k", (3, 0, 1)),
    ("vsplit_k", (3, 1)),
    ("hsplit_k", (2, 0)),
    ("narrow", (0, 1, 1)),
]


def _graph():
    eng = Engine()
    root = eng.leaf(np.arange(6.0).reshape(3, 2), "float32", True)
    return eng, root, eng.call("mul_s", [root], (2.0,))


@pytest.mark.parametrize(("op", "params"), MULTI)
def test_inplace_on_an_output_of_several_views_raises(op, params):
    eng, root, base = _graph()
    v = eng.call(op, [base], params)
    assert v.multi_output
    raises(E.MULTI_OUTPUT_VIEW_INPLACE, eng.call, "mul_s_", [v], (2.0,))
    w = eng.call("getitem", [v], ((slice(None),),) if v.shape else ((),))  # a view of it too
    raises(E.MULTI_OUTPUT_VIEW_INPLACE, eng.call, "mul_s_", [w], (2.0,))
    assert v.version == 0  # refused before it wrote
    with eng.no_grad():  # recorded by nothing: allowed
        eng.call("mul_s_", [v], (2.0,))
    assert v.version == 1
    raises(E.MULTI_OUTPUT_VIEW_INPLACE, lambda: v.is_leaf)  # and now its grad_fn is stale


@pytest.mark.parametrize(("op", "params"), MULTI)
def test_an_output_of_several_views_of_a_tensor_without_grad(op, params):
    """Made in grad mode, it is one output of several, whether or not its base
    requires grad; torch's message opens "A view was created in no_grad mode"
    while it has no grad_fn, and names the op once a view of it has one (torch
    2.0.1 to 2.14.1: unbind of zeros(3), then requires_grad_(True) on the output
    and a write to its [()] view: "Output 0 of AliasBackward0 is a view ...
    returns multiple views")."""
    eng = Engine()
    base = eng.leaf(np.arange(6.0).reshape(3, 2), "float32", False)
    v = eng.call(op, [base], params)
    assert v.multi_output and not v.no_grad_view
    w = _leaf_like(eng, v)
    raises(E.NO_GRAD_VIEW_INPLACE, eng.call, "mul_", [v, w])  # no grad_fn: "in no_grad mode"
    eng.call("requires_grad_", [v], (True,))
    raises(E.NO_GRAD_VIEW_INPLACE, eng.call, "mul_s_", [v], (2.0,))
    x = eng.call("getitem", [v], ((slice(None),),) if v.shape else ((),))
    assert x.has_grad_fn  # a view of a leaf that requires grad, multi-output by descent
    raises(E.MULTI_OUTPUT_VIEW_INPLACE, eng.call, "mul_s_", [x], (2.0,))


def _leaf_like(eng, t):
    return eng.leaf(np.ones(t.shape), t.dtype, True)


@pytest.mark.parametrize(("op", "params"), MULTI)
def test_grad_fn_of_an_output_of_several_views_raises_after_its_base_is_written(op, params):
    eng, root, base = _graph()
    v = eng.call(op, [base], params)
    assert v.has_grad_fn
    eng.call("add_s_", [base], (1.0,))
    raises(E.MULTI_OUTPUT_VIEW_INPLACE, lambda: v.has_grad_fn)
    raises(E.MULTI_OUTPUT_VIEW_INPLACE, eng.call, "mul_s", [v], (2.0,))  # using it needs it


@pytest.mark.parametrize(("op", "params"), SLICES)
def test_outputs_made_of_slices_are_ordinary_views(op, params):
    eng, root, base = _graph()
    v = eng.call(op, [base], params)
    assert not v.multi_output
    eng.call("mul_s_", [v], (3.0,))
    eng.call("backward", [eng.call("sum", [base])], (False,))
    mask = np.zeros(6, bool)
    flat = np.arange(6).reshape(3, 2)
    mask[
        np.asarray(
            eng.call(op, [eng.leaf(flat.astype(float), "float64")], params).values(), int
        ).ravel()
    ] = True
    np.testing.assert_array_equal(root.grad.ravel(), np.where(mask, 6.0, 2.0))


def test_multi_output_views_of_a_tensor_without_grad_are_refused_as_made_under_no_grad():
    eng = Engine()
    plain = eng.leaf(np.ones((2, 2)), "float32")
    v = eng.call("unbind_k", [plain], (0, 0))
    assert v.multi_output and v.refused_as_no_grad  # no grad_fn (see the test above)
    eng.call("mul_s_", [v], (2.0,))  # nothing records it: allowed
    raises(E.NO_GRAD_VIEW_INPLACE, eng.call, "mul_", [v, eng.leaf(np.ones(2), "float32", True)])


def test_a_multi_output_view_of_a_no_grad_view_is_a_multi_output_view():
    eng, root, base = _graph()
    with eng.no_grad():
        nv = eng.call("getitem", [base], ((slice(1, None),),))
    v = eng.call("unbind_k", [nv], (0, 0))
    assert v.multi_output and not v.no_grad_view
    with eng.no_grad():
        u = eng.call("unbind_k", [base], (0, 0))
    assert u.no_grad_view and not u.multi_output
    raises(E.NO_GRAD_VIEW_INPLACE, eng.call, "mul_s_", [eng.call("getitem", [u], ((0,),))], (2.0,))


def test_a_write_into_overlapping_windows_is_left_undefined():
    eng = Engine()
    x = eng.leaf(np.arange(4.0), "float32")
    windows = eng.call("unfold", [x], (0, 2, 1))  # elements 1 and 2 twice
    eng.call("mul_s_", [windows], (2.0,))
    assert eng.undefined and "overlap" in eng.undefined
    apart = eng.call("unfold", [x], (0, 2, 2))
    eng.call("mul_s_", [apart], (2.0,))
    assert eng.undefined is None
