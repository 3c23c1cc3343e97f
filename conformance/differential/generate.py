"""Hypothesis strategy for programs, grown against the oracle.

Each step is made knowing the oracle's state after the steps before it
(shapes, dtypes, devices, which tensors require grad), so its operands and
parameters fit: an op's row in the oracle's table says which dtypes it takes
and what kinds of parameters it has, and adding a row adds it to the
programs. Steps the oracle predicts must raise are kept: torch must raise
too. A failing backward ends the program.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.differential.choices import _GO_ON, _STEP_SEEDS, Sampler, one_of
from conformance.differential.growth import (
    _CHOICES,
    FAMILIES,
    MAX_POOL,
    Growth,
    add_backward,
    apply_op,
    new_leaf,
)
from conformance.differential.listing import listing
from conformance.differential.motifs import MOTIFS, SURFACE_MOTIFS
from conformance.differential.observe import READS
from strategies.programs import Program

__all__ = ["FAMILIES", "MOTIFS", "SURFACE_MOTIFS", "Growth", "programs"]

# The surface motifs' share of steps, whatever their number (see motifs.py).
SURFACE_WEIGHT = 9  # about as many turns as the core motifs: 19 surface entries, 17 core
_ALL_CHOICES = _CHOICES + ("surface",) * (SURFACE_WEIGHT if SURFACE_MOTIFS else 0)


def _step(draw, g: Growth, family: str) -> None:
    if family == "leaf" or not g.pool:
        if len(g.pool) < MAX_POOL:
            g.apply(new_leaf(draw, g))
        return
    if family == "backward":
        add_backward(draw, g)
    elif family == "motif":
        draw(one_of(MOTIFS))(draw, g)
    elif family == "surface":
        draw(one_of(SURFACE_MOTIFS))(draw, g)
    else:
        apply_op(draw, g, draw(one_of(FAMILIES[family])))


@st.composite
def programs(
    draw: st.DrawFn,
    devices: tuple[str, ...],
    dtypes: tuple[str, ...],
    max_steps: int = 24,
    salt: int = 0,
) -> Program:
    """Programs over `devices` and `dtypes`. Runs with one fixed seed draw the
    same choices everywhere; `salt` turns the same choices into other
    programs, so shards of a seeded run differ."""
    g = Growth(devices, dtypes)
    choices = _ALL_CHOICES[salt % len(_ALL_CHOICES) :] + _ALL_CHOICES[: salt % len(_ALL_CHOICES)]
    # Each step's Random is seeded by every seed drawn so far, not its own
    # alone: Hypothesis hands out the same few seeds (0, 2**64 - 1, ...) at
    # many places, and programs would repeat each other's steps.
    state = _mix(0, draw(_STEP_SEEDS))
    first = Sampler(state)
    g.apply(new_leaf(first, g))
    g.reads = first(one_of(READS))
    # one "go on?" draw before each step, as Hypothesis's own lists do
    while len(g.steps) < max_steps and not g.over and draw(_GO_ON):
        state = _mix(state, draw(_STEP_SEEDS))
        step = Sampler(state)
        _step(step, g, step(one_of(choices)))
    return Program(g.steps, reads=g.reads, render=listing)


def _mix(state: int, seed: int) -> int:
    """The next state of a 64-bit linear congruential chain, fed `seed`."""
    return (state * 6364136223846793005 + seed + 1442695040888963407) % 2**64
