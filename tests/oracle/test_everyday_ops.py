"""The everyday ops of issue 33 step 4 (flip, cumsum...), worked by hand:
their values, gradients held to finite differences, what they save, their
result's layout, and that what their argument spaces (strategies.op_args)
draw is a call the model accepts."""

from __future__ import annotations

import itertools
from random import Random

import numpy as np
import pytest

from oracle import OPS, Engine, ErrorKind
from strategies.argspace import Operand, RandomPick
from strategies.op_args import SPACES

from .helpers import F64, numeric_grads, raises, run

SHAPES = [(), (0,), (1,), (3,), (2, 3), (3, 0), (1, 2, 2), (2, 1, 3, 2)]


def _grads_match(program, arrays, w):
    _, grads = run(program, arrays, grad_out=w)
    for got, want in zip(grads, numeric_grads(program, arrays, F64, w), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("name", sorted(SPACES))
def test_drawn_arguments_are_calls_the_model_accepts(name):
    """Only valid calls are drawn; each value falls in one of its arg's classes."""
    space, spec = SPACES[name], OPS[name]
    assert spec.args is space and tuple(a.name for a in space.args) == spec.params
    assert len(set(space.declared)) == len(space.declared)
    drawn = 0
    for seed, shape in itertools.product(range(30), SHAPES):
        operand = Operand(shape, True, 0)
        args = space.choose(RandomPick(Random(seed)), operand)
        if args is None:
            continue
        drawn += 1
        eng = Engine()
        x = eng.leaf(np.arange(float(np.prod(shape))).reshape(shape), F64)
        out = eng.call(name, [x], args)  # raises if refused
        assert out is not None
        classes = space.classes_of(operand, args)
        for arg in space.args:
            assert any(c.startswith(f"{arg.name}: ") for c in classes), (name, args)
    assert drawn, name


# ---- flip -------------------------------------------------------------------------
def test_flip_values_by_hand():
    eng = Engine()
    x = eng.leaf(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), F64)
    np.testing.assert_array_equal(eng.call("flip", [x], ((0,),)).values(), [[4, 5, 6], [1, 2, 3]])
    np.testing.assert_array_equal(eng.call("flip", [x], ((-1,),)).values(), [[3, 2, 1], [6, 5, 4]])
    np.testing.assert_array_equal(eng.call("flip", [x], ((0, 1),)).values(), [[6, 5, 4], [3, 2, 1]])
    np.testing.assert_array_equal(eng.call("flip", [x], ((),)).values(), x.values())
    s = eng.leaf(np.array(7.0), F64)
    assert eng.call("flip", [s], ((0,),)).values() == 7.0  # a 0-d tensor takes dim 0


def test_flip_is_a_copy_in_self_layout():
    eng = Engine()
    x = eng.leaf(np.arange(6.0).reshape(2, 3), F64)
    xt = eng.call("t", [x], ())  # strides (1, 3)
    out = eng.call("flip", [xt], ((0,),))
    assert out.strides == (1, 3) and out.storage is not x.storage
    np.testing.assert_array_equal(out.values(), [[2, 5], [1, 4], [0, 3]])


def test_flip_gradient_flips_back():
    w = np.array([[1.0, 10.0, 100.0], [2.0, 20.0, 200.0]])
    out, (g,) = run(lambda e, ls: e.call("flip", ls, ((1,),)), [np.ones((2, 3))], grad_out=w)
    np.testing.assert_array_equal(g, [[100, 10, 1], [200, 20, 2]])
    a = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])
    _grads_match(lambda e, ls: e.call("flip", ls, ((0, -1),)), [a], w)


def test_flip_saves_nothing():
    """A later write to self leaves flip's backward alone (it saves only dims)."""
    assert OPS["flip"].saves == ()
    eng = Engine()
    x = eng.leaf(np.array([1.0, 2.0]), F64, requires_grad=True)
    y = eng.call("mul_s", [x], (1.0,))
    out = eng.call("flip", [y], ((0,),))
    eng.call("mul_s_", [y], (3.0,))
    eng.call("backward_g", [out, eng.leaf(np.array([1.0, 2.0]), F64)], (True,))
    np.testing.assert_array_equal(x.grad, [2.0, 1.0])
    eng.call("backward_g", [out, eng.leaf(np.array([1.0, 2.0]), F64)], (False,))


def test_flip_never_draws_a_repeated_dim():
    space = SPACES["flip"]
    for seed in range(200):
        (dims,) = space.choose(RandomPick(Random(seed)), Operand((2, 3, 4)))
        assert len({d % 3 for d in dims}) == len(dims)


# ---- cumsum -----------------------------------------------------------------------
def test_cumsum_values_by_hand():
    eng = Engine()
    x = eng.leaf(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), F64)
    np.testing.assert_array_equal(eng.call("cumsum", [x], (0,)).values(), [[1, 2, 3], [5, 7, 9]])
    np.testing.assert_array_equal(eng.call("cumsum", [x], (-1,)).values(), [[1, 3, 6], [4, 9, 15]])
    s = eng.leaf(np.array(7.0), F64)
    assert eng.call("cumsum", [s], (0,)).values() == 7.0  # a 0-d tensor takes dim 0
    e = eng.leaf(np.zeros((2, 0)), F64)
    assert eng.call("cumsum", [e], (1,)).shape == (2, 0)


def test_cumsum_of_integers_and_bools_is_int64():
    eng = Engine()
    b = eng.leaf(np.array([True, False, True]), "bool")
    out = eng.call("cumsum", [b], (0,))
    assert out.dtype == "int64"
    np.testing.assert_array_equal(out.values(), [1, 1, 2])
    i = eng.leaf(np.array([100, 100, 100], dtype=np.int8), "int8")
    out = eng.call("cumsum", [i], (0,))
    assert out.dtype == "int64"  # no int8 wraparound: 300 fits
    np.testing.assert_array_equal(out.values(), [100, 200, 300])
    assert (
        eng.call("cumsum", [eng.leaf(np.ones(2, np.float32), "float32")], (0,)).dtype == "float32"
    )


def test_cumsum_is_contiguous():
    eng = Engine()
    x = eng.leaf(np.arange(6.0).reshape(2, 3), F64)
    out = eng.call("cumsum", [eng.call("t", [x], ())], (0,))
    assert out.strides == (2, 1)
    np.testing.assert_array_equal(out.values(), [[0, 3], [1, 7], [3, 12]])


def test_cumsum_gradient_sums_from_the_end():
    # d/dx_j of sum_i w_i * (x_0 + ... + x_i) = w_j + ... + w_last
    w = np.array([1.0, 10.0, 100.0])
    _, (g,) = run(lambda e, ls: e.call("cumsum", ls, (0,)), [np.ones(3)], grad_out=w)
    np.testing.assert_array_equal(g, [111, 110, 100])
    a = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])
    w2 = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    _grads_match(lambda e, ls: e.call("cumsum", ls, (1,)), [a], w2)
    _grads_match(lambda e, ls: e.call("cumsum", ls, (-2,)), [a], w2)
    c = np.array([1 + 2j, -0.5 + 1j])
    _grads_match(lambda e, ls: e.call("cumsum", ls, (0,)), [c], np.array([1 - 1j, 2 + 0.5j]))


def test_cumsum_saves_nothing():
    assert OPS["cumsum"].saves == ()
    eng = Engine()
    x = eng.leaf(np.array([1.0, 2.0]), F64, requires_grad=True)
    y = eng.call("mul_s", [x], (1.0,))
    out = eng.call("cumsum", [y], (0,))
    eng.call("mul_s_", [y], (3.0,))  # a later write to self: backward still runs
    eng.call("backward_g", [out, eng.leaf(np.array([1.0, 2.0]), F64)], (True,))
    np.testing.assert_array_equal(x.grad, [3.0, 2.0])


# ---- clamp_min_ -------------------------------------------------------------------
def test_clamp_min_values_by_hand():
    eng = Engine()
    x = eng.leaf(np.array([-1.0, 0.5, 2.0, np.nan]), F64)
    out = eng.call("clamp_min_", [x], (1.0,))
    assert out is x and x.version == 1  # in place, one bump
    np.testing.assert_array_equal(x.values(), [1.0, 1.0, 2.0, np.nan])  # nan stays nan
    i = eng.leaf(np.array([0, 1, 2], dtype=np.int32), "int32")
    np.testing.assert_array_equal(eng.call("clamp_min_", [i], (1,)).values(), [1, 1, 2])


def test_clamp_min_gradient_away_from_the_bound():
    a = np.array([-1.0, 0.5, 2.0, 3.0])
    w = np.array([1.0, 2.0, 3.0, 4.0])

    def program(e, ls):
        return e.call("clamp_min_", [e.call("mul_s", ls, (1.0,))], (1.0,))

    _, (g,) = run(program, [a], grad_out=w)
    np.testing.assert_array_equal(g, [0, 0, 3, 4])  # 1 where self > min, else 0
    _grads_match(program, [a], w)


def test_clamp_min_saves_the_original_self():
    """derivatives.yaml: `where(self >= min, grad, 0)`: in place, a private copy of
    self as it was, so a later write does not break backward."""
    assert OPS["clamp_min_"].saves == ("self",)
    eng = Engine()
    x = eng.leaf(np.array([0.0, 2.0]), F64, requires_grad=True)
    y = eng.call("mul_s", [x], (1.0,))
    eng.call("clamp_min_", [y], (1.0,))
    eng.call("mul_s_", [y], (3.0,))  # y's gradient reads 3 * d clamp_min: [0, 3]
    eng.call("backward_g", [y, eng.leaf(np.ones(2), F64)], (False,))
    np.testing.assert_array_equal(x.grad, [0.0, 3.0])


def test_clamp_min_refuses_an_expanded_self():
    eng = Engine()
    x = eng.leaf(np.zeros(2), F64)
    e = eng.call("expand", [x], ((3, 2),))
    raises(ErrorKind.OVERLAPPING_WRITE, eng.call, "clamp_min_", [e], (1.0,))


# ---- take -------------------------------------------------------------------------
def test_take_reads_self_as_1d_by_hand():
    eng = Engine()
    x = eng.leaf(np.arange(6.0).reshape(2, 3), F64)
    xt = eng.call("t", [x], ())  # [[0, 3], [1, 4], [2, 5]]: read as [0, 3, 1, 4, 2, 5]
    np.testing.assert_array_equal(eng.call("take", [xt], ([0, -1, 1],)).values(), [0, 5, 3])
    out = eng.call("take", [xt], ([[0, 1], [1, 2]],))
    assert out.shape == (2, 2) and out.strides == (2, 1)
    np.testing.assert_array_equal(out.values(), [[0, 3], [3, 1]])
    assert eng.call("take", [xt], (2,)).shape == ()  # a 0-d index
    s = eng.leaf(np.array(5.0), F64)
    np.testing.assert_array_equal(eng.call("take", [s], ([0, -1],)).values(), [5, 5])
    e = eng.leaf(np.zeros((2, 0)), F64)
    assert eng.call("take", [e], ([],)).shape == (0,)
    raises(ErrorKind.INDEX_OUT_OF_RANGE, eng.call, "take", [x], ([6],))
    raises(ErrorKind.INDEX_OUT_OF_RANGE, eng.call, "take", [x], ([-7],))


def test_take_gradient_adds_repeated_entries():
    w = np.array([1.0, 2.0, 3.0])
    _, (g,) = run(lambda e, ls: e.call("take", ls, ([0, 0, 2],)), [np.ones(3)], grad_out=w)
    np.testing.assert_array_equal(g, [3, 0, 3])  # torch 2.13.0 gives the same
    a = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])
    w2 = np.array([[1.0, -2.0], [0.5, 4.0]])
    _grads_match(lambda e, ls: e.call("take", ls, ([[5, -1], [0, 3]],)), [a], w2)


def test_take_saves_self():
    """derivatives.yaml: `take_backward(grad, self, index)`: a later write to
    self makes backward raise, and so does a second backward."""
    assert OPS["take"].saves == ("self",)
    eng = Engine()
    x = eng.leaf(np.array([1.0, 2.0, 3.0]), F64, requires_grad=True)
    y = eng.call("mul_s", [x], (1.0,))
    out = eng.call("take", [y], ([0, 2],))
    eng.call("mul_s_", [y], (2.0,))
    grad = eng.leaf(np.ones(2), F64)
    raises(ErrorKind.SAVED_TENSOR_MODIFIED, eng.call, "backward_g", [out, grad], (False,))
    y2 = eng.call("mul_s", [x], (1.0,))
    out2 = eng.call("take", [y2], ([0, 2],))
    eng.call("backward_g", [out2, grad], (False,))
    raises(ErrorKind.BACKWARD_TWICE, eng.call, "backward_g", [out2, grad], (False,))


# ---- gather -----------------------------------------------------------------------
def test_gather_values_by_hand():
    eng = Engine()
    x = eng.leaf(np.arange(6.0).reshape(2, 3), F64)  # [[0, 1, 2], [3, 4, 5]]
    out = eng.call("gather", [x], (1, [[0, 0], [2, 1]]))  # out[i][j] = x[i][index[i][j]]
    assert out.shape == (2, 2) and out.strides == (2, 1)
    np.testing.assert_array_equal(out.values(), [[0, 0], [5, 4]])
    # dim 0: out[i][j] = x[index[i][j]][j]; index smaller than self in dim 1
    np.testing.assert_array_equal(
        eng.call("gather", [x], (-2, [[1], [0], [1]])).values(), [[3], [0], [3]]
    )
    xt = eng.call("t", [x], ())  # [[0, 3], [1, 4], [2, 5]]
    np.testing.assert_array_equal(eng.call("gather", [xt], (0, [[1], [0]])).values(), [[1], [0]])
    assert eng.call("gather", [x], (1, [[], []])).shape == (2, 0)
    s = eng.leaf(np.array(5.0), F64)
    assert eng.call("gather", [s], (0, 0)).values() == 5.0
    raises(ErrorKind.INDEX_OUT_OF_RANGE, eng.call, "gather", [x], (1, [[3]]))
    raises(ErrorKind.INDEX_OUT_OF_RANGE, eng.call, "gather", [x], (1, [[-1]]))


def test_gather_gradient_adds_entries_read_twice():
    w = np.array([[1.0, 2.0], [3.0, 4.0]])
    prog = lambda e, ls: e.call("gather", ls, (1, [[0, 0], [2, 1]]))  # noqa: E731
    _, (g,) = run(prog, [np.ones((2, 3))], grad_out=w)
    np.testing.assert_array_equal(g, [[3, 0, 0], [0, 4, 3]])
    a = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])
    _grads_match(prog, [a], w)
    _grads_match(lambda e, ls: e.call("gather", ls, (0, [[1, 1, 0]])), [a], np.array([[1.0, 2, 3]]))


def test_gather_saves_self():
    """derivatives.yaml: `gather_backward(grad, self, dim, index, sparse_grad)`."""
    assert OPS["gather"].saves == ("self",)
    eng = Engine()
    x = eng.leaf(np.array([1.0, 2.0, 3.0]), F64, requires_grad=True)
    y = eng.call("mul_s", [x], (1.0,))
    out = eng.call("gather", [y], (0, [2, 2]))
    eng.call("mul_s_", [y], (2.0,))
    grad = eng.leaf(np.ones(2), F64)
    raises(ErrorKind.SAVED_TENSOR_MODIFIED, eng.call, "backward_g", [out, grad], (False,))


# ---- index_fill_ ------------------------------------------------------------------
def test_index_fill_values_by_hand():
    eng = Engine()
    x = eng.leaf(np.arange(6.0).reshape(2, 3), F64)
    out = eng.call("index_fill_", [x], (1, [0, 2, 0], 1))  # a repeated entry: the same fill
    assert out is x and x.version == 1
    np.testing.assert_array_equal(x.values(), [[1, 1, 1], [1, 4, 1]])
    y = eng.leaf(np.arange(6.0).reshape(2, 3), F64)
    np.testing.assert_array_equal(
        eng.call("index_fill_", [y], (-2, -1, 0)).values(), [[0, 1, 2], [0, 0, 0]]
    )
    s = eng.leaf(np.array(3.0), F64)
    assert eng.call("index_fill_", [s], (0, [0], 1)).values() == 1.0
    b = eng.leaf(np.array([True, False]), "bool")
    np.testing.assert_array_equal(eng.call("index_fill_", [b], (0, [1], 1)).values(), [True, True])
    raises(ErrorKind.INDEX_OUT_OF_RANGE, eng.call, "index_fill_", [y], (0, [2], 0))


def test_index_fill_gradient_is_zero_where_filled():
    w = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])

    def program(e, ls):
        return e.call("index_fill_", [e.call("mul_s", ls, (1.0,))], (1, [0, -1], 1))

    _, (g,) = run(program, [np.ones((2, 3))], grad_out=w)
    np.testing.assert_array_equal(g, [[0, 2, 0], [0, 5, 0]])
    _grads_match(program, [np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])], w)


def test_index_fill_saves_its_index_only():
    """derivatives.yaml: `grad.index_fill(dim, index, 0)`: self is not saved (a later
    write is harmless), the index is (a second backward raises)."""
    assert OPS["index_fill_"].saves == ()
    eng = Engine()
    x = eng.leaf(np.array([1.0, 2.0, 3.0]), F64, requires_grad=True)
    y = eng.call("mul_s", [x], (1.0,))
    eng.call("index_fill_", [y], (0, [1], 0))
    z = eng.call("mul_s", [y], (2.0,))
    eng.call("backward_g", [z, eng.leaf(np.ones(3), F64)], (False,))
    np.testing.assert_array_equal(x.grad, [2, 0, 2])
    y2 = eng.call("mul_s", [x], (1.0,))
    eng.call("index_fill_", [y2], (0, [1], 0))
    eng.call("backward_g", [y2, eng.leaf(np.ones(3), F64)], (False,))
    raises(
        ErrorKind.BACKWARD_TWICE, eng.call, "backward_g", [y2, eng.leaf(np.ones(3), F64)], (False,)
    )


def test_index_fill_on_expanded_memory_is_undefined():
    """The documentation deprecates it (a warning); the model takes either outcome."""
    assert SPACES["index_fill_"].undefined[0].sentence.startswith("Use of index_fill_ on expanded")
    eng = Engine()
    e = eng.call("expand", [eng.leaf(np.zeros(3), F64)], ((2, 3),))
    eng.call("index_fill_", [e], (1, [0], 1))
    assert eng.undefined


# ---- lerp_ ------------------------------------------------------------------------
def test_lerp_values_by_hand():
    eng = Engine()
    x = eng.leaf(np.array([1.0, 2.0]), F64)
    end = eng.leaf(np.array([3.0, -2.0]), F64)
    out = eng.call("lerp_", [x, end], (0.25,))  # 1 + 0.25 * 2, 2 + 0.25 * -4
    assert out is x and x.version == 1
    np.testing.assert_array_equal(x.values(), [1.5, 1.0])
    y = eng.leaf(np.array([1.0]), F64)
    eng.call("lerp_", [y, eng.leaf(np.array([2.0]), F64)], (-1.5,))  # 2 - 1 * 2.5
    np.testing.assert_array_equal(y.values(), [-0.5])
    c = eng.leaf(np.array([1 + 1j]), "complex128")
    eng.call("lerp_", [c, eng.leaf(np.array([2j]), "complex128")], (0.5 + 0.5j,))
    np.testing.assert_allclose(c.values(), [1j])  # torch 2.13.0 gives the same
    raises(
        ErrorKind.NOT_BROADCASTABLE,
        eng.call,
        "lerp_",
        [eng.leaf(np.ones(2), F64), eng.leaf(np.ones((2, 2)), F64)],
        (0.5,),
    )


def test_lerp_gradients():
    w = np.array([[1.0, 2.0], [3.0, 4.0]])

    def program(e, ls):
        return e.call("lerp_", [e.call("mul_s", [ls[0]], (1.0,)), ls[1]], (0.75,))

    _, (gs, ge) = run(program, [np.ones((2, 2)), np.ones(2)], grad_out=w)
    np.testing.assert_array_equal(gs, w * 0.25)
    np.testing.assert_array_equal(ge, [(1 + 3) * 0.75, (2 + 4) * 0.75])  # end broadcast: summed
    _grads_match(program, [np.array([[0.5, -1.0], [3.0, 0.25]]), np.array([2.0, -4.0])], w)


def test_lerp_saves_no_tensor():
    assert OPS["lerp_"].saves == ()
    eng = Engine()
    x = eng.leaf(np.array([1.0, 2.0]), F64, requires_grad=True)
    end = eng.leaf(np.array([3.0, 5.0]), F64, requires_grad=True)
    y = eng.call("add_s", [x], (0.0,))  # (mul_s would save its wrapped scalar)
    eng.call("lerp_", [y, end], (0.5,))
    eng.call("backward_g", [y, eng.leaf(np.ones(2), F64)], (False,))
    eng.call("backward_g", [y, eng.leaf(np.ones(2), F64)], (False,))  # nothing freed
    np.testing.assert_array_equal(end.grad, [1.0, 1.0])


# ---- max(dim)[k]: values and indices -----------------------------------------------
def test_max_dim_values_and_indices_by_hand():
    eng = Engine()
    x = eng.leaf(np.array([[1.0, 3.0, 3.0], [np.nan, 2.0, np.nan]]), F64)
    v = eng.call("max_dim_k", [x], (1, False, 0))
    i = eng.call("max_dim_k", [x], (-1, False, 1))
    np.testing.assert_array_equal(v.values(), [3.0, np.nan])  # nan is the maximum
    # ties: "the indices of the first maximal value are returned" (torch.max's doc)
    np.testing.assert_array_equal(i.values(), [1, 0])
    assert (v.dtype, i.dtype, v.version, i.version) == (F64, "int64", 0, 0)
    k = eng.call("max_dim_k", [x], (0, True, 1))
    assert k.shape == (1, 3) and k.strides == (3, 1)
    np.testing.assert_array_equal(k.values(), [[1, 0, 1]])
    s = eng.call("max_dim_k", [eng.leaf(np.array(5.0), F64)], (-1, True, 1))
    assert s.shape == () and s.values() == 0  # a 0-d self: itself, at index 0
    b = eng.call("max_dim_k", [eng.leaf(np.array([[True, False, True]]), "bool")], (1, False, 1))
    np.testing.assert_array_equal(b.values(), [0])
    with pytest.raises(TypeError):  # max(): does not support complex input
        eng.call("max_dim_k", [eng.leaf(np.array([1j]), "complex128")], (0, False, 0))


def test_max_dim_gradients():
    w = np.array([1.0, 2.0])

    def program(e, ls):
        return e.call("max_dim_k", [e.call("mul_s", [ls[0]], (1.0,))], (1, False, 0))

    _, (g,) = run(program, [np.array([[1.0, 3.0, 3.0], [5.0, 2.0, 0.0]])], grad_out=w)
    np.testing.assert_array_equal(g, [[0, 1, 0], [2, 0, 0]])  # a tie: the first index only
    _grads_match(program, [np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])], w)

    def kept(e, ls):
        return e.call("max_dim_k", [e.call("mul_s", [ls[0]], (1.0,))], (0, True, 0))

    _grads_match(kept, [np.array([[0.5, -1.0], [3.0, 0.25], [-2.0, 7.0]])], np.array([[1.0, 3.0]]))


def test_max_dim_saves_its_indices():
    """Writing the saved indices breaks backward; writing the values does not
    (measured on 2.13.0: `v, i = x.max(1); i.zero_(); v.sum().backward()` raises)."""
    assert OPS["max_dim_k"].saves == ("result1",)
    eng = Engine()
    x = eng.leaf(np.array([[1.0, 3.0, 3.0]]), F64, requires_grad=True)
    y = eng.call("add_s", [x], (0.0,))
    v = eng.call("max_dim_k", [y], (1, False, 0))
    assert v.has_grad_fn
    saved = v._fn.saved["result1"]
    saved.counter.value += 1  # what a write to the (unreturned) indices does
    raises(ErrorKind.SAVED_TENSOR_MODIFIED, eng.call, "backward", [v], (False,))
    v2 = eng.call("max_dim_k", [y], (1, False, 0))
    eng.call("mul_s_", [v2], (2.0,))  # the values written in place: backward still runs
    eng.call("backward", [v2], (True,))
    np.testing.assert_array_equal(x.grad, [[0, 2, 0]])
    eng.call("backward", [v2], (False,))
    raises(ErrorKind.BACKWARD_TWICE, eng.call, "backward", [v2], (False,))
    i = eng.call("max_dim_k", [y], (1, False, 1))
    assert not i.requires_grad and i._fn is None  # indices: int64, no grad_fn


# ---- var_mean(dim, correction, keepdim)[k] ---------------------------------------
def test_var_mean_by_hand():
    eng = Engine()
    x = eng.leaf(np.array([[1.0, 2.0, 4.0], [0.0, 0.0, 3.0]]), F64)
    var = eng.call("var_mean_k", [x], (1, 1, False, 0))
    np.testing.assert_allclose(var.values(), [7 / 3, 3.0])  # (16 + 1 + 25) / 9 / 2
    biased = eng.call("var_mean_k", [x], (-1, 0, True, 0))
    assert biased.shape == (2, 1)
    np.testing.assert_allclose(biased.values(), [[14 / 9], [2.0]])
    mean = eng.call("var_mean_k", [x], (0, 1, False, 1))
    np.testing.assert_allclose(mean.values(), [0.5, 1.0, 3.5])
    c = eng.leaf(np.array([1j, 2.0]), "complex128")
    cv = eng.call("var_mean_k", [c], (0, 1, False, 0))  # torch 2.13.0: tensor(2.5000)
    assert cv.dtype == F64 and np.isclose(cv.values(), 2.5)
    cm = eng.call("var_mean_k", [c], (0, 1, False, 1))  # tensor(1.+0.5000j)
    assert cm.dtype == "complex128" and np.isclose(cm.values(), 1 + 0.5j)
    s = eng.call("var_mean_k", [eng.leaf(np.array(2.0), F64)], (-1, 0, True, 0))
    assert s.shape == () and s.values() == 0.0  # a 0-d self, biased: var 0


@pytest.mark.parametrize("args", [(1, 1, False), (-2, 0, True), (0, 1, False)])
@pytest.mark.parametrize("k", [0, 1])
def test_var_mean_gradients(args, k):
    arrays = [np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])]

    def program(e, ls):
        return e.call("var_mean_k", [e.call("mul_s", [ls[0]], (1.0,))], (*args, k))

    out = run(program, arrays)[0]
    w = np.arange(1.0, 1.0 + out.values().size).reshape(out.shape)
    _grads_match(program, arrays, w)


def test_var_mean_saves_self_alone():
    """Measured on 2.13.0: VarMeanBackward0 saves _saved_self (and dim,
    correction, keepdim): writing its var in place breaks no backward."""
    assert OPS["var_mean_k"].saves == ("self",)
    eng = Engine()
    x = eng.leaf(np.array([[1.0, 2.0, 4.0]]), F64, requires_grad=True)
    y = eng.call("add_s", [x], (0.0,))
    var = eng.call("var_mean_k", [y], (1, 1, False, 0))
    eng.call("mul_s_", [var], (2.0,))
    eng.call("backward", [var], (False,))
    np.testing.assert_allclose(x.grad, 2 * np.array([[-4 / 3, -1 / 3, 5 / 3]]))


# ---- std_mean(dim, correction, keepdim)[k] ---------------------------------------
def test_std_mean_by_hand():
    eng = Engine()
    x = eng.leaf(np.array([[1.0, 2.0, 4.0], [0.0, 0.0, 3.0]]), F64)
    std = eng.call("std_mean_k", [x], (1, 1, False, 0))
    np.testing.assert_allclose(std.values(), np.sqrt([7 / 3, 3.0]))
    kept = eng.call("std_mean_k", [x], (-1, 0, True, 0))
    assert kept.shape == (2, 1)
    np.testing.assert_allclose(kept.values(), np.sqrt([[14 / 9], [2.0]]))
    mean = eng.call("std_mean_k", [x], (0, 1, False, 1))
    np.testing.assert_allclose(mean.values(), [0.5, 1.0, 3.5])
    c = eng.call("std_mean_k", [eng.leaf(np.array([1j, 2.0]), "complex128")], (0, 1, False, 0))
    assert c.dtype == F64 and np.isclose(c.values(), np.sqrt(2.5))


@pytest.mark.parametrize("args", [(1, 1, False), (-2, 0, True), (0, 1, False)])
@pytest.mark.parametrize("k", [0, 1])
def test_std_mean_gradients(args, k):
    arrays = [np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])]

    def program(e, ls):
        return e.call("std_mean_k", [e.call("mul_s", [ls[0]], (1.0,))], (*args, k))

    out = run(program, arrays)[0]
    w = np.arange(1.0, 1.0 + out.values().size).reshape(out.shape)
    _grads_match(program, arrays, w)


def test_std_gradient_is_zero_where_std_is_zero():
    """std_backward masks grad / (2 std) to 0 where std is 0 (2.13.0: tensor([0., 0.]))."""

    def program(e, ls):
        return e.call("std_mean_k", [e.call("mul_s", [ls[0]], (1.0,))], (0, 1, False, 0))

    _, (g,) = run(program, [np.array([1.0, 1.0])], grad_out=np.array(1.0))
    np.testing.assert_array_equal(g, [0.0, 0.0])


def test_std_mean_saves_its_std():
    """Measured on 2.13.0: `s, m = torch.std_mean(y, 1); s.mul_(2);
    m.sum().backward()` raises (StdMeanBackward0 unpacks result0 for either
    output's gradient); writing m instead breaks nothing."""
    assert OPS["std_mean_k"].saves == ("self", "result0")
    eng = Engine()
    x = eng.leaf(np.array([[1.0, 2.0, 4.0]]), F64, requires_grad=True)
    y = eng.call("add_s", [x], (0.0,))
    std = eng.call("std_mean_k", [y], (1, 1, False, 0))
    eng.call("mul_s_", [std], (2.0,))  # the saved std itself, written
    raises(ErrorKind.SAVED_TENSOR_MODIFIED, eng.call, "backward", [std], (False,))
    mean = eng.call("std_mean_k", [y], (1, 1, False, 1))
    eng.call("mul_s_", [mean], (2.0,))
    eng.call("backward", [mean], (False,))
    np.testing.assert_allclose(x.grad, [[2 / 3, 2 / 3, 2 / 3]])
    mean2 = eng.call("std_mean_k", [y], (1, 1, False, 1))
    mean2._fn.saved["result0"].counter.value += 1  # the (unreturned) std, written
    raises(ErrorKind.SAVED_TENSOR_MODIFIED, eng.call, "backward", [mean2], (False,))


# ---- aminmax(dim=, keepdim=)[k] ------------------------------------------------------
def test_aminmax_by_hand():
    eng = Engine()
    x = eng.leaf(np.array([[1.0, 3.0, 3.0], [np.nan, 2.0, 5.0]]), F64)
    lo = eng.call("aminmax_k", [x], (1, False, 0))
    hi = eng.call("aminmax_k", [x], (-1, True, 1))
    np.testing.assert_array_equal(lo.values(), [1.0, np.nan])  # nan propagates
    assert hi.shape == (2, 1)
    np.testing.assert_array_equal(hi.values(), [[3.0], [np.nan]])
    every = eng.call("aminmax_k", [eng.leaf(np.ones((2, 3)), F64)], (None, True, 0))
    assert every.shape == (1, 1)
    s = eng.call("aminmax_k", [eng.leaf(np.array(2.0), F64)], (0, False, 1))
    assert s.shape == () and s.values() == 2.0
    b = eng.call("aminmax_k", [eng.leaf(np.array([True, False]), "bool")], (0, False, 1))
    assert b.dtype == "bool" and b.values()


def test_aminmax_gradients():
    """A tie shares the gradient (scale_grad_by_count), a nan row is all nan;
    measured on 2.13.0 for [[1, 3, 3], [nan, 2, 5]] and 100, 1000 on max:
    [[0, 50, 50], [nan, nan, nan]]."""

    def program(e, ls):
        return e.call("aminmax_k", [e.call("mul_s", [ls[0]], (1.0,))], (1, False, 1))

    x = np.array([[1.0, 3.0, 3.0], [np.nan, 2.0, 5.0]])
    _, (g,) = run(program, [x], grad_out=np.array([100.0, 1000.0]))
    np.testing.assert_array_equal(g, [[0, 50, 50], [np.nan] * 3])
    w = np.array([1.0, -2.0])
    _grads_match(program, [np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])], w)

    def every(e, ls):
        return e.call("aminmax_k", [e.call("mul_s", [ls[0]], (1.0,))], (None, False, 0))

    _grads_match(every, [np.array([[0.5, -1.0], [3.0, 0.25]])], np.array(3.0))


def test_aminmax_saves_both_outputs():
    """Measured on 2.13.0: `mn, mx = torch.aminmax(y, dim=1); mx.mul_(2);
    mn.sum().backward()` raises (output 1 of AminmaxBackward0)."""
    assert OPS["aminmax_k"].saves == ("self", "result0", "result1")
    eng = Engine()
    x = eng.leaf(np.array([[1.0, 3.0, 3.0]]), F64, requires_grad=True)
    y = eng.call("add_s", [x], (0.0,))
    lo = eng.call("aminmax_k", [y], (1, False, 0))
    lo._fn.saved["result1"].counter.value += 1  # what a write to the max does
    raises(ErrorKind.SAVED_TENSOR_MODIFIED, eng.call, "backward", [lo], (False,))
    hi = eng.call("aminmax_k", [y], (1, False, 1))
    eng.call("mul_s_", [hi], (2.0,))  # the saved max itself
    raises(ErrorKind.SAVED_TENSOR_MODIFIED, eng.call, "backward", [hi], (False,))


# ---- unsafe_split(size, dim)[k] ------------------------------------------------------
def _unsafe_piece(op: str, args: tuple) -> tuple:
    eng = Engine()
    x = eng.leaf(np.arange(1.0, 7.0), F64, requires_grad=True)
    y = eng.call("mul_s", [x], (2.0,))
    return eng, x, y, eng.call(op, [y], args)


def test_unsafe_split_outputs_are_written_and_backward_runs():
    """Measured on 2.13.0: `a = y.unsafe_split(2)[1]` shares y's memory (offset 2)
    but _base is None and its version counter is its own; a.mul_(10) bumps a
    alone, writes y's memory, and backward runs (UnsafeSplitBackward0 saves
    _saved_dim, _saved_split_size, _saved_self_sym_sizes: no tensor)."""
    eng, x, y, a = _unsafe_piece("unsafe_split_k", (2, 0, 1))
    assert a.storage is y.storage and (a.offset, a.shape, a.strides) == (2, (2,), (1,))
    assert a.base is None and a.counter is not y.counter and not a.multi_output
    eng.call("mul_s_", [a], (10.0,))
    assert (a.version, y.version) == (1, 0)
    np.testing.assert_array_equal(y.values(), [2, 4, 60, 80, 10, 12])
    eng.call("backward_g", [a, eng.leaf(np.array([1.0, 2.0]), F64)], (False,))
    np.testing.assert_array_equal(x.grad, [0, 0, 20, 40, 0, 0])
    assert eng.undefined is None
    _, _, _, last = _unsafe_piece("unsafe_split_k", (4, -1, 1))  # the shorter last piece
    assert last.shape == (2,) and last.offset == 4


def test_unsafe_split_input_and_output_both_written_is_undefined():
    """ "If both the input and one or more of the outputs are modified inplace,
    gradients computed by autograd will be silently incorrect" (its docs)."""
    eng, x, y, a = _unsafe_piece("unsafe_split_k", (3, 0, 0))
    eng.call("add_s_", [y], (1.0,))  # the input alone: defined
    assert eng.undefined is None
    eng.call("mul_s_", [a], (2.0,))
    assert eng.undefined is not None


def test_unsafe_split_gradient_by_finite_differences():
    def program(e, ls):
        return e.call("unsafe_split_k", [e.call("mul_s", [ls[0]], (1.0,))], (2, 1, 1))

    _grads_match(program, [np.arange(12.0).reshape(3, 4)], np.arange(6.0).reshape(3, 2))


# ---- unsafe_chunk(chunks, dim)[k] ----------------------------------------------------
def test_unsafe_chunk_outputs_are_written_and_backward_runs():
    """Measured on 2.13.0: unsafe_chunk's pieces are chunk's, not views, each
    with a counter of its own; written in place, backward runs."""
    eng, x, y, a = _unsafe_piece("unsafe_chunk_k", (4, 0, 2))  # pieces of 2: 2, 2, 2
    assert (a.offset, a.shape, a.base) == (4, (2,), None)
    eng.call("zero_", [a], ())
    assert (a.version, y.version) == (1, 0)
    np.testing.assert_array_equal(y.values(), [2, 4, 6, 8, 0, 0])
    eng.call("backward_g", [a, eng.leaf(np.array([1.0, 1.0]), F64)], (False,))
    np.testing.assert_array_equal(x.grad, [0, 0, 0, 0, 0, 0])  # zero_: no gradient through

    def program(e, ls):
        return e.call("unsafe_chunk_k", [e.call("mul_s", [ls[0]], (1.0,))], (2, -2, 0))

    _grads_match(program, [np.arange(12.0).reshape(3, 4)], np.arange(8.0).reshape(2, 4))


# ---- unsafe_split_with_sizes(sizes, dim)[k] ------------------------------------------
def test_unsafe_split_with_sizes_outputs_are_written_and_backward_runs():
    """Measured on 2.13.0: UnsafeSplitWithSizesBackward0, pieces of
    split_with_sizes, not views, written in place, backward runs."""
    eng, x, y, a = _unsafe_piece("unsafe_split_with_sizes_k", ([1, 5], 0, 1))
    assert (a.offset, a.shape, a.base) == (1, (5,), None)
    eng.call("mul_s_", [a], (3.0,))
    eng.call("backward_g", [a, eng.leaf(np.ones(5), F64)], (False,))
    np.testing.assert_array_equal(x.grad, [0, 6, 6, 6, 6, 6])

    def program(e, ls):
        return e.call(
            "unsafe_split_with_sizes_k", [e.call("mul_s", [ls[0]], (1.0,))], ([3, 1], 1, 0)
        )

    _grads_match(program, [np.arange(8.0).reshape(2, 4)], np.arange(6.0).reshape(2, 3))


def test_unsafe_split_of_a_conj_view_is_a_piece_of_a_resolved_copy():
    """Measured on 2.0.1, 2.4.1, 2.13.0, 2.14.1: unsafe_split of x.conj() (or of
    a neg view) goes through the conj fallback, which resolves self into new
    memory laid out as self first: the pieces share nothing with x, no bit set."""
    eng = Engine()
    x = eng.leaf(np.array([[1 + 1j, 2j], [3.0, 4 - 1j], [5.0, 6.0]]), "complex64")
    c = eng.call("transpose", [eng.call("conj", [x], ())], (0, 1))  # (2, 3), strides (1, 2)
    piece = eng.call("unsafe_split_k", [c], (2, 1, 1))
    assert piece.storage is not x.storage and not piece.conj
    assert (piece.shape, piece.strides, piece.offset) == ((2, 1), (1, 2), 4)
    np.testing.assert_array_equal(piece.values(), [[5.0], [6.0]])
    eng.call("mul_s_", [piece], (2.0,))
    np.testing.assert_array_equal(x.values()[2], [5.0, 6.0])  # x unchanged
