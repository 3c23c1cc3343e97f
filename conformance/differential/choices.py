"""Choices a program step makes from its own seeded Random.

Each step's choices come from a random.Random seeded by one Hypothesis draw
(see Sampler): a Hypothesis draw costs tens of µs and a step makes a dozen
choices. Hypothesis still decides how many steps there are and each step's
seed, so a seeded run, the example database and step deletion all work as
before. A choice is a function of that Random.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from random import Random
from typing import Any

from hypothesis import strategies as st

from strategies.argspace import ArgSpace, Operand, RandomPick
from strategies.dtypes import DTYPES

Choice = Callable[[Random], Any]


class Sampler:
    """Makes one step's choices: `draw(choice, *args)` is `choice(rng, *args)`,
    called as Hypothesis's draw is."""

    def __init__(self, seed: int) -> None:
        self.rng = Random(seed)

    def __call__(self, choice: Callable[..., Any], *args: Any) -> Any:
        return choice(self.rng, *args)


_STEP_SEEDS = st.integers(0, 2**64 - 1)
_GO_ON = st.sampled_from((True,) * 11 + (False,))  # about a dozen steps


@cache
def ints(low: int, high: int) -> Choice:
    return lambda rng: rng.randint(low, high)


@cache
def one_of(options: tuple) -> Choice:
    return lambda rng: options[rng.randrange(len(options))]


def SEEDS(rng: Random) -> int:  # noqa: N802 - a constant choice, named like the others
    return rng.getrandbits(32)


def BOOLS(rng: Random) -> bool:  # noqa: N802
    return rng.random() < 0.5


def _small(rng: Random) -> float:
    # k * 2**e with |k| < 16 and e < 0, as strategies.dtypes.small_elements
    return rng.randint(-15, 15) * 2.0 ** rng.randint(-4, -1)


@cache
def scalars(dtype: str, nonzero: bool) -> Choice:
    kind = DTYPES[dtype].kind

    def value(rng: Random):
        while True:
            if kind == "float":
                v = _small(rng)
            elif kind == "complex":  # no exact-zero parts: see seeded_values
                v = complex(_small(rng) or 0.5, _small(rng) or 0.5)
            elif kind == "bool":
                v = rng.random() < 0.5
            else:
                v = rng.randint(0, 15) if dtype == "uint8" else rng.randint(-8, 8)
            if not (nonzero and v == 0):
                return v

    return value


def arguments(space: ArgSpace, operand: Operand) -> Choice:
    """An op's arguments drawn from its argument space, as the property tests
    draw them (strategies.argspace), with the step's Random as the primitives."""
    return lambda rng: space.draw(RandomPick(rng), operand)
