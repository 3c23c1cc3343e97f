"""conj(), _neg_view(), H/mH/adjoint of complex tensors, resolve_conj() and
resolve_neg() in the model: bits read and written through, gradients through
the bit (finite differences), resolution into new memory."""

from __future__ import annotations

import numpy as np

from oracle import Engine, ErrorKind

from .helpers import numeric_grads, raises, run

C128 = "complex128"
Z = np.array([1 + 2j, 3 - 4j, -0.5 + 0.25j])


def _nonleaf(eng, values, dtype=C128):
    return eng.call("mul_s", [eng.leaf(values, dtype, True)], (1.0,))


def test_conj_is_a_view_with_the_bit():
    eng = Engine()
    y = _nonleaf(eng, Z)
    c = eng.call("conj", [y])
    assert c.conj and c.storage is y.storage and c.counter is y.counter and c.base is y
    np.testing.assert_array_equal(c.values(), np.conj(Z))
    back = eng.call("conj", [c])  # conj of conj: a view again, without the bit
    assert not back.conj and back.storage is y.storage
    np.testing.assert_array_equal(back.values(), Z)
    view = eng.call("select", [c], (0, 1))  # a view of a conj view reads through its bit
    assert view.conj and view.values() == np.conj(Z[1])


def test_conj_of_a_real_tensor_is_the_tensor():
    eng = Engine()
    x = eng.leaf(np.array([1.0, 2.0]), "float32", True)
    assert eng.call("conj", [x]) is x


def test_writes_through_the_bit_store_the_conjugate():
    eng = Engine()
    y = eng.leaf(Z, C128)
    c = eng.call("conj", [y])
    eng.call("copy_", [c, eng.leaf(np.array([1j, 2j, 3j]), C128)])
    np.testing.assert_array_equal(y.values(), [-1j, -2j, -3j])
    assert y.version == c.version == 1
    eng.call("mul_s_", [c], (2.0,))
    np.testing.assert_array_equal(y.values(), [-2j, -4j, -6j])
    n = eng.call("neg_view", [y])
    eng.call("add_s_", [n], (1.0,))  # -y + 1 written through the negation: y - 1
    np.testing.assert_array_equal(y.values(), np.array([-2j, -4j, -6j]) - 1)


def test_copy_of_the_same_memory_with_another_bit():
    """x.conj().copy_(x) writes the conjugate (2.0 wrote nothing: a known failure)."""
    eng = Engine()
    x = eng.leaf(Z, C128)
    eng.call("copy_", [eng.call("conj", [x]), x])
    np.testing.assert_array_equal(x.values(), np.conj(Z))
    assert x.version == 1


def test_gradient_through_conj_and_the_adjoints():
    w = np.array([[1 - 1j, 2j], [0.5, -1 + 0.5j]])
    a = np.array([[1 + 2j, 3 - 1j], [-2 + 0.5j, 0.25j]])
    for op in ("conj", "H", "mH", "adjoint", "neg_view"):

        def chain(e, ts, op=op):
            return e.call("mul", [e.call(op, [e.call("mul_s", [ts[0]], (2.0,))]), ts[1]])

        _, got = run(chain, [a, w], C128, grad_out=np.ones((2, 2)))
        want = numeric_grads(chain, [a, w], C128, np.ones((2, 2)))
        for g, n in zip(got, want, strict=True):
            np.testing.assert_allclose(g, n, rtol=1e-6, atol=1e-8, err_msg=op)


def test_a_write_through_a_conj_view_reaches_the_base_gradient():
    """CopySlices hands the view's part of the gradient through the bit (measured on
    torch 2.13: y.conj().mul_(m), then backward from y)."""

    def chain(e, ts):
        y = e.call("mul_s", [ts[0]], (1.0,))
        e.call("mul_", [e.call("conj", [y]), ts[1]])
        return y

    a, m = np.array([1 + 2j, 3 - 4j]), np.array([1j, 2.0])
    _, got = run(chain, [a, m], C128, grad_out=np.array([1 + 1j, 1.0]))
    want = numeric_grads(chain, [a, m], C128, np.array([1 + 1j, 1.0]))
    for g, n in zip(got, want, strict=True):
        np.testing.assert_allclose(g, n, rtol=1e-6, atol=1e-8)


def test_a_regenerated_conj_view_passes_the_conjugate():
    def chain(e, ts):
        y = e.call("mul_s", [ts[0]], (1.0,))
        c = e.call("conj", [y])
        e.call("mul_s_", [y], (2.0,))  # c's grad_fn is regenerated
        return c

    _, got = run(chain, [Z], C128, grad_out=np.array([1j, 1.0, 2.0]))
    want = numeric_grads(chain, [Z], C128, np.array([1j, 1.0, 2.0]))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-8)


def test_resolve_materialises_or_hands_back():
    eng = Engine()
    y = _nonleaf(eng, Z)
    assert eng.call("resolve_conj", [y]) is y and eng.call("resolve_neg", [y]) is y
    c = eng.call("conj", [y])
    r = eng.call("resolve_conj", [c])
    assert not r.conj and r.storage is not y.storage and r.requires_grad and r.base is None
    np.testing.assert_array_equal(r.values(), np.conj(Z))
    eng.call("zero_", [r])
    np.testing.assert_array_equal(y.values(), Z)
    n = eng.call("neg_view", [y])
    rn = eng.call("resolve_neg", [n])
    assert not rn.neg and rn.storage is not y.storage
    np.testing.assert_array_equal(rn.values(), -Z)


def test_writes_through_a_bit_check_overlap_but_resolve_their_operands():
    eng = Engine()
    e = eng.call("expand", [eng.leaf(np.array([[1 + 1j, 2.0]]), C128)], ((3, 2),))
    raises(ErrorKind.OVERLAPPING_WRITE, eng.call, "zero_", [eng.call("conj", [e])])
    t = eng.leaf(np.array([[1.0, 2.0], [3.0, 4.0]]), C128)
    eng.call("add_", [t, eng.call("mH", [t])])  # the conj operand is a copy: no overlap
    np.testing.assert_array_equal(t.values(), [[2, 5], [5, 8]])
    raises(ErrorKind.PARTIAL_OVERLAP, eng.call, "copy_", [t, eng.call("mH", [t])])
