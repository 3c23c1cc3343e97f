"""Regions the documentation leaves undefined are never drawn: every row's
`Undefined` says, as data, which draws fall in it, and `ArgSpace.draw` refuses
those, on both sides (a seeded Random for the differential, Hypothesis for the
property tests)."""

from __future__ import annotations

from random import Random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies.argspace import Arg, ArgSpace, Class, Operand, RandomPick, Undefined, arguments
from strategies.op_args import SPACES as OP_SPACES
from strategies.view_args import SPACES as VIEW_SPACES

ROWS = {**VIEW_SPACES, **OP_SPACES}
UNDEFINED = [(name, u) for name, space in sorted(ROWS.items()) for u in space.undefined]
SHAPES = [(), (1,), (3,), (2, 3), (3, 1), (1, 2, 2)]


def test_the_rows_declare_their_undefined_regions():
    assert {name for name, _ in UNDEFINED} >= {"T", "index_fill_"}
    for _, u in UNDEFINED:
        assert u.sentence and u.source and callable(u.holds)


@pytest.mark.parametrize("name, region", UNDEFINED, ids=[f"{n}: {u.region}" for n, u in UNDEFINED])
def test_no_draw_falls_in_an_undefined_region(name, region):
    space = ROWS[name]
    rng, drawn = Random(0), 0
    for shape in SHAPES:
        for overlapping in (False, True):
            x = Operand(shape, contiguous=not overlapping, overlapping=overlapping)
            for _ in range(50):
                args = space.draw(RandomPick(rng), x)
                if args is not None:
                    drawn += 1
                    assert not region.holds(x, args), (name, shape, args)
    assert drawn, f"{name} drew nothing at all"


def test_index_fill_is_never_drawn_on_memory_whose_elements_repeat():
    space = OP_SPACES["index_fill_"]
    rng = Random(1)
    expanded = Operand((3, 2), contiguous=False, overlapping=True)
    assert all(space.draw(RandomPick(rng), expanded) is None for _ in range(200))
    assert any(space.draw(RandomPick(rng), Operand((3, 2))) is not None for _ in range(20))


@settings(max_examples=30, database=None)
@given(st.data())
def test_the_property_tests_draw_around_the_region_too(data):
    # a toy space whose undefined region is half of what it draws
    space = ArgSpace(
        (Arg("n", (Class("any", lambda v, x, p: True),)),),
        lambda pick, x: (pick.ints(0, 9),),
        (Undefined("odd n", "n must be even.", "a test", lambda x, args: args[0] % 2 == 1),),
        op="toy",
    )
    (n,) = data.draw(arguments(space, Operand((2,))))
    assert n % 2 == 0
