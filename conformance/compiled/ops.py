"""Compile-only ops: what functionalization finds hardest and the reference
model does not cover. Eager torch is their reference; the compiled call is
held to it.

Each row is a torch template over {t0} {p0} ... (as the oracle's table) and
a sampler that picks parameters fitting a tensor, from a random.Random.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from random import Random

import torch

from conformance.differential import functions
from oracle import OPS

# A custom autograd.Function that writes its input in place and says so with
# mark_dirty. Kept as source: the programs and the repro scripts define it.
MARK_DIRTY_SOURCE = '''\
class DoubleInPlace(torch.autograd.Function):
    """x.mul_(2) in place, marked dirty; gradient 2 * g."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2
'''


def namespace() -> dict:
    """Globals for generated programs: torch and the custom Function."""
    scope: dict = {"torch": torch, **functions.namespace()}  # the differential's too
    exec(compile(MARK_DIRTY_SOURCE, "<mark_dirty>", "exec"), scope)
    return scope


def storage_numel(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes() // max(t.element_size(), 1)


def _layout(rng: Random, room: int, overlap: bool) -> tuple | None:
    """(size, stride, offset) of a rank 1 or 2 view inside `room` elements:
    gapped, transposed or, when `overlap`, sharing elements."""
    for _ in range(8):
        if rng.random() < 0.5:
            n = rng.randint(1, 3)
            s = rng.randint(0 if overlap else 1, 3)
            size, stride = (n,), (s,)
        else:
            a, b = rng.randint(1, 3), rng.randint(1, 3)
            inner = rng.randint(1, 2)
            if overlap and rng.random() < 0.5:
                outer = rng.randint(1, b * inner)  # rows share elements (unfold-like)
                size, stride = (a, b), (outer, inner)
            elif rng.random() < 0.5:
                size, stride = (a, b), (b * inner + rng.randint(0, 1), inner)
            else:
                size, stride = (a, b), (inner, a * inner + rng.randint(0, 1))  # transposed
        span = sum((n - 1) * s for n, s in zip(size, stride, strict=True)) + 1
        if span <= room:
            return size, stride, rng.randint(0, room - span)
    return None


def _overlaps(size: tuple, stride: tuple) -> bool:
    seen: set[int] = set()
    for i in range(size[0]):
        for j in range(size[1] if len(size) > 1 else 1):
            k = i * stride[0] + (j * stride[1] if len(size) > 1 else 0)
            if k in seen:
                return True
            seen.add(k)
    return False


def _as_strided(rng: Random, t: torch.Tensor, overlap: bool = False) -> tuple | None:
    found = _layout(rng, storage_numel(t), overlap)
    if found is None:
        return None
    size, stride, offset = found
    return (size, stride, offset)


def _as_strided_copy(rng: Random, t: torch.Tensor) -> tuple | None:
    # relative to the input's own storage offset (None), as in pytorch#133512
    room = storage_numel(t) - t.storage_offset()
    found = _layout(rng, room, overlap=True)
    if found is None:
        return None
    size, stride, _ = found
    return (size, stride)


def _narrow(rng: Random, t: torch.Tensor) -> tuple | None:
    dims = [d for d in range(t.dim()) if t.shape[d] > 0]
    if not dims:
        return None
    d = rng.choice(dims)
    start = rng.randint(0, t.shape[d] - 1)
    return (d, start, rng.randint(1, t.shape[d] - start))


def _diagonal(rng: Random, t: torch.Tensor) -> tuple | None:
    if t.dim() < 2:
        return None
    d1, d2 = rng.sample(range(t.dim()), 2)
    return (rng.randint(-1, 1), d1, d2)


def _unfold(rng: Random, t: torch.Tensor) -> tuple | None:
    dims = [d for d in range(t.dim()) if t.shape[d] > 0] or ([0] if t.dim() == 0 else [])
    if not dims:
        return None
    d = rng.choice(dims)
    n = t.shape[d] if t.dim() else 1
    size = rng.randint(1, n)
    return (d, size, rng.randint(1, 2))


# Rows of oracle.OPS the compiled differential leaves out: its compiled
# programs stop before the first of them (motifs.compiled_programs). The out=
# rows (add_out, mul_out, exp_out, neg_out) and the _foreach_ in-place rows
# (foreach_{add,mul}_{s,l}_) are drawn: triaged over ten ci seeds under
# aot_eager (docs/findings.md, "out= and _foreach_ let into compiled
# programs"). resize_ and set_ (oracle/write_ops.py) are not triaged under
# torch.compile yet: a first aot_eager run of 60 programs built of the write
# motifs diverged in some sixteen ways (zero .grad where eager has None, input
# mutations, refused resizes and casts) that no one has minimized. Let in for
# two ci seeds (2026-12-02), each failed at once: seed 0 on a suite bug, an
# input grown by resize_ compared on its new elements, which are uninitialized
# memory in eager (compile.input_mutation, flaky; the comparison must skip
# them, as the reference model leaves them undefined); seed 1 on
# `x.grad = g; x.resize_((54,))` inside the compiled function, which raises
# "AssertionError: 1 != 4" at the call where eager runs (reproduced standalone,
# torch only, on 2.13.0; not searched upstream). Eager torch is still held
# to the reference model on them.
EAGER_ONLY = tuple(
    name for name, spec in OPS.items() if spec.impl == "writes" and name in ("resize_", "set_")
)
# Node hooks: one CompiledFunctionBackward covers every output of a compiled
# graph, so a pre-hook on one output's grad_fn changes all their gradients
# (aot_eager, 2.13.0): not eager's per-op nodes, nothing to compare.
EAGER_ONLY += tuple(n for n, s in OPS.items() if s.impl == "register_node_hook")


@dataclass(frozen=True)
class CompileOp:
    name: str
    template: str  # over {t0} and {p0} {p1} ...
    sample: Callable[[Random, torch.Tensor], tuple | None]
    view: bool = False  # the result is a view of t0
    inplace: bool = False  # writes t0's values or geometry and returns it
    statement: bool = False
    floating: bool = False  # takes float and complex only

    def source(self, names: list[str], params: tuple) -> str:
        values = {f"t{i}": n for i, n in enumerate(names)}
        values.update({f"p{i}": repr(p) for i, p in enumerate(params)})
        return self.template.format(**values)


def _no_params(rng: Random, t: torch.Tensor) -> tuple:
    return ()


COMPILE_OPS: dict[str, CompileOp] = {
    op.name: op
    for op in (
        CompileOp("as_strided", "{t0}.as_strided({p0}, {p1}, {p2})", _as_strided, view=True),
        CompileOp(
            "as_strided_overlapping",
            "{t0}.as_strided({p0}, {p1}, {p2})",
            lambda rng, t: _as_strided(rng, t, overlap=True),
            view=True,
        ),
        CompileOp("as_strided_", "{t0}.as_strided_({p0}, {p1}, {p2})", _as_strided, inplace=True),
        CompileOp("as_strided_copy", "torch.as_strided_copy({t0}, {p0}, {p1})", _as_strided_copy),
        CompileOp("narrow", "{t0}.narrow({p0}, {p1}, {p2})", _narrow, view=True),
        CompileOp("diagonal", "{t0}.diagonal({p0}, {p1}, {p2})", _diagonal, view=True),
        CompileOp("unfold", "{t0}.unfold({p0}, {p1}, {p2})", _unfold, view=True),
        CompileOp(
            "mark_dirty", "DoubleInPlace.apply({t0})", _no_params, inplace=True, floating=True
        ),
        CompileOp("graph_break", "torch._dynamo.graph_break()", _no_params, statement=True),
    )
}

# the ones whose result may have elements sharing memory: never written to
OVERLAPPING = ("as_strided_overlapping", "unfold")


def overlapping(size: tuple, stride: tuple) -> bool:
    """Whether a view of this geometry has elements that share memory."""
    if any(n == 0 for n in size):
        return False
    if len(size) == 1:
        return size[0] > 1 and stride[0] == 0
    return _overlaps(size, stride)
