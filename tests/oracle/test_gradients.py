"""Every gradient formula against central finite differences (float64, complex128)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from .helpers import numeric_grads, run

SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
SHAPES = array_shapes(min_dims=0, max_dims=2, max_side=3)


def _real(shape, lo=-2.0, hi=2.0):
    return arrays(np.float64, shape, elements=st.floats(lo, hi, allow_subnormal=False))


def _complex(shape, lo=-2.0, hi=2.0):
    return st.tuples(_real(shape, lo, hi), _real(shape, lo, hi)).map(
        lambda p: np.asarray(p[0] + 1j * p[1])
    )


def _check(program, arrays_, dtype, seed=0, atol=1e-5):
    out, got = run(program, arrays_, dtype, None)
    w = np.random.default_rng(seed).normal(size=out.shape)
    if dtype == "complex128" and out.dtype == "complex128":
        w = w + 1j * np.random.default_rng(seed + 1).normal(size=out.shape)
    _, got = run(program, arrays_, dtype, w)
    want = numeric_grads(program, arrays_, dtype, w)
    for g, n in zip(got, want, strict=True):
        np.testing.assert_allclose(g, n, rtol=1e-4, atol=atol)


def _away_from(x, points, gap=1e-2):
    return all(np.all(np.abs(np.asarray(x) - p) > gap) for p in points)


UNARY = {  # op: (params, domain low, high, kinks to avoid, complex too)
    "neg": ((), -2, 2, (), True),
    "exp": ((), -2, 2, (), True),
    "log": ((), 0.2, 2, (), True),
    "tanh": ((), -2, 2, (), True),
    "sigmoid": ((), -2, 2, (), True),
    "relu": ((), -2, 2, (0,), False),
    "sin": ((), -2, 2, (), True),
    "cos": ((), -2, 2, (), True),
    "sqrt": ((), 0.2, 2, (), True),
    "abs": ((), -2, 2, (0,), True),
    "pow_s": ((2.5,), 0.2, 2, (), True),
    "sum": ((), -2, 2, (), True),
    "mean": ((), -2, 2, (), True),
    "clone": ((), -2, 2, (), True),
}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@SETTINGS
@given(data=st.data())
def test_unary(op, dtype, data):
    params, lo, hi, kinks, cplx = UNARY[op]
    if dtype == "complex128" and not cplx:
        return
    shape = data.draw(SHAPES)
    make = _complex if dtype == "complex128" else _real
    x = data.draw(make(shape, lo, hi))
    assume(_away_from(np.abs(x) if op == "abs" else x, kinks))
    _check(lambda e, ts: e.call(op, ts, params), [x], dtype)


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, -2.0, 0.5, -1])
@SETTINGS
@given(x=_real((2, 2), 0.3, 2))
def test_pow_exponents(exponent, x):
    _check(lambda e, ts: e.call("pow_s", ts, (exponent,)), [x], "float64")


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@SETTINGS
@given(data=st.data())
def test_binary_broadcasting(op, dtype, data):
    a_shape = data.draw(SHAPES)
    b_shape = data.draw(st.sampled_from([a_shape, a_shape[1:], (1,) + a_shape, ()]))
    make = _complex if dtype == "complex128" else _real
    a = data.draw(make(a_shape))
    b = data.draw(make(b_shape, 0.5, 2) if op == "div" else make(b_shape))
    _check(lambda e, ts: e.call(op, ts), [a, b], dtype)


@pytest.mark.parametrize("op", ["add_s", "sub_s", "mul_s", "div_s"])
@pytest.mark.parametrize("scalar", [1.5, -0.5 + 2j])
@SETTINGS
@given(x=_complex((2, 3)))
def test_scalar_ops(op, scalar, x):
    _check(lambda e, ts: e.call(op, ts, (scalar,)), [x], "complex128")


@pytest.mark.parametrize(
    "shapes",
    [
        ((2, 3), (3, 4)),
        ((3,), (3,)),
        ((2, 3), (3,)),
        ((3,), (3, 2)),
        ((2, 2, 3), (3, 2)),
        ((2, 3), (2, 3, 1)),
        ((1, 2, 3), (2, 3, 2)),
        ((3,), (2, 3, 2)),
    ],
)
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_matmul_and_mm(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    xs = [
        rng.normal(size=s) + (1j * rng.normal(size=s) if dtype == "complex128" else 0)
        for s in shapes
    ]
    _check(lambda e, ts: e.call("matmul", ts), xs, dtype, seed)
    if all(len(s) == 2 for s in shapes):
        _check(lambda e, ts: e.call("mm", ts), xs, dtype, seed)


VIEWS = {
    "getitem": ((2, 3, 4), ((slice(None, None, 2), -1, slice(1, 3)),)),
    "select": ((2, 3), (1, -1)),
    "view": ((2, 3), ((3, -1),)),
    "reshape": ((2, 3), ((6,),)),
    "transpose": ((2, 3, 1), (0, 2)),
    "t": ((2, 3), ()),
    "permute": ((2, 3, 2), ((2, 0, 1),)),
    "expand": ((3, 1), ((2, 3, 4),)),
    "unsqueeze": ((2, 3), (-1,)),
    "squeeze": ((2, 1), (1,)),
    "sum_dim": ((2, 3), (-1,)),
}


@pytest.mark.parametrize("op", sorted(VIEWS))
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_views_and_reductions(op, seed):
    shape, params = VIEWS[op]
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape) + 1j * rng.normal(size=shape)
    _check(lambda e, ts: e.call(op, ts, params), [x], "complex128", seed)


def _on_clone(op, *params):
    def program(e, ts):
        base = e.call("clone", [ts[0]])
        e.call(op, [base] + ts[1:], params)
        return base

    return program


INPLACE = {  # program, inputs (shapes), domain
    "add_": (_on_clone("add_"), [(2, 3), (3,)]),
    "sub_": (_on_clone("sub_"), [(2, 3), (1, 3)]),
    "mul_": (_on_clone("mul_"), [(2, 3), (2, 3)]),
    "div_": (_on_clone("div_"), [(2, 3), ()]),
    "exp_": (_on_clone("exp_"), [(2, 3)]),
    "tanh_": (_on_clone("tanh_"), [(2, 3)]),
    "sigmoid_": (_on_clone("sigmoid_"), [(2, 3)]),
    "sin_": (_on_clone("sin_"), [(2, 3)]),
    "neg_": (_on_clone("neg_"), [(2, 3)]),
    "mul_s_": (_on_clone("mul_s_", -1.5), [(2, 3)]),
    "div_s_": (_on_clone("div_s_", 0.5), [(2, 3)]),
    "zero_": (_on_clone("zero_"), [(2, 3)]),
    "fill_": (_on_clone("fill_", 2.0), [(2, 3)]),
    "copy_": (_on_clone("copy_"), [(2, 3), (3,)]),
    "setitem": (_on_clone("setitem", (slice(None), 1)), [(2, 3), (2,)]),
    "setitem_s": (_on_clone("setitem_s", (0,), 4.0), [(2, 3)]),
}


def _copy_slices(e, ts):
    """An in-place op on a view rewrites the base's history (CopySlices)."""
    base = e.call("clone", [ts[0]])
    view = e.call("getitem", [base], ((slice(None), slice(1, None)),))
    e.call("mul_", [view, ts[1]])
    return base


def _regenerated_view(e, ts):
    """A view taken before its base was modified in place (AsStridedBackward0)."""
    base = e.call("clone", [ts[0]])
    view = e.call("transpose", [base], (0, 1))
    e.call("mul_", [base, ts[1]])
    return e.call("mul", [view, view])


INPLACE["copy_slices"] = (_copy_slices, [(2, 3), (2, 2)])
INPLACE["regenerated_view"] = (_regenerated_view, [(2, 3), (2, 3)])


@pytest.mark.parametrize("name", sorted(INPLACE))
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_inplace_and_views(name, dtype, seed):
    program, shapes = INPLACE[name]
    rng = np.random.default_rng(seed)
    xs = [rng.uniform(0.5, 1.5, size=s) * rng.choice([-1, 1], size=s) for s in shapes]
    if dtype == "complex128":
        xs = [x + 1j * rng.uniform(-1, 1, size=x.shape) for x in xs]
    _check(program, xs, dtype, seed)


@settings(max_examples=8, deadline=None)
@given(x=_real((2, 3)), lo=st.floats(-1, 0), hi=st.floats(0, 1))
def test_clamp_(x, lo, hi):
    assume(_away_from(x, (lo, hi)))
    _check(_on_clone("clamp_", lo, hi), [x], "float64")


def test_real_leaf_through_copy_from_complex_takes_the_real_part():
    def program(e, ts):
        out = e.call("zeros_like", [e.call("mul_s", [ts[0]], (1j,))])
        e.call("copy_", [out, ts[0]])
        return e.call("mul_s", [out], (1 + 2j,))

    _check(program, [np.array([0.5, -1.0])], "float64")
