"""Programs: chains of tensor operations, as data.

A program is a list of steps over a growing pool of tensors: a step names an
op of the oracle's table, the pool indices of its tensor operands and its
Python parameters. A step that makes a new tensor appends it to the pool, so
`t3` in a listing is the fourth tensor made. The same data drives torch, the
oracle, the printed counterexample and the standalone repro script.

This module also holds the strategies for ops' parameters that depend only on
shapes (indices, dims, view shapes); which op comes next, and with which
operands, is decided where the oracle's state is known (conformance).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Leaf:
    """A new leaf tensor, built from fresh values."""

    values: np.ndarray  # in the dtype's compute dtype
    dtype: str
    device: str
    requires_grad: bool
    inference: bool = False  # made under torch.inference_mode()

    def source(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        where = f"dtype=torch.{self.dtype}, device={self.device!r}{grad}"
        if self.values.size == 0:
            # a nested empty list loses the shape, and reshaping after
            # requires_grad=True would make a non-leaf
            return f"torch.empty({tuple(self.values.shape)!r}, {where})"
        return f"torch.tensor({self.values.tolist()!r}, {where})"


@dataclass(frozen=True)
class Step:
    op: str  # "leaf", or a row of oracle.OPS
    tensors: tuple[int, ...] = ()  # pool indices of the tensor operands
    params: tuple = ()
    no_grad: bool = False
    leaf: Leaf | None = field(default=None, compare=False)


@dataclass
class Program:
    steps: list[Step]
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


# --- parameter strategies -----------------------------------------------------


def dims(shape: Shape) -> st.SearchStrategy[int]:
    return st.integers(0, len(shape) - 1)


def basic_indices(shape: Shape) -> st.SearchStrategy[tuple]:
    """Basic indexing tuples: ints and slices with a positive step."""

    def one(n: int) -> st.SearchStrategy:
        whole = st.just(slice(None))
        stepped = st.builds(
            slice,
            st.integers(0, max(n, 0)) | st.none(),
            st.integers(0, max(n, 0)) | st.none(),
            st.integers(1, 3) | st.none(),
        )
        taken = st.integers(0, n - 1) if n > 0 else st.nothing()
        return st.one_of(taken, stepped, whole)

    if not shape:
        return st.just(())
    return st.integers(1, len(shape)).flatmap(lambda k: st.tuples(*(one(n) for n in shape[:k])))


def indexed_shape(shape: Shape, index: tuple) -> Shape:
    return np.empty(shape, dtype=np.int8)[index].shape


def view_shapes(shape: Shape) -> st.SearchStrategy[Shape]:
    """Shapes with the same number of elements: flattened, split, merged, with 1s."""
    n = math.prod(shape)
    candidates = {(n,), shape + (1,), (1,) + shape}
    if len(shape) >= 2:
        candidates.add(shape[:-2] + (shape[-2] * shape[-1],))
        candidates.add((shape[0] * shape[1],) + shape[2:])
    for d, size in enumerate(shape):
        for f in (2, 3):
            if size % f == 0 and size > f:
                candidates.add(shape[:d] + (f, size // f) + shape[d + 1 :])
    if n == 0:
        candidates.add((0,))
    return st.sampled_from(sorted(candidates))


def expand_shapes(shape: Shape) -> st.SearchStrategy[Shape]:
    """Shapes `shape` expands to: size-1 dims grown, maybe a new leading dim."""
    grown = st.tuples(*(st.integers(1, 3) if n == 1 else st.just(n) for n in shape))
    lead = st.lists(st.integers(1, 2), max_size=1).map(tuple)
    return st.tuples(lead, grown).map(lambda p: p[0] + p[1])


def broadcastable_to(shape: Shape) -> st.SearchStrategy[Shape]:
    """Shapes that broadcast to `shape` (for in-place operands and copy_ sources)."""
    if not shape:
        return st.just(())
    return st.integers(0, len(shape)).flatmap(
        lambda k: st.tuples(*(st.sampled_from([n, 1]) for n in shape[len(shape) - k :]))
    )
