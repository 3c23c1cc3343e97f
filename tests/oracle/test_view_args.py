"""The view family's argument spaces (strategies.view_args): every row has one,
what it draws is a call the model accepts, each drawn value falls in a
declared class, and the drawing API draws over a seeded Random exactly what
the Random's own calls draw (which keeps the differential's programs)."""

from __future__ import annotations

import itertools
from random import Random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from oracle import OPS, view_rows
from oracle.geometry import contiguous_strides
from oracle.ops import meant
from oracle.view_ops import chunk_sizes, section_sizes, split_sizes
from strategies.argspace import ArgSpace, Operand, RandomPick, arguments
from strategies.view_args import SPACES, SURFACE
from strategies.view_draws import permutation, pieces, view_shape
from strategies.views import VIEW_OPS

SHAPES = [(), (0,), (1,), (3,), (2, 3), (3, 0), (1, 2, 2), (2, 1, 3, 2), (0, 2, 1)]


def test_every_view_row_holds_its_argument_space():
    assert set(SPACES) == set(view_rows.ROWS)
    for name in view_rows.ROWS:
        spec = OPS[name]
        assert spec.args is SPACES[name], name
        assert tuple(a.name for a in spec.args.args) == spec.params, name
        assert len(set(spec.args.declared)) == len(spec.args.declared), name
    # what the surface motif draws (conformance/differential/motifs.py)
    # (the in-place view ops, after them: their own motif)
    assert SURFACE == set(list(view_rows.ROWS)[10:]) - set(view_rows.INPLACE_VIEWS)
    assert list(view_rows.ROWS)[-len(view_rows.INPLACE_VIEWS) :] == list(view_rows.INPLACE_VIEWS)


@pytest.mark.parametrize("name", sorted(SPACES))
def test_drawn_arguments_are_calls_the_model_accepts(name):
    """Only valid calls are drawn; each value falls in one of its arg's classes."""
    space, spec = SPACES[name], OPS[name]
    drawn = 0
    for seed, shape in itertools.product(range(40), SHAPES):
        operand = Operand(shape, True, 0)
        args = space.choose(RandomPick(Random(seed)), operand)
        if args is None:
            continue
        drawn += 1
        spec.geom(shape, contiguous_strides(shape), 0, *meant(spec, args))  # raises if refused
        classes = space.classes_of(operand, args)
        for arg in space.args:
            assert any(c.startswith(f"{arg.name}: ") for c in classes), (name, args)
    assert drawn, name


@pytest.mark.parametrize("rank", range(5))
def test_random_pick_draws_what_random_draws(rank):
    for seed in range(50):
        mine, theirs = Random(seed), Random(seed)
        assert permutation(RandomPick(mine), rank) == tuple(theirs.sample(range(rank), rank))
        options = tuple(range(rank + 1))
        assert RandomPick(mine).one_of(options) == theirs.choice(options)
        assert RandomPick(mine).ints(-2, rank) == theirs.randint(-2, rank)
        assert RandomPick(mine).chance(0.3) == (theirs.random() < 0.3)
        assert mine.getstate() == theirs.getstate()


def test_view_shape_keeps_the_number_of_elements():
    for seed, shape in itertools.product(range(20), SHAPES):
        new = view_shape(RandomPick(Random(seed)), shape)
        assert _numel(new) == _numel(shape)


def _numel(shape: tuple) -> int:
    n = 1
    for side in shape:
        n *= side
    return n


def test_pieces_are_the_oracles():
    for n, arg in itertools.product(range(1, 7), range(1, 8)):
        assert pieces(n, "split", arg) == split_sizes(n, arg)
        assert pieces(n, "chunk", arg) == chunk_sizes(n, arg)
    for n, arg in itertools.product(range(7), range(1, 8)):
        assert pieces(n, "tensor_split", arg) == section_sizes(n, arg)
    # tensor_split's indices: negative, beyond either end, decreasing
    for n, k in itertools.product(range(5), range(4)):
        for indices in itertools.product(range(-n - 2, n + 3), repeat=k):
            assert pieces(n, "tensor_split", list(indices)) == section_sizes(n, list(indices))


def test_deprecated_regions_are_never_drawn():
    """x.T beyond 2-D, and below, is deprecated: its row says so and draws none."""
    (region,) = SPACES["T"].undefined
    assert "deprecated" in region.sentence
    for shape in SHAPES:
        args = SPACES["T"].choose(RandomPick(Random(0)), Operand(shape))
        assert (args is not None) == (len(shape) == 2)


@settings(max_examples=50, database=None)
@given(st.data())
def test_property_tests_draw_from_the_same_spaces(data):
    """strategies.views draws narrow's arguments through the same declaration."""
    shape = data.draw(st.sampled_from([s for s in SHAPES if s]))
    args = data.draw(arguments(SPACES["narrow"], Operand(shape)))
    OPS["narrow"].geom(shape, contiguous_strides(shape), 0, *args)
    narrow = next(op for op in VIEW_OPS if op.template.startswith("x.narrow("))
    assert data.draw(narrow.args(shape)) is not None


def test_arguments_checks_its_arguments():
    with pytest.raises(InvalidArgument, match="must be an ArgSpace"):
        arguments("narrow", Operand((2,)))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="must be an Operand"):
        arguments(SPACES["narrow"], (2,))  # type: ignore[arg-type]
    assert isinstance(SPACES["narrow"], ArgSpace)


def _positions(shape: tuple, strides: tuple, offset: int) -> np.ndarray:
    """The storage position of each element of a (shape, strides, offset) view."""
    grid = np.indices(shape, dtype=np.int64) if shape else np.zeros((0,), np.int64)
    return offset + sum((g * s for g, s in zip(grid, strides, strict=True)), np.int64(0))


DECLARED = [v for v in VIEW_OPS if getattr(v.args, "op", None)]


@pytest.mark.parametrize("view", DECLARED, ids=lambda v: v.template)
@settings(max_examples=60, database=None, deadline=None)
@given(data=st.data())
def test_the_property_tests_view_table_agrees_with_the_oracle_row(view, data):
    """A view the property tests draw from a row's space selects, in NumPy,
    the elements the oracle's geometry gives the same arguments."""
    shape = data.draw(st.sampled_from([s for s in SHAPES if view.applies(s, True)]))
    args = data.draw(view.args(shape))
    got = np.asarray(view.numpy(np.arange(_numel(shape)).reshape(shape), args))
    spec = OPS[view.args.op]
    geom = spec.geom(shape, contiguous_strides(shape), 0, *meant(spec, args))
    assert got.shape == geom[0], (view.template, shape, args)
    assert (got == _positions(*geom[:3])).all(), (view.template, shape, args)
