"""Memory layouts as plans: a contiguous root and the view steps applied to it.

A plan is data, so the same steps apply to a NumPy array (to know which root
element each element of the result reads) and to a torch tensor, and print
as the Python that builds the layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

LAYOUTS = ("contiguous", "transposed", "strided", "offset", "expanded")

# Layouts that can be written to in place: an expanded tensor whose stride-0
# dims have more than one element cannot.
WRITABLE_LAYOUTS = ("contiguous", "transposed", "strided", "offset")


@dataclass(frozen=True)
class ViewStep:
    """One view op: ("permute", dims), ("slice", dim, start, stop, step),
    ("select", dim, index) or ("expand", shape)."""

    op: str
    args: tuple

    def source(self) -> str:
        """The step as Python applied to a tensor, e.g. `.permute(1, 0)`."""
        if self.op == "slice":
            dim, start, stop, step = self.args
            index = (
                ":, " * dim
                + f"{start}:{'' if stop is None else stop}"
                + (f":{step}" if step != 1 else "")
            )
            return f"[{index}]"
        if self.op == "select":
            return f".select({self.args[0]}, {self.args[1]})"
        if self.op == "permute":
            return f".permute({', '.join(map(str, self.args[0]))})"
        return f".expand({', '.join(map(str, self.args[0])) or '()'})"


def apply_numpy(array: np.ndarray, steps: tuple[ViewStep, ...]) -> np.ndarray:
    for step in steps:
        if step.op == "permute":
            array = array.transpose(step.args[0])
        elif step.op == "slice":
            dim, start, stop, stride = step.args
            array = array[(slice(None),) * dim + (slice(start, stop, stride),)]
        elif step.op == "select":
            dim, index = step.args
            array = array[(slice(None),) * dim + (index,)]
        elif step.op == "expand":
            array = np.broadcast_to(array, step.args[0])
        else:  # pragma: no cover - plans are built below
            raise ValueError(step.op)
    return array


@dataclass(frozen=True)
class Layout:
    kind: str
    shape: tuple[int, ...]  # the logical shape of the result
    root_shape: tuple[int, ...]  # the contiguous tensor the steps start from
    steps: tuple[ViewStep, ...]

    def index_map(self) -> np.ndarray:
        """For each element of the result, its flat index in the root."""
        root = np.arange(math.prod(self.root_shape), dtype=np.int64).reshape(self.root_shape)
        return np.array(apply_numpy(root, self.steps), order="C")

    @property
    def overlapping(self) -> bool:
        """Some memory slot is read by more than one element (expand)."""
        index = self.index_map()
        return index.size > 0 and np.unique(index).size < index.size

    def source(self) -> str:
        return "".join(step.source() for step in self.steps)

    def __str__(self) -> str:
        return self.kind if not self.steps else f"{self.kind} (root{self.source()})"


def layout_kinds_for(shape: tuple[int, ...]) -> tuple[str, ...]:
    """The layouts that are distinct from contiguous for a shape."""
    kinds = ["contiguous", "offset"]
    if len(shape) >= 1:
        kinds.append("strided")
    if len(shape) >= 2:
        kinds.append("transposed")
    kinds.append("expanded")
    return tuple(k for k in LAYOUTS if k in kinds)


@st.composite
def layouts(draw: st.DrawFn, shape: tuple[int, ...], kinds: tuple[str, ...] = LAYOUTS) -> Layout:
    """A plan whose result has `shape`, of one of `kinds` that fits the shape."""
    possible = [k for k in layout_kinds_for(shape) if k in kinds] or ["contiguous"]
    kind = draw(st.sampled_from(possible))
    rank = len(shape)
    if kind == "contiguous":
        return Layout(kind, shape, shape, ())
    if kind == "transposed":
        perm = draw(st.permutations(range(rank)).filter(lambda p: list(p) != list(range(rank))))
        root = [0] * rank
        for i, p in enumerate(perm):
            root[p] = shape[i]
        return Layout(kind, shape, tuple(root), (ViewStep("permute", (tuple(perm),)),))
    if kind == "strided":
        dim = draw(st.integers(0, rank - 1))
        step = draw(st.integers(2, 3))
        start = draw(st.integers(0, step - 1))
        root = list(shape)
        root[dim] = shape[dim] * step
        return Layout(kind, shape, tuple(root), (ViewStep("slice", (dim, start, None, step)),))
    if kind == "offset":
        skip = draw(st.integers(1, 3))
        if rank == 0:
            return Layout(kind, shape, (skip + 1,), (ViewStep("select", (0, skip)),))
        dim = draw(st.integers(0, rank - 1))
        root = list(shape)
        root[dim] = shape[dim] + skip
        steps = (ViewStep("slice", (dim, skip, skip + shape[dim], 1)),)
        return Layout(kind, shape, tuple(root), steps)
    # expanded: some dims of the root are 1 and leading dims may be new
    new_dims = draw(st.integers(0, rank))
    ones = draw(
        st.lists(st.integers(new_dims, max(new_dims, rank - 1)), unique=True, max_size=rank)
        if rank > new_dims
        else st.just([])
    )
    root = tuple(1 if d in ones else shape[d] for d in range(new_dims, rank))
    return Layout(kind, shape, root, (ViewStep("expand", (shape,)),))
