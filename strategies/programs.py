"""Programs: chains of tensor operations, as data.

A program is a list of steps over a growing pool of tensors: a step names an
op of the oracle's table, the pool indices of its tensor operands and its
Python parameters. A step that makes a new tensor appends it to the pool, so
`t3` in a listing is the fourth tensor made. The same data drives torch, the
oracle, the printed counterexample and the standalone repro script.

This module also holds the samplers for ops' parameters that depend only on
shapes (indices, view shapes); which op comes next, and with which operands,
is decided where the oracle's state is known (conformance).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from random import Random

import numpy as np

from . import view_draws
from .argspace import RandomPick

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Leaf:
    """A new leaf tensor, built from fresh values."""

    values: np.ndarray  # in the dtype's compute dtype
    dtype: str
    device: str
    requires_grad: bool
    inference: bool = False  # made under torch.inference_mode()
    layout: str = ""  # "" contiguous, or one of LEAF_LAYOUTS (see geometry)

    def geometry(self) -> tuple[tuple[int, ...], int, int] | None:
        """(strides, storage offset, storage size), in elements, of a leaf laid
        out non-contiguously; None for a contiguous one (an empty one always is)."""
        return layout_geometry(tuple(self.values.shape), self.layout)

    def made_by(self, engine):
        """This leaf in the reference model: engine.leaf with its values, flags and layout
        (the engine is passed in: strategies import no oracle)."""
        return engine.leaf(
            self.values,
            self.dtype,
            self.requires_grad,
            self.device,
            self.inference,
            self.geometry(),
        )

    def storage_values(self) -> np.ndarray:
        """The whole storage of a non-contiguous leaf: its values where its
        geometry puts them, zeros elsewhere."""
        strides, offset, size = self.geometry()
        flat = np.zeros(size, self.values.dtype)
        item = flat.itemsize
        np.lib.stride_tricks.as_strided(
            flat[offset:], self.values.shape, tuple(s * item for s in strides)
        )[...] = self.values
        return flat

    def source(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        where = f"dtype=torch.{self.dtype}, device={self.device!r}{grad}"
        if self.geometry() is not None:
            # a leaf on a strided view's memory: detach() makes it no view
            strides, offset, _ = self.geometry()
            where = f"dtype=torch.{self.dtype}, device={self.device!r}"
            made = f"torch.tensor({self.storage_values().tolist()!r}, {where})"
            made += f".as_strided({tuple(self.values.shape)!r}, {strides!r}, {offset}).detach()"
            return made + (".requires_grad_()" if self.requires_grad else "")
        if self.values.size == 0:
            # a nested empty list loses the shape, and reshaping after
            # requires_grad=True would make a non-leaf
            return f"torch.empty({tuple(self.values.shape)!r}, {where})"
        return f"torch.tensor({self.values.tolist()!r}, {where})"


# Leaves laid out non-contiguously: the transpose of a contiguous layout (a
# vector or scalar: strided), every other element, or contiguous from a
# storage offset of 2.
LEAF_LAYOUTS = ("transposed", "strided", "offset")


def layout_geometry(shape: Shape, layout: str) -> tuple[tuple[int, ...], int, int] | None:
    """(strides, storage offset, storage size) of `layout` for `shape`, or None
    for a contiguous one."""
    numel = math.prod(shape)
    if not layout or numel == 0:
        return None
    if layout == "offset":
        return _contiguous(shape), 2, numel + 2
    if layout == "transposed" and len(shape) >= 2:
        return _contiguous(shape[::-1])[::-1], 0, numel
    strides = tuple(2 * s for s in _contiguous(shape))
    return strides, 1, 2 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))


def _contiguous(shape: Shape) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Step:
    op: str  # "leaf", or a row of oracle.OPS
    tensors: tuple[int, ...] = ()  # pool indices of the tensor operands
    params: tuple = ()
    no_grad: bool = False
    leaf: Leaf | None = field(default=None, compare=False)
    mode: str = ""  # the API that sets its grad mode (conformance/differential/modes.py)


@dataclass
class Program:
    steps: list[Step]
    # how the differential reads each tensor's grad_fn (and is_leaf, which reads
    # it) after a step: "" in grad mode, "no_grad" under torch.no_grad(), "lazy"
    # not at all, so that a view's stale grad_fn is first regenerated by
    # whatever uses it next (READS in conformance/differential/observe.py)
    reads: str = ""
    # how to print it (as torch code); set by whoever knows the op table
    render: Callable[[Program], list[str]] | None = field(default=None, compare=False, repr=False)

    def _repr_pretty_(self, printer, cycle: bool) -> None:  # Hypothesis's printer
        printer.text(repr(self))

    def __repr__(self) -> str:
        if self.render is None:
            lines = [f"{s.op}{s.tensors}{s.params}" for s in self.steps]
        else:
            lines = self.render(self)
        return "Program:\n" + "\n".join("    " + line for line in lines)


# --- parameter samplers -------------------------------------------------------
# Programs are grown from one Hypothesis-drawn seed per step (see
# conformance.differential.generate): a Hypothesis draw costs tens of µs, and a
# step makes a dozen choices. These functions make the choices that depend
# only on shapes, from that step's random.Random.

MAX_RANK, MAX_NUMEL = 4, 64


def leaf_shape(rng: Random, max_side: int = 3) -> Shape:
    """0-d up to rank 4; half the time rank >= 2 with sides >= 2, so that
    layouts which need several real dimensions come often; one in eight
    nonzero ranks empty (a side of 0)."""
    while True:
        low = 2 if rng.random() < 0.5 else 1
        sides = [rng.randint(low, max_side) for _ in range(rng.randint(low - 1, MAX_RANK))]
        if low == 2 and len(sides) < 2:
            continue
        if sides and rng.random() < 0.125:
            sides[rng.randrange(len(sides))] = 0
        if math.prod(sides) <= MAX_NUMEL:
            return tuple(sides)


def basic_index(rng: Random, shape: Shape) -> tuple:
    """A basic indexing tuple: ints and slices with a positive step, drawn as
    getitem's arguments are (strategies.view_draws); setitem's index too."""
    return view_draws.basic_index(RandomPick(rng), shape)


def indexed_shape(shape: Shape, index: tuple) -> Shape:
    return np.empty(shape, dtype=np.int8)[index].shape


def expand_shape(rng: Random, shape: Shape) -> Shape:
    """A shape `shape` expands to, drawn as expand's arguments are
    (strategies.view_draws)."""
    return view_draws.expand_shape(RandomPick(rng), shape)


def broadcastable_to(rng: Random, shape: Shape) -> Shape:
    """A shape that broadcasts to `shape` (in-place operands, copy_ sources)."""
    kept = shape[len(shape) - rng.randint(0, len(shape)) :]
    return tuple(n if rng.random() < 0.5 else 1 for n in kept)
