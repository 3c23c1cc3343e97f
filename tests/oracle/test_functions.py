"""Custom Functions and saved-tensor hooks in the model, by hand-worked
examples and finite differences (no torch here)."""

from __future__ import annotations

import numpy as np

from oracle import Engine, ErrorKind

from .helpers import numeric_grads, raises

E = ErrorKind


def _leaf(eng, values, rg=True):
    return eng.leaf(np.array(values, dtype=float), "float64", rg)


def _backward(eng, out):
    eng.call("backward_g", [out, _leaf(eng, np.ones(out.shape), False)], (False,))


def test_scale_saved_input_written_makes_backward_raise():
    eng = Engine()
    x = _leaf(eng, [1.0, 2.0])
    y = eng.call("mul_s", [x], (1.0,))
    z = eng.call("fn_scale", [y], (3.0,))
    np.testing.assert_array_equal(z.values(), [3.0, 6.0])
    eng.call("add_s_", [y], (1.0,))
    raises(E.SAVED_TENSOR_MODIFIED, _backward, eng, z)


def test_scale_saved_input_detached_in_place_is_not_refused():
    """ctx.saved_tensors unpacks with the Function's node, so a saved input detached
    in place is read as it is (torch 2.0.1 to 2.14.1: backward runs, x.grad = 3);
    written too, the version check refuses it; a built-in op's saved input detached
    in place is refused first (SavedVariable::unpack without its node)."""
    for write, custom, expected in (
        (False, True, None),
        (True, True, E.SAVED_TENSOR_MODIFIED),
        (False, False, E.SAVED_TENSOR_DETACHED),
        (True, False, E.SAVED_TENSOR_DETACHED),
    ):
        eng = Engine()
        x = _leaf(eng, [1.0, 2.0])
        y = eng.call("mul_s", [x], (1.0,))
        z = eng.call("fn_scale", [y], (3.0,)) if custom else eng.call("pow_s", [y], (2,))
        if write:
            with eng.no_grad():
                eng.call("add_s_", [y], (1.0,))
        eng.call("detach_", [y])
        if expected is None:
            _backward(eng, z)
            np.testing.assert_array_equal(x.grad, [3.0, 3.0])
        else:
            raises(expected, _backward, eng, z)


def test_scale_gradient_matches_finite_differences():
    def chain(e, ts):
        return e.call("fn_scale", [e.call("sin", [ts[0]])], (-0.5,))

    xs = [np.array([0.3, -0.7])]
    eng = Engine()
    x = eng.leaf(xs[0], "float64", True)
    _backward(eng, chain(eng, [x]))
    (want,) = numeric_grads(chain, xs, "float64", np.ones(2))
    np.testing.assert_allclose(x.grad, want, rtol=1e-6)


def test_mark_dirty_returns_the_input_bumped_twice_and_rebased():
    eng = Engine()
    x = _leaf(eng, [1.0, 2.0])
    y = eng.call("mul_s", [x], (1.0,))
    r = eng.call("fn_mul_", [y], (3.0,))
    assert r is y and y.version == 2 and y.grad_fn().name == "fn_mul_"
    np.testing.assert_array_equal(y.values(), [3.0, 6.0])
    _backward(eng, y)
    np.testing.assert_array_equal(x.grad, [3.0, 3.0])


def test_mark_dirty_resets_the_grad_of_the_input_it_records_only():
    # measured on 2.0.1, 2.13.0 and 2.14.1: t.grad = g, then MulDirty.apply(t, c)
    eng = Engine()
    x = _leaf(eng, [1.0, 2.0])
    y = eng.call("mul_s", [x], (1.0,))
    eng.call("set_grad", [y, _leaf(eng, [5.0, 5.0], False)], ())
    eng.call("mul_s_", [y], (2.0,))
    np.testing.assert_array_equal(y.grad, [5.0, 5.0])  # a built-in write keeps it
    eng.call("fn_mul_", [y], (3.0,))
    assert y.grad is None
    plain = _leaf(eng, [1.0, 2.0], False)  # nothing recorded: .grad stays
    eng.call("set_grad", [plain, _leaf(eng, [7.0, 7.0], False)], ())
    eng.call("fn_mul_", [plain], (3.0,))
    np.testing.assert_array_equal(plain.grad, [7.0, 7.0])
    v = eng.call("select", [x], (0, 0))  # a leaf's view: rebase_history refuses, .grad gone
    eng.call("set_grad", [v, _leaf(eng, 9.0, False)], ())
    raises(E.INPLACE_ON_LEAF_VIEW, eng.call, "fn_mul_", [v], (3.0,))
    assert v.grad is None
    leaf = _leaf(eng, [1.0, 2.0])  # the leaf check comes first: .grad stays
    eng.call("set_grad", [leaf, _leaf(eng, [4.0, 4.0], False)], ())
    raises(E.INPLACE_ON_LEAF, eng.call, "fn_mul_", [leaf], (2.0,))
    np.testing.assert_array_equal(leaf.grad, [4.0, 4.0])


def test_mark_dirty_on_a_view_rewrites_the_base_and_on_a_leaf_raises_after_writing():
    eng = Engine()
    x = _leaf(eng, [[1.0, 1.0], [1.0, 1.0]])
    y = eng.call("mul_s", [x], (1.0,))
    v = eng.call("select", [y], (0, 0))
    eng.call("fn_mul_", [v], (3.0,))
    assert y.grad_fn().name == "CopySlices" and y.version == 2
    _backward(eng, y)
    np.testing.assert_array_equal(x.grad, [[3.0, 3.0], [1.0, 1.0]])
    leaf = _leaf(eng, [1.0, 2.0])
    raises(E.INPLACE_ON_LEAF, eng.call, "fn_mul_", [leaf], (2.0,))
    assert leaf.version == 2  # torch 2.13 writes first, then refuses
    np.testing.assert_array_equal(leaf.values(), [2.0, 4.0])


def test_non_differentiable_output():
    eng = Engine()
    x = _leaf(eng, [1.5, -2.0, 0.0])
    z = eng.call("fn_nondiff", [x])
    assert not z.requires_grad and z.grad_fn() is None
    np.testing.assert_array_equal(z.values(), [1.0, -1.0, 0.0])


def test_view_output_refuses_writes_and_a_written_base():
    eng = Engine()
    x = _leaf(eng, [1.0, 2.0])
    y = eng.call("mul_s", [x], (1.0,))
    v = eng.call("fn_view", [y])
    assert v.base is y and v.storage is y.storage and v.grad_fn().name == "fn_view"
    raises(E.CUSTOM_FUNCTION_VIEW, eng.call, "mul_s_", [v], (2.0,))
    eng.call("mul_s_", [y], (2.0,))
    raises(E.CUSTOM_FUNCTION_VIEW, v.grad_fn)
    w = eng.call("fn_view", [_leaf(eng, [1.0], False)])  # nothing recorded: an ordinary view
    eng.call("mul_s_", [w], (2.0,))


def test_view_output_under_no_grad_is_still_made_in_a_custom_function():
    eng = Engine()
    y = eng.call("mul_s", [_leaf(eng, [1.0, 2.0])], (1.0,))
    with eng.no_grad():
        v = eng.call("fn_view", [y])
    assert v.custom_view and not v.no_grad_view and v.requires_grad and v.grad_fn() is None
    raises(E.CUSTOM_FUNCTION_VIEW, eng.call, "mul_s_", [v], (2.0,))
    w = eng.call("select", [v], (0, 0))  # a view of it inherits its CreationMeta
    raises(E.CUSTOM_FUNCTION_VIEW, eng.call, "mul_s_", [w], (2.0,))
    with eng.no_grad():
        eng.call("mul_s_", [v], (2.0,))  # allowed; its grad_fn now cannot be read
    raises(E.CUSTOM_FUNCTION_VIEW, v.grad_fn)


def test_the_no_grad_prefix_of_a_custom_function_view_is_classified_as_such():
    from oracle import classify

    message = (
        "A view was created in no_grad mode and is being modified inplace with grad mode "
        "enabled. This view was created inside a custom Function (or because an input was "
        "returned as-is) and the autograd logic ..."
    )
    assert classify(message) is E.CUSTOM_FUNCTION_VIEW


def test_hooks_detach_no_version_check_reads_the_written_values():
    eng = Engine()
    x = _leaf(eng, [0.5, 1.0])
    y = eng.call("mul_s", [x], (1.0,))
    z = eng.call("sin_hooked_detach", [y])
    eng.call("mul_s_", [y], (3.0,))
    _backward(eng, z)
    np.testing.assert_allclose(x.grad, np.cos([1.5, 3.0]))


def test_hooks_x2_x2_backward_uses_unpacks_value():
    eng = Engine()
    x = _leaf(eng, [0.5, 1.0])
    z = eng.call("sin_hooked_x2_x2", [x])
    np.testing.assert_allclose(z.values(), np.sin([0.5, 1.0]))
    _backward(eng, z)
    np.testing.assert_allclose(x.grad, np.cos([2.0, 4.0]))
    raises(E.BACKWARD_TWICE, _backward, eng, z)


def test_mark_dirty_under_no_grad_returns_a_detached_alias():
    eng = Engine()
    x = _leaf(eng, [1.0, 2.0])
    with eng.no_grad():
        z = eng.call("fn_mul_", [x], (2.0,))
    assert z is not x and z.storage is x.storage and z.counter is x.counter
    assert not z.requires_grad and x.version == 2 and x.grad_fn() is None


def test_add_dirty_hands_both_inputs_their_gradients():
    """Measured on 2.0.1, 2.4.1, 2.13.0, 2.14.1: x = a * 1, y a leaf;
    AddDirty.apply(x, y, 2.0) gives x = x + 2y at version 2 (y's stays 0), grad_fn
    AddDirtyBackward; x.backward([1, 10]): a.grad = [1, 10], y.grad = [2, 20]."""
    eng = Engine()
    a = _leaf(eng, [1.0, 2.0])
    x = eng.call("mul_s", [a], (1.0,))
    y = _leaf(eng, [3.0, 4.0])
    r = eng.call("fn_add_dirty_", [x, y], (2.0,))
    assert r is x and x.version == 2 and y.version == 0 and x.grad_fn().name == "fn_add_dirty_"
    np.testing.assert_array_equal(x.values(), [7.0, 10.0])
    eng.call("backward_g", [x, _leaf(eng, [1.0, 10.0], False)], (False,))
    np.testing.assert_array_equal(a.grad, [1.0, 10.0])
    np.testing.assert_array_equal(y.grad, [2.0, 20.0])


def test_add_dirty_on_a_plain_tensor_a_view_and_a_leaf():
    eng = Engine()
    p = _leaf(eng, [1.0, 2.0], False)  # requires no grad: the node becomes its history
    y = _leaf(eng, [3.0, 4.0])
    eng.call("fn_add_dirty_", [p, y], (2.0,))
    assert p.requires_grad and p.grad_fn().name == "fn_add_dirty_" and p.version == 2
    _backward(eng, p)
    np.testing.assert_array_equal(y.grad, [2.0, 2.0])
    base = _leaf(eng, [[0.0, 0.0], [0.0, 0.0]], False)  # a plain base's view: CopySlices
    v = eng.call("select", [base], (0, 0))
    y2 = _leaf(eng, [1.0], True)  # broadcast into v: its gradient is summed
    eng.call("fn_add_dirty_", [v, y2], (-0.5,))
    assert base.grad_fn().name == "CopySlices"
    _backward(eng, base)
    np.testing.assert_array_equal(y2.grad, [-1.0])
    leaf = _leaf(eng, [1.0, 2.0])  # refused after the write
    raises(E.INPLACE_ON_LEAF, eng.call, "fn_add_dirty_", [leaf, y], (2.0,))
    np.testing.assert_array_equal(leaf.values(), [7.0, 10.0])
    assert leaf.version == 2


def test_add_dirty_gradient_matches_finite_differences():
    def chain(e, ts):
        x = e.call("sin", [ts[0]])
        e.call("fn_add_dirty_", [x, e.call("mul", [ts[1], ts[1]])], (3.0,))
        return x

    xs = [np.array([0.3, -0.7]), np.array([1.5, 0.25])]
    eng = Engine()
    leaves = [eng.leaf(v, "float64", True) for v in xs]
    _backward(eng, chain(eng, leaves))
    for leaf, want in zip(leaves, numeric_grads(chain, xs, "float64", np.ones(2)), strict=True):
        np.testing.assert_allclose(leaf.grad, want, rtol=1e-6)


def test_view_output_of_a_plain_tensor_refuses_a_write_that_needs_grad():
    """Measured on 2.0.1, 2.4.1, 2.13.0, 2.14.1: v = ViewFn.apply(x) for x that
    requires no grad; v.add_(w) with w requiring grad raises "A view was created in
    no_grad mode ... inside a custom Function" before writing; v.mul_(2) goes
    through; x.add_(w) goes through, and then v.grad_fn raises."""
    eng = Engine()
    x = _leaf(eng, [1.0, 2.0], False)
    w = _leaf(eng, [3.0, 4.0])
    v = eng.call("fn_view", [x])
    assert v.base is x and v.custom_view and not v.requires_grad and v.grad_fn() is None
    raises(E.CUSTOM_FUNCTION_VIEW, eng.call, "add_", [v, w])
    assert x.version == 0
    eng.call("mul_s_", [v], (2.0,))  # needs no grad: allowed
    assert v.grad_fn() is None
    eng.call("add_", [x, w])
    assert v.requires_grad
    raises(E.CUSTOM_FUNCTION_VIEW, v.grad_fn)
    with eng.no_grad():  # made under no_grad: the same CreationMeta
        u = eng.call("fn_view", [_leaf(eng, [1.0], False)])
    assert u.custom_view and not u.no_grad_view
    raises(E.CUSTOM_FUNCTION_VIEW, eng.call, "copy_", [u, _leaf(eng, [5.0])])


def test_backward_none_leaves_the_input_without_a_gradient():
    """Measured on 2.0.1, 2.13.0, 2.14.1: z = AddNoGrad.apply(x, y, 1) (None for y);
    z.backward(ones): x.grad = ones, y.grad None (a .grad set before stays); behind y
    a built-in op passes the undefined gradient on (w.grad None), a custom Function's
    node gets zeros (w.grad zeros); autograd.grad gives None for y, zeros for w behind
    Scale."""
    eng = Engine()
    x, y = _leaf(eng, [1.0, 2.0]), _leaf(eng, [3.0, 4.0])
    _backward(eng, eng.call("fn_none_grad", [x, y], (1,)))
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])
    assert y.grad is None
    eng.call("set_grad", [y, _leaf(eng, [7.0, 7.0], False)], ())
    _backward(eng, eng.call("fn_none_grad", [x, y], (1,)))
    np.testing.assert_array_equal(x.grad, [2.0, 2.0])
    np.testing.assert_array_equal(y.grad, [7.0, 7.0])
    for behind, want in (("mul_s", None), ("fn_scale", [0.0, 0.0])):
        eng = Engine()
        x, w = _leaf(eng, [1.0, 2.0]), _leaf(eng, [3.0, 4.0])
        y = eng.call(behind, [w], (2.0,))
        z = eng.call("fn_none_grad", [x, y], (1,))
        one = _leaf(eng, [1.0, 1.0], False)
        got = eng.call("autograd_grad", [z, w, one], (True, True))
        assert eng.call("autograd_grad", [z, y, one], (True, True)) is None
        _backward(eng, z)
        if want is None:
            assert w.grad is None and got is None
        else:
            np.testing.assert_array_equal(w.grad, want)
            np.testing.assert_array_equal(got.values(), want)


def test_an_undefined_gradient_still_runs_the_nodes_behind_it():
    """A built-in node given only an undefined gradient runs: it unpacks what it saved
    (torch 2.0.1 to 2.14.1: 'modified by an inplace operation'), and a node it shares
    with a defined path still gets that path's gradient."""
    eng = Engine()
    x, w = _leaf(eng, [1.0, 2.0]), _leaf(eng, [0.5, 1.0])
    a = eng.call("mul_s", [w], (1.0,))
    y = eng.call("sin", [a])
    eng.call("mul_s_", [a], (2.0,))
    raises(E.SAVED_TENSOR_MODIFIED, _backward, eng, eng.call("fn_none_grad", [x, y], (1,)))
    eng = Engine()
    x, w = _leaf(eng, [1.0, 2.0]), _leaf(eng, [3.0, 4.0])
    a = eng.call("mul_s", [w], (1.0,))
    b = eng.call("mul_s", [a], (2.0,))
    z = eng.call("add", [eng.call("fn_none_grad", [x, b], (1,)), a])
    _backward(eng, z)
    np.testing.assert_array_equal(w.grad, [1.0, 1.0])
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])


def test_a_moved_leaf_reached_with_no_gradient_may_raise():
    # t1, a view of a plain t0, made to require grad under no_grad; t0.copy_(t1)
    # moves t1 into the graph interior; a custom Function's backward gives t0
    # None: t1's AccumulateGrad runs with no gradient. 2.0.1 and 2.4.1 pass it
    # by, 2.13.0 and 2.14.1 raise LEAF_MOVED: either holds (measured)
    eng = Engine()
    t0 = _leaf(eng, [0.0, 0.0], False)
    t1 = eng.call("narrow", [t0], (0, 0, 2))
    with eng.no_grad():
        eng.call("requires_grad_", [t1], (True,))
    eng.call("copy_", [t0, t1])
    x = _leaf(eng, [1.0, 1.0])
    z = eng.call("fn_none_grad", [eng.call("mul_s", [x], (2.0,)), t0], (1,))
    _backward(eng, z)
    assert eng.may_refuse is E.LEAF_MOVED and eng.undefined is None
    np.testing.assert_array_equal(x.grad, [2.0, 2.0])
    assert t1.grad is None
