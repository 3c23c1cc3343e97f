"""Where releases differ, the model follows the release it is given
(oracle.releases); conformance.build picks the build's."""

from __future__ import annotations

import numpy as np
import pytest

from oracle import NEWEST, Engine, ErrorKind, Release

from .helpers import raises

OLDER = Release(open_slice_is_identity=False)  # torch before the open-slice change


@pytest.mark.parametrize(
    "release, index, kind",
    [
        (NEWEST, (slice(None),), ErrorKind.INPLACE_ON_LEAF),
        (NEWEST, (slice(0, 5),), ErrorKind.INPLACE_ON_LEAF),
        (NEWEST, (slice(0, 3),), ErrorKind.INPLACE_ON_LEAF),
        (OLDER, (slice(None),), ErrorKind.INPLACE_ON_LEAF_VIEW),
        (OLDER, (slice(0, None),), ErrorKind.INPLACE_ON_LEAF_VIEW),
        (OLDER, (slice(0, 5),), ErrorKind.INPLACE_ON_LEAF_VIEW),
        (OLDER, (slice(None, 3),), ErrorKind.INPLACE_ON_LEAF),
        (OLDER, (slice(0, 2),), ErrorKind.INPLACE_ON_LEAF_VIEW),
    ],
)
def test_whole_slice_write_on_a_leaf_raises_the_error_of_its_release(release, index, kind):
    eng = Engine(release)
    x = eng.leaf(np.ones(3), "float32", True)
    raises(kind, eng.call, "setitem_s", [x], (index, 2.0))
    assert x.version == 0


@pytest.mark.parametrize("index", [(slice(None),), (slice(0, 2),), (slice(0, 2), slice(1, 3))])
def test_scalar_setitem_on_expanded_memory_may_fill_or_refuse(index):
    """Not promised: 2.0 and 2.1 fill as fill_ does, 2.2 on refuse (pytorch#109533)."""
    eng = Engine(NEWEST)
    x = eng.call("expand", [eng.leaf(np.ones(3), "float32")], ((2, 3),))
    eng.call("setitem_s", [x], (index, 0.0))
    assert eng.may_refuse is ErrorKind.OVERLAPPING_WRITE and eng.undefined
    expected = np.ones((2, 3))
    expected[index] = 0
    np.testing.assert_array_equal(x.values(), expected)
    y = eng.call("clone", [x])
    eng.call("setitem_s", [y], (index, 0.0))  # memory of its own: promised, and checked
    assert eng.may_refuse is None and eng.undefined is None


def test_mean_saves_only_sizes():
    """A second backward and a backward after a write both work (2.0 saved
    its input: a known failure)."""
    eng = Engine(NEWEST)
    x = eng.leaf(np.ones((3, 2)), "float32", True)
    y = eng.call("add_s", [x], (1.0,))  # saves nothing
    m = eng.call("mean", [y])
    eng.call("backward", [m], (False,))
    eng.call("backward", [m], (False,))
    np.testing.assert_allclose(x.grad, np.full((3, 2), 2 / 6))
    m2 = eng.call("mean", [y])
    with eng.no_grad():
        eng.call("add_s_", [y], (1.0,))
    eng.call("backward", [m2], (False,))
    np.testing.assert_allclose(x.grad, np.full((3, 2), 3 / 6))


@pytest.mark.parametrize("at_bounds, expected", [(True, [0, 1, 1, 1, 0]), (False, [0, 0, 1, 0, 0])])
def test_clamps_gradient_at_its_bounds_follows_the_release(at_bounds, expected):
    eng = Engine(Release(clamp_grad_at_bounds=at_bounds))
    x = eng.leaf(np.array([-2.0, -1.0, 0.5, 1.0, 3.0]), "float64", True)
    y = eng.call("mul_s", [x], (1.0,))
    eng.call("clamp_", [y], (-1.0, 1.0))
    eng.call("backward_g", [y, eng.leaf(np.ones(5), "float64")], (False,))
    np.testing.assert_array_equal(x.grad, expected)


@pytest.mark.parametrize("at_bounds, expected", [(True, [0, 1, 1]), (False, [0, 0, 1])])
def test_clamp_min_gradient_at_its_bound_follows_the_release(at_bounds, expected):
    """clamp_min changed with clamp (pytorch/pytorch#191142): 2.13.0 and 2.0.1 give
    [0, 1, 1] here, 2.14.1 [0, 0, 1] (measured)."""
    eng = Engine(Release(clamp_grad_at_bounds=at_bounds))
    x = eng.leaf(np.array([0.0, 1.0, 2.0]), "float64", True)
    y = eng.call("mul_s", [x], (1.0,))
    eng.call("clamp_min_", [y], (1.0,))
    eng.call("backward_g", [y, eng.leaf(np.ones(3), "float64")], (False,))
    np.testing.assert_array_equal(x.grad, expected)
