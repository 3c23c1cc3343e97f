"""Which ATen operators the build has, and which a run checks.

Every ATen overload comes from the build itself
(`torch._C._jit_get_all_schemas()`), so a vendor build's operators are the
ones it registered. The default run checks a core of operators every
backend implements first, plus a seeded draw from the rest; `--schema all`
(and the thorough profile) checks every one.
"""

from __future__ import annotations

import random
from functools import cache

import torch

from conformance.schema.signature import Signature

# Operators every backend implements first: one of each kind of schema (a
# function, a view, an in-place variant, an out= variant, a list result).
CORE = (
    "aten::neg",
    "aten::neg_",
    "aten::neg.out",
    "aten::sin",
    "aten::abs",
    "aten::abs.out",
    "aten::add.Tensor",
    "aten::add_.Tensor",
    "aten::add.out",
    "aten::mul.Tensor",
    "aten::clone",
    "aten::transpose.int",
    "aten::view",
    "aten::expand",
    "aten::slice.Tensor",
    "aten::select.int",
    "aten::split.Tensor",
    "aten::sum",
    "aten::max.dim",
    "aten::copy_",
    "aten::fill_.Scalar",
    "aten::zero_",
)

# Operators that cannot be called with drawn arguments without risking the
# process: they trust their arguments, by design, and read or write out of
# bounds when the arguments are wrong (found by running them, see
# docs/schema.md).
UNSAFE: dict[str, str] = {}


@cache
def all_overloads() -> tuple[torch._ops.OpOverload, ...]:
    """Every ATen overload of this build, in schema order."""
    found = []
    seen = set()
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        key = (schema.name, schema.overload_name)
        if key in seen:
            continue
        seen.add(key)
        packet = getattr(torch.ops.aten, schema.name.removeprefix("aten::"), None)
        if packet is None:
            continue
        try:
            found.append(getattr(packet, schema.overload_name or "default"))
        except AttributeError:
            continue
    return tuple(found)


@cache
def annotated_count() -> int:
    """How many of the build's ATen schemas carry an alias or mutation annotation."""
    return sum(1 for op in all_overloads() if Signature.of(op._schema).annotated)


def name_of(op: torch._ops.OpOverload) -> str:
    return Signature.of(op._schema).name


def by_name() -> dict[str, torch._ops.OpOverload]:
    return {name_of(op): op for op in all_overloads()}


def composite_implicit(op: torch._ops.OpOverload) -> bool:
    """Decomposed above the dispatch mode: its `Tensor(a)` results *may* alias
    (reshape and contiguous return self or a copy)."""
    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(
            op.name(), "CompositeImplicitAutograd"
        )
    except RuntimeError:  # a TorchScript builtin, not a dispatcher operator
        return False


@cache
def functional_twin(op: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The overload of the same operator that takes the same arguments
    without out=: `abs.out` -> `abs`, `add.out` -> `add.Tensor`."""
    schema = op._schema
    names = [
        a.name
        for a in schema.arguments
        if not (a.kwarg_only and a.alias_info and a.alias_info.is_write)
    ]
    packet = getattr(torch.ops.aten, schema.name.removeprefix("aten::"))
    for overload in packet.overloads():
        other = getattr(packet, overload)
        args = other._schema.arguments
        if any(a.alias_info and a.alias_info.is_write for a in args):
            continue
        if [a.name for a in args] == names:
            return other
    return None


def select(spec: str, run_seed: int, sample: int = 24) -> list[torch._ops.OpOverload]:
    """The operators a run checks: `all`, `sample` (the core and `sample`
    more drawn with the run's seed), or comma-separated names and globs
    (`aten::add*,aten::neg`)."""
    import fnmatch

    table = by_name()
    if spec == "all":
        return list(table.values())
    if spec == "sample":
        core = [table[n] for n in CORE if n in table]
        rest = sorted(
            n for n in table if n not in CORE and Signature.of(table[n]._schema).touches_tensors
        )
        drawn = random.Random(run_seed).sample(rest, min(sample, len(rest)))
        return core + [table[n] for n in drawn]
    chosen = []
    for pattern in (p.strip() for p in spec.split(",") if p.strip()):
        pattern = pattern if pattern.startswith("aten::") else f"aten::{pattern}"
        matches = [op for n, op in table.items() if fnmatch.fnmatchcase(n, pattern)]
        if not matches:
            raise ValueError(f"--schema {pattern!r} matches no ATen operator of this build")
        chosen += [m for m in matches if m not in chosen]
    return chosen
