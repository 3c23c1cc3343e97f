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

# Operators (every overload, in-place and out= variant of each) that crash
# the process when called with drawn arguments: internal helpers and backward
# kernels that trust their arguments, by design. Found by calling every ATen
# operator of torch 2.13.0 on the CPU with the sweep's generator, restarting
# after each crash (docs/schema.md).
_SEGFAULT = "crashes the process (SIGSEGV) on drawn arguments: it trusts its arguments"
_SIGFPE = "crashes the process (SIGFPE, an integer division by zero) on drawn arguments"
UNSAFE_PACKETS: dict[str, str] = {
    "_batch_norm_impl_index_backward": _SEGFAULT,
    "_batch_norm_no_update": _SEGFAULT,
    "_chunk_cat": _SEGFAULT,
    "_scaled_dot_product_flash_attention_for_cpu_backward": _SIGFPE,
    "_unpack_dual": _SEGFAULT,
    "_convert_indices_from_csr_to_coo": _SEGFAULT,
    "_dyn_quant_pack_4bit_weight": _SIGFPE,
    "_cummax_helper": _SEGFAULT,
    "_cummin_helper": _SEGFAULT,
    "_fft_c2r": _SEGFAULT,
    "_masked_softmax": _SIGFPE,
    "_masked_softmax_backward": _SIGFPE,
    "_native_batch_norm_legit": _SEGFAULT,
    "_foreach_copy": _SEGFAULT,
    "_nnpack_spatial_convolution": _SEGFAULT,
    "_slow_conv2d_backward": _SEGFAULT,
    "_thnn_differentiable_gru_cell_backward": _SEGFAULT,
    "_thnn_differentiable_lstm_cell_backward": _SEGFAULT,
    "_transform_bias_rescale_qkv": _SIGFPE,
    "_weight_norm": _SEGFAULT,
    "_weight_norm_interface": _SIGFPE,
    "adaptive_max_pool3d_backward": _SEGFAULT,
    "batch_norm_backward": _SIGFPE,
    "mkldnn_rnn_layer": _SIGFPE,
    "native_batch_norm_backward": _SEGFAULT,
    "normal_functional": _SEGFAULT,
    "quantized_lstm_cell": _SEGFAULT,
    "rrelu_with_noise": _SEGFAULT,
}


# Single overloads, where the operator's other overloads are safe.
UNSAFE_OVERLOADS: dict[str, str] = {
    "aten::to.prim_Device": _SEGFAULT + " (a TorchScript builtin taking dtype as a number)",
}


def unsafe_reason(name: str) -> str | None:
    """Why an operator is not called, if it is on the unsafe list."""
    packet = name.removeprefix("aten::").split(".")[0].rstrip("_")
    return UNSAFE_OVERLOADS.get(name) or UNSAFE_PACKETS.get(packet)


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


def is_public(op: torch._ops.OpOverload) -> bool:
    """An operator users call: the default sample draws from these alone, so
    that it never calls an internal kernel that trusts its arguments (those
    run under --schema all, in a child process that may crash)."""
    base = op._schema.name.removeprefix("aten::")
    return (
        "Tensor" in str(op._schema)
        and not base.startswith("_")
        and "backward" not in base
        and unsafe_reason(name_of(op)) is None
    )


@cache
def annotated_count() -> int:
    """How many of the build's ATen schemas carry an alias or mutation annotation."""
    return sum(
        1
        for op in all_overloads()
        if any(a.alias_info is not None for a in [*op._schema.arguments, *op._schema.returns])
    )


def name_of(op: torch._ops.OpOverload) -> str:
    """aten::add.Tensor; aten::neg for a default overload."""
    schema = op._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


@cache
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


def select(spec: str, run_seed: int, sample: int = 10) -> list[torch._ops.OpOverload]:
    """The operators a run checks: `all`, `sample` (the core and `sample`
    more drawn with the run's seed), or comma-separated names and globs
    (`aten::add*,aten::neg`)."""
    import fnmatch

    table = by_name()
    if spec == "all":
        return list(table.values())
    if spec == "sample":
        core = [table[n] for n in CORE if n in table]
        rest = sorted(n for n in table if n not in CORE and is_public(table[n]))
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
