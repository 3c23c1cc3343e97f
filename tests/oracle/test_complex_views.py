"""view_as_real, view_as_complex, real and imag in the model: one memory read
as two dtypes (complex128 is two float64), writes both ways, gradients by
finite differences, torch's refusals."""

from __future__ import annotations

import numpy as np

from oracle import Engine, ErrorKind

from .helpers import numeric_grads, raises, run

C128, F64 = "complex128", "float64"
Z = np.array([[1 + 2j, 3 - 4j, 5 + 6j], [7 + 8j, 9 - 1j, 2 + 2j]])


def test_view_as_real_doubles_the_strides_and_shares_memory():
    eng = Engine()
    z = eng.leaf(Z, C128)
    r = eng.call("view_as_real", [z])
    assert (r.shape, r.strides, r.offset, r.dtype) == ((2, 3, 2), (6, 2, 1), 0, F64)
    assert r.storage is z.storage and r.counter is z.counter and r.base is z
    np.testing.assert_array_equal(r.values(), np.stack([Z.real, Z.imag], -1))
    t = eng.call("view_as_real", [eng.call("t", [z])])
    assert t.strides == (2, 6, 1)
    part = eng.call("view_as_real", [eng.call("getitem", [z], ((slice(None), slice(1, None)),))])
    assert part.offset == 2


def test_real_and_imag_read_and_write_the_parts():
    eng = Engine()
    z = eng.leaf(Z, C128)
    re, im = eng.call("real", [z]), eng.call("imag", [z])
    assert (re.strides, re.offset, im.offset) == ((6, 2), 0, 1)
    np.testing.assert_array_equal(re.values(), Z.real)
    np.testing.assert_array_equal(im.values(), Z.imag)
    eng.call("mul_s_", [re], (2.0,))
    eng.call("zero_", [im])
    np.testing.assert_array_equal(z.values(), 2 * Z.real)
    assert z.version == 2
    # the conjugate's imaginary part is the negated one, a view with the negative bit
    c = eng.call("conj", [eng.leaf(Z, C128)])
    im = eng.call("imag", [c])
    assert im.neg and not im.conj
    np.testing.assert_array_equal(im.values(), -Z.imag)


def test_view_as_complex_checks_its_layout():
    eng = Engine()
    a = eng.leaf(np.arange(12.0).reshape(3, 2, 2), "float32")
    c = eng.call("view_as_complex", [a])
    assert (c.shape, c.strides, c.offset, c.dtype) == ((3, 2), (2, 1), 0, "complex64")
    want = (np.arange(0, 12, 2) + 1j * np.arange(1, 12, 2)).reshape(3, 2)
    np.testing.assert_array_equal(c.values(), want)
    eng.call("mul_s_", [c], (1j,))  # (x + iy) * i = -y + ix: written as float pairs
    np.testing.assert_array_equal(a.values()[0, 0], [-1.0, 0.0])
    bad = ErrorKind.COMPLEX_LAYOUT
    raises(bad, eng.call, "view_as_complex", [eng.call("transpose", [a], (1, 2))])
    raises(bad, eng.call, "view_as_complex", [eng.call("narrow", [a], (2, 0, 1))])
    odd = eng.call("as_strided", [eng.leaf(np.arange(8.0), F64)], ((3, 2), (2, 1), 1))
    raises(bad, eng.call, "view_as_complex", [odd])
    ones = eng.call("as_strided", [eng.leaf(np.arange(8.0), F64)], ((1, 2), (3, 1), 0))
    assert eng.call("view_as_complex", [ones]).strides == (1,)  # a dim of size 1: unchecked


def test_what_torch_refuses_and_what_is_the_tensor_itself():
    eng = Engine()
    x = eng.leaf(np.array([1.0, 2.0]), "float32")
    assert eng.call("real", [x]) is x
    raises(ErrorKind.NOT_COMPLEX, eng.call, "imag", [x])
    c = eng.call("conj", [eng.leaf(Z, C128)])
    raises(ErrorKind.UNRESOLVED_CONJ, eng.call, "view_as_real", [c])


def test_gradients_through_the_reinterpreting_views():
    w = np.array([[1.0, -2.0], [0.5, 3.0]])
    a = np.array([1 + 2j, -0.5 + 1j])
    for op in ("view_as_real", "real", "imag"):

        def chain(e, ts, op=op):
            return e.call(op, [e.call("mul_s", [ts[0]], (2.0 - 1j,))])

        g = w if op == "view_as_real" else w[:, 0]
        _, got = run(chain, [a], C128, grad_out=g)
        (want,) = numeric_grads(chain, [a], C128, g)
        np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=1e-8, err_msg=op)

    def pairs(e, ts):
        return e.call("view_as_complex", [e.call("mul_s", [ts[0]], (3.0,))])

    g = np.array([1 - 1j, 2j])
    _, got = run(pairs, [w], F64, grad_out=g)
    (want,) = numeric_grads(pairs, [w], F64, g)
    np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=1e-8)


def test_a_write_through_a_part_reaches_the_complex_gradient():
    """CopySlices and a regenerated grad_fn across dtypes (measured on torch 2.13:
    y.real.mul_(2), then y.abs().sum().backward())."""

    def written(e, ts):
        y = e.call("mul_s", [ts[0]], (1.0,))
        e.call("mul_s_", [e.call("real", [y])], (2.0,))
        return y

    def regenerated(e, ts):
        y = e.call("mul_s", [ts[0]], (1.0,))
        r = e.call("view_as_real", [y])
        e.call("mul_s_", [y], (3.0,))
        return r

    a = np.array([1 + 2j, 3 - 4j])
    for chain, g in ((written, np.array([1 - 1j, 0.5])), (regenerated, np.ones((2, 2)))):
        _, got = run(chain, [a], C128, grad_out=g)
        (want,) = numeric_grads(chain, [a], C128, g)
        np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=1e-8)


def test_a_copy_between_parts_of_one_memory_checks_bytes():
    eng = Engine()
    z = eng.leaf(np.array([1 + 2j]), C128)
    raises(ErrorKind.PARTIAL_OVERLAP, eng.call, "copy_", [z, eng.call("imag", [z])])
    eng.call("copy_", [eng.call("real", [z]), eng.call("imag", [z])])  # strided: unchecked
