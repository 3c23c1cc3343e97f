"""Shapes: 0-d, empty, and up to rank 4, small enough to stay fast."""

from __future__ import annotations

import math
from functools import cache

from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

MAX_RANK = 4
MAX_SIDE = 4
MAX_NUMEL = 64


@cache
def shapes(
    min_dims: int = 0,
    max_dims: int = MAX_RANK,
    min_side: int = 0,
    max_side: int = MAX_SIDE,
) -> st.SearchStrategy[tuple[int, ...]]:
    """Array shapes, 0-d and empty ones included unless the bounds exclude them.

    Half the draws come from shapes of rank >= 2 with sides >= 2, so that
    layouts which need several real dimensions (transposes, diagonals) are
    drawn often, not once in a while.
    """
    anything = hnp.array_shapes(
        min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    )
    wide = hnp.array_shapes(
        min_dims=max(min_dims, 2),
        max_dims=max(max_dims, 2),
        min_side=max(min_side, 2),
        max_side=max(max_side, 2),
    )
    chosen = st.one_of(anything, wide) if max_dims >= 2 else anything
    return chosen.filter(lambda s: math.prod(s) <= MAX_NUMEL)


@cache
def nonempty_shapes(min_dims: int = 0, max_dims: int = MAX_RANK) -> st.SearchStrategy:
    return shapes(min_dims=min_dims, max_dims=max_dims, min_side=1)


def broadcast_sources(target: tuple[int, ...]) -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes that broadcast to `target` (as `src` of `target.copy_(src)`)."""
    return hnp.broadcastable_shapes(target, min_dims=0, max_dims=len(target), min_side=0).filter(
        lambda s: broadcasts_to(s, target)
    )


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether `shape` broadcasts to exactly `target`."""
    if len(shape) > len(target):
        return False
    return all(a in (1, b) for a, b in zip(reversed(shape), reversed(target), strict=False))
