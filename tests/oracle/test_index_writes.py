"""Writes at indexed positions: values worked by hand, gradients against finite
differences, and the autograd rules they share with every in-place op."""

from __future__ import annotations

import numpy as np
import pytest

from oracle import Engine, ErrorKind

from .helpers import numeric_grads, raises, run

X = np.arange(6.0).reshape(3, 2)  # [[0 1] [2 3] [4 5]]
V = np.array([[10.0, 20.0], [30.0, 40.0]])

# op, params, source, x afterwards (worked by hand)
BY_HAND = [
    ("index_put_", ([2, 0],), V, [[30, 40], [2, 3], [10, 20]]),
    ("setitem_t", ([-1],), np.array([7.0, 8.0]), [[0, 1], [2, 3], [7, 8]]),
    ("setitem_t", ([0, 1],), np.array(9.0), [[9, 9], [9, 9], [4, 5]]),  # broadcast
    ("index_add_", (0, [1, 1]), V, [[0, 1], [42, 63], [4, 5]]),  # repeated rows add up
    ("index_add_", (1, [0]), np.array([[1.0], [1.0], [1.0]]), [[1, 1], [3, 3], [5, 5]]),
    ("index_copy_", (0, [2, 0]), V, [[30, 40], [2, 3], [10, 20]]),
    ("scatter_", (0, [[2, 0], [0, 1], [1, 2]]), X + 10, [[12, 11], [14, 13], [10, 15]]),
    (
        "masked_fill_",
        ([[True, False], [False, False], [True, True]], -1.0),
        None,
        [[-1, 1], [2, 3], [-1, -1]],
    ),
]


@pytest.mark.parametrize(("op", "params", "src", "want"), BY_HAND)
def test_indexed_write_values_worked_by_hand(op, params, src, want):
    eng = Engine()
    x = eng.leaf(X, "float64")
    ts = [x] if src is None else [x, eng.leaf(src, "float64")]
    out = eng.call(op, ts, params)
    assert out is (None if op == "setitem_t" else x)
    np.testing.assert_array_equal(x.values(), np.asarray(want, dtype=float))
    assert x.version == 1


@pytest.mark.parametrize(("op", "params", "src", "want"), BY_HAND)
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_indexed_write_gradients_match_finite_differences(op, params, src, want, dtype):
    def program(e, ts):
        base = e.call("mul", [ts[0], ts[0]])  # x's gradient depends on which element is which
        e.call(op, [base, *ts[1:]], params)
        return e.call("mul", [base, base])

    rng = np.random.default_rng(0)
    xs = [rng.uniform(-1, 1, X.shape)] + ([] if src is None else [rng.uniform(-1, 1, src.shape)])
    if dtype == "complex128":
        xs = [x + 1j * rng.uniform(-1, 1, x.shape) for x in xs]
    out, _ = run(program, xs, dtype)
    w = rng.normal(size=out.shape) + (1j * rng.normal(size=out.shape) if dtype != "float64" else 0)
    _, got = run(program, xs, dtype, w)
    for g, n in zip(got, numeric_grads(program, xs, dtype, w), strict=True):
        np.testing.assert_allclose(g, n, rtol=1e-5, atol=1e-7)


def test_an_indexed_write_into_a_view_rewrites_its_base_history():
    eng = Engine()
    root = eng.leaf(X, "float64", True)
    base = eng.call("mul_s", [root], (2.0,))
    column = eng.call("select", [base], (1, 0))  # [0, 2, 4] * 2
    src = eng.leaf(np.array([5.0]), "float64", True)
    eng.call("index_copy_", [column, src], (0, [1]))
    np.testing.assert_array_equal(base.values(), [[0, 2], [5, 6], [8, 10]])
    eng.call("backward", [eng.call("sum", [base])], (False,))
    np.testing.assert_array_equal(root.grad, [[2, 2], [0, 2], [2, 2]])
    np.testing.assert_array_equal(src.grad, [1])


def test_indexed_writes_into_a_grad_leaf_raise_and_on_expanded_memory_raise():
    eng = Engine()
    leaf = eng.leaf(X, "float64", True)
    raises(
        ErrorKind.INPLACE_ON_LEAF, eng.call, "index_put_", [leaf, eng.leaf(V, "float64")], ([0, 1],)
    )
    wide = eng.call("expand", [eng.leaf(np.ones(2), "float64")], ((3, 2),))
    raises(
        ErrorKind.OVERLAPPING_WRITE,
        eng.call,
        "index_copy_",
        [wide, eng.leaf(V, "float64")],
        (0, [0, 1]),
    )
    eng.call("masked_fill_", [wide], ([[True, True]] * 3, 0.0))  # masked_fill_ only warns


def test_a_second_backward_through_an_indexed_write_raises():
    # each saves its index (or mask) tensor, which the first backward frees
    eng = Engine()
    root = eng.leaf(X, "float64", True)
    base = eng.call("mul_s", [root], (1.0,))
    eng.call("masked_fill_", [base], ([[True, False]] * 3, 0.0))
    one = eng.leaf(np.ones(X.shape), "float64")
    eng.call("backward_g", [base, one], (False,))
    raises(ErrorKind.BACKWARD_TWICE, eng.call, "backward_g", [base, one], (False,))


# which indexed writes save their source (measured on torch 2.13.0: a write to
# the source after the op makes backward raise only for these two, and only
# when the source requires grad)
SAVES_SOURCE = {"index_add_": True, "index_copy_": True, "index_put_": False, "scatter_": False}


@pytest.mark.parametrize("op", sorted(SAVES_SOURCE))
@pytest.mark.parametrize("self_requires_grad", [False, True])
def test_a_write_to_the_source_breaks_backward_where_the_source_is_saved(op, self_requires_grad):
    params = {"index_add_": (0, [2, 0]), "index_copy_": (0, [2, 0]), "index_put_": ([2, 0],)}
    params["scatter_"] = (0, [[2, 0], [0, 1], [1, 2]])
    eng = Engine()
    x = eng.leaf(X, "float64", self_requires_grad)
    if self_requires_grad:
        x = eng.call("mul_s", [x], (1.0,))
    src = eng.call("mul_s", [eng.leaf(V if op != "scatter_" else X, "float64", True)], (1.0,))
    eng.call(op, [x, src], params[op])
    with eng.no_grad():
        eng.call("mul_s_", [src], (2.0,))
    one = eng.leaf(np.ones(X.shape), "float64")
    if SAVES_SOURCE[op]:
        raises(ErrorKind.SAVED_TENSOR_MODIFIED, eng.call, "backward_g", [x, one], (False,))
    else:
        eng.call("backward_g", [x, one], (False,))


def test_unflatten_infers_minus_one_from_its_dim_alone():
    eng = Engine()
    empty = eng.leaf(np.zeros((3, 0)), "float64")
    assert eng.call("unflatten", [empty], (-2, (-1, 3))).shape == (1, 3, 0)


@pytest.mark.parametrize(
    ("op", "ts", "params"),
    [
        ("setitem_t", 1, ([-1, -2],)),  # a thorough run at seed 2: torch wrote row -1 first
        ("index_put_", 1, ([0, 1],)),
        ("masked_fill_", 0, ([[True, True], [True, False]], -1.0)),
    ],
)
def test_an_unchecked_indexed_write_into_unfolded_memory_is_undefined(op, ts, params):
    """t.unfold(0, 2, 1) of [a, b, c] is [[a, b], [b, c]]: not dense, so torch's
    overlap check cannot tell, and which write lands on b last is not promised."""
    eng = Engine()
    rows = eng.call("unfold", [eng.leaf(np.ones(3), "float64")], (0, 2, 1))
    src = [eng.leaf(np.array([-0.125, -0.375]), "float64")][:ts]
    eng.call(op, [rows, *src], params)
    assert eng.undefined and "share memory" in eng.undefined
    dense = eng.call("unfold", [eng.leaf(np.ones(4), "float64")], (0, 2, 2))  # no overlap
    eng.call(op, [dense, *src], params)
    assert eng.undefined is None
