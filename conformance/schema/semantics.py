"""What an argument means where the schema cannot say: which results of a
call are specified at all, and which are stable enough that two calls must
agree.

The sweep checks that an out= tensor of the right shape holds what the same
call wrote into an empty one. Two things the schema does not tell make that
check wrong on some calls, and each entry below quotes the documentation it
rests on:

- a `bool[N] output_mask` argument says which results the caller wants; a
  result it does not ask for need not be computed, so its out= tensor holds
  nothing specified;
- a pseudoinverse or least-squares solution is a discontinuous function of
  a matrix whose singular values are near the rank cut-off: on
  rank-deficient or ill-conditioned input two correct kernels (one writing
  into contiguous memory, one into other strides) may return different
  results.

The calls outside these cases, the results the mask asks for and the
well-conditioned matrices, are still compared; the others are counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from conformance.schema.signature import Signature


@dataclass(frozen=True)
class Semantics:
    """One argument meaning the sweep follows."""

    name: str
    applies: Callable[[Signature], bool]
    quote: str  # the documentation's sentence
    source: str  # where it is


def _base(sig: Signature) -> str:
    return sig.name.split("::")[-1].split(".")[0].lstrip("_")


def _has_output_mask(sig: Signature) -> bool:
    param = sig.param("output_mask")
    return param is not None and param.type.startswith("List[bool]")


_RANK_CUT = ("linalg_pinv", "linalg_lstsq")

OUTPUT_MASK = Semantics(
    "output_mask",
    _has_output_mask,
    "`grid_sampler_2d_backward` takes in `output_mask` to optimize performance for the case "
    "where `input` doesn't require gradient.",
    "aten/src/ATen/native/native_functions.yaml (grid_sampler_2d_backward); every "
    "`bool[N] output_mask` argument (convolution_backward, native_layer_norm_backward, ...) "
    "selects the gradients to compute in the same way",
)
RANK_CUT = Semantics(
    "rank cut-off",
    lambda sig: _base(sig) in _RANK_CUT,
    "The singular values (or the norm of the eigenvalues when hermitian= True) that are below "
    "max(atol, sigma_1 * rtol) threshold are treated as zero and discarded in the computation "
    "[...] rcond is used to determine the effective rank of the matrices in A",
    "https://pytorch.org/docs/stable/generated/torch.linalg.pinv.html and "
    "https://pytorch.org/docs/stable/generated/torch.linalg.lstsq.html",
)


def _grid_sampler_backward_consistent(kwargs: dict[str, Any]) -> bool:
    grad, inp, grid = (kwargs.get(n) for n in ("grad_output", "input", "grid"))
    if not all(isinstance(t, torch.Tensor) for t in (grad, inp, grid)):
        return True  # the kernel checks what it is given; nothing to add
    if grid.dim() < 3 or inp.dim() != grid.dim():
        return True  # refused by the kernel's own checks
    output = (inp.shape[0], inp.shape[1], *grid.shape[1:-1])
    return tuple(grad.shape) == output and grid.shape[0] == inp.shape[0]


GRAD_OF_OUTPUT = Semantics(
    "grad_output of the forward's output",
    lambda sig: _base(sig).startswith("grid_sampler_") and _base(sig).endswith("_backward"),
    "input of shape (N, C, H_in, W_in) and grid of shape (N, H_out, W_out, 2), the output "
    "will have shape (N, C, H_out, W_out)",
    "https://pytorch.org/docs/stable/generated/torch.nn.functional.grid_sample.html: a "
    "backward's grad_output is the gradient of that output, and the backward kernels trust "
    "its shape (on another one they read memory they do not own: values vary run to run)",
)
_CONTRACTS = {GRAD_OF_OUTPUT: _grid_sampler_backward_consistent}
TABLE = (OUTPUT_MASK, RANK_CUT, GRAD_OF_OUTPUT)


def broken_contract(sig: Signature, kwargs: dict[str, Any]) -> str | None:
    """Why these arguments are outside the operator's documented space (the
    call is not made: its results are undefined), or None."""
    for semantics, holds in _CONTRACTS.items():
        if semantics.applies(sig) and not holds(kwargs):
            return f"arguments outside the operator's contract ({semantics.name})"
    return None


@dataclass(frozen=True)
class IntEnum:
    """An `int` argument that stands for an enum: only its values are drawn.
    Outside them the kernels read memory they never wrote (every release
    from 2.0 to 2.14 returns uninitialized values and leaves out= as it was:
    soft_margin_loss(x, y, -1), grid_sampler_2d(..., interpolation_mode=3)),
    which is undefined input, not a schema's promise."""

    values: tuple[int, ...]
    quote: str
    source: str


_GRID_SAMPLE = "https://pytorch.org/docs/stable/generated/torch.nn.functional.grid_sample.html"
INT_ENUMS = {
    "reduction": IntEnum(
        (0, 1, 2),
        "reduction (str, optional) - Specifies the reduction to apply to the output: "
        "'none' | 'mean' | 'sum'.",
        "torch.nn.functional's losses; torch/nn/_reduction.py maps them to 0, 1, 2",
    ),
    "interpolation_mode": IntEnum(
        (0, 1, 2),
        "mode (str) - interpolation mode to calculate output values 'bilinear' | 'nearest' | "
        "'bicubic'.",
        f"{_GRID_SAMPLE}; torch.nn.functional.grid_sample maps them to 0, 1, 2",
    ),
    "padding_mode": IntEnum(
        (0, 1, 2),
        "padding_mode (str) - padding mode for outside grid values 'zeros' | 'border' | "
        "'reflection'.",
        f"{_GRID_SAMPLE}; torch.nn.functional.grid_sample maps them to 0, 1, 2",
    ),
}

# The error of a backward-stable solve grows with the condition number times
# the dtype's epsilon; below this it stays well within the sweep's rtol 1e-2.
_MAX_CONDITION_TIMES_EPS = 1e-3


def unasked_outputs(sig: Signature, kwargs: dict[str, Any]) -> set[str]:
    """The out= arguments whose result `output_mask` does not ask for."""
    if not OUTPUT_MASK.applies(sig):
        return set()
    mask = kwargs.get("output_mask")
    if mask is None:
        return set()
    outs = [p.name for p in sig.params if p.is_out]
    return {name for name, wanted in zip(outs, mask, strict=False) if not wanted}


def unstable_reason(sig: Signature, kwargs: dict[str, Any]) -> str | None:
    """Why this call's results need not agree between two correct kernels,
    or None when they must (RANK_CUT: a matrix near its rank cut-off)."""
    if not RANK_CUT.applies(sig):
        return None
    a = kwargs.get("self", kwargs.get("A", kwargs.get("input")))
    if not isinstance(a, torch.Tensor) or a.dim() < 2 or a.numel() == 0:
        return None
    if not (a.is_floating_point() or a.is_complex()):
        return None
    matrix = a.detach().to("cpu", torch.complex128 if a.is_complex() else torch.float64)
    if kwargs.get("hermitian"):  # only the lower triangle is read
        lower = matrix.tril()
        matrix = lower + lower.tril(-1).mH
    values = torch.linalg.svdvals(matrix)
    if not bool(torch.isfinite(values).all()):
        return "a matrix with non-finite entries"
    eps = torch.finfo(a.dtype).eps
    largest = values.amax(dim=-1)
    smallest = values.amin(dim=-1)
    if bool((largest == 0).any()):
        return "a zero matrix: every singular value is at the rank cut-off"
    ratio = float((smallest / largest).min())
    if ratio == 0 or eps / ratio > _MAX_CONDITION_TIMES_EPS:
        return "a rank-deficient or ill-conditioned matrix: its rank cut-off decides the result"
    if _cut_given(kwargs):
        return "a rank cut-off given by the call (atol, rtol or rcond): the result follows it"
    return None


def _cut_given(kwargs: dict[str, Any]) -> bool:
    """A tolerance other than the default: it may cut at any singular value."""
    for name in ("atol", "rtol", "rcond"):
        value = kwargs.get(name)
        if value is None:
            continue
        if isinstance(value, torch.Tensor):
            if value.numel() and bool((value != 0).any()):
                return True
        elif value:
            return True
    return False
