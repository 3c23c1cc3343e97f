"""Facts about the torch build under test, in the one place every family asks:
its release, the differences between releases that the suite models, and the
kernels it has.

Kernels are probed, never assumed. A build may lack a kernel for an op, a dtype
and a device (torch 2.0 has no float16 `exp` on the CPU); a call that raises
"not implemented for" is then checked by running the same op on fresh,
contiguous operands of the same dtypes and device. Only when that narrow probe
fails the same way is the combination skipped, and counted with its reason
("not in this build: exp for float16 on cpu"). A kernel that exists and
misbehaves stays a violation. Each probe runs once per process.

Release differences are data (`DIFFERENCES`), each with the pull request that
made it; docs/releases.md explains them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from oracle import Release
from strategies.tensors import TORCH_DTYPES

__all__ = [
    "RELEASE",
    "DIFFERENCES",
    "ReleaseDifference",
    "MissingKernel",
    "MISSING",
    "ORACLE_RELEASE",
    "has_older",
    "in_releases",
    "is_missing_kernel",
    "lacks",
    "missing_in",
    "oracle_release",
    "probe",
    "reset_missing",
]


def _release(version: str) -> Version:
    """`2.13.0+cpu`, `2.14.0a0+git...` -> 2.13.0, 2.14.0: the release alone."""
    return Version(".".join(map(str, Version(version).release)))


RELEASE: Version = _release(torch.__version__)


def in_releases(spec: str, release: Version = RELEASE) -> bool:
    """Whether the build's release is in a PEP 440 range (`">=2.0,<2.5"`)."""
    return release in SpecifierSet(spec)


@dataclass(frozen=True)
class ReleaseDifference:
    """Behaviour that changed between releases. `older` is what the releases in
    `versions` do, `newer` what the later ones do; `changed_by` is the pull
    request or release note that made the change."""

    name: str
    versions: str
    older: str
    newer: str
    changed_by: str


DIFFERENCES: dict[str, ReleaseDifference] = {
    d.name: d
    for d in (
        ReleaseDifference(
            "tensor_base_name",
            "<2.2",
            "the C base class of torch.Tensor is torch._C._TensorBase",
            "it is torch._C.TensorBase (torch._C._TensorBase stays as an alias)",
            "https://github.com/pytorch/pytorch/pull/109940",
        ),
        ReleaseDifference(
            "full_slice_write_is_view_write",
            # 2.0.1, 2.4.1, 2.6.0 and 2.8.0 write a view, 2.9.1 and later x itself
            # (bisected with the release wheels, docs/releases.md)
            "<2.9",
            "`x[:] = v` (a whole-dimension slice without its stop, or with a stop past the "
            "end) writes through a view of x: on a leaf that requires grad it raises the "
            "view-of-a-leaf error",
            "`x[:] = v` writes x itself and raises the leaf error",
            "not found upstream (pytorch/pytorch#119625, 2.3, shows the old test); bisected",
        ),
        ReleaseDifference(
            "setitem_fill_skips_overlap_check",
            # 2.0.1 fills, 2.4.1 raises; the releases between were not tested
            "<2.4",
            "`x[index] = v` with a scalar or 0-d v fills memory that several elements of "
            "x share (x.expand(...)) without raising, like fill_",
            "it raises 'unsupported operation: more than one element of the written-to "
            "tensor refers to a single memory location'",
            "not found upstream; seen on the release wheels (docs/releases.md)",
        ),
        ReleaseDifference(
            "mean_saves_self",
            # 2.0.1 saves, 2.4.1 does not; the releases between were not tested
            "<2.4",
            "`x.mean()` saves x for backward: a second backward through it raises, and so "
            "does a backward after x was written in place",
            "it saves only x's sizes: neither raises",
            "not found upstream; seen on the release wheels (docs/releases.md)",
        ),
        ReleaseDifference(
            "clamp_grad_at_bounds",
            # 2.13.0 (and 2.0.1 to 2.9.1) pass 1, 2.14.1 passes 0
            "<2.14",
            "clamp(x, lo, hi)'s gradient is 1 where x equals lo or hi (the subgradient "
            "PyTorch chose in 2018, pytorch/pytorch#7049)",
            "it is 0 there: the minimum-norm subgradient, as relu6 and hardtanh have",
            "https://github.com/pytorch/pytorch/pull/191142 "
            "(for https://github.com/pytorch/pytorch/issues/184572)",
        ),
        ReleaseDifference(
            "resize_skips_version_bump",
            "<2.1",
            "`x.resize_(shape)` leaves x's version counter as it was",
            "it bumps x's version when the shape changes (not for the same shape)",
            "https://github.com/pytorch/pytorch/pull/96403 "
            "(for https://github.com/pytorch/pytorch/issues/93776)",
        ),
        ReleaseDifference(
            "foreach_inplace_unrecorded",
            "<2.1",
            "torch._foreach_add_ and the other _foreach_ in-place ops write without autograd "
            "recording them: no grad_fn changes, no gradient flows through the write",
            "each write is recorded as add_/mul_ would be, and a leaf that requires grad is "
            "refused",
            "https://github.com/pytorch/pytorch/pull/96405",
        ),
        ReleaseDifference(
            "copy_same_memory_ignores_bits",
            # measured on the release wheels: 2.0.1 writes nothing, 2.4.1 the conjugate
            "<2.4",
            "`x.conj().copy_(x)` (src the same memory, geometry and dtype as self, with "
            "another conjugate or negative bit) takes src for self's own data and writes "
            "nothing",
            "it writes the conjugate (the negation): x becomes x.conj()",
            "not found upstream; seen on the release wheels",
        ),
        ReleaseDifference(
            "retain_grad_stays_before_view_write",
            "<2.3",
            "a retained tensor written in place through a view of it keeps its retain_grad "
            "hook on its grad_fn before the write: .grad is the gradient of that older version",
            "the hook moves to the new grad_fn (CopySlices): .grad is the gradient of the "
            "tensor's newest version, as after a write to the tensor itself",
            "https://github.com/pytorch/pytorch/pull/117552 "
            "(for https://github.com/pytorch/pytorch/issues/117366)",
        ),
        ReleaseDifference(
            "version_counter_setter",
            "<2.7",
            "torch._C._autograd._unsafe_set_version_counter(tensor, int)",
            "torch._C._autograd._unsafe_set_version_counter(tuple_of_tensors, tuple_of_ints)",
            "https://github.com/pytorch/pytorch/pull/137921",
        ),
    )
}


def has_older(name: str, release: Version = RELEASE) -> bool:
    """Whether this build behaves as the releases before difference `name`."""
    return in_releases(DIFFERENCES[name].versions, release)


def oracle_release(release: Version = RELEASE) -> Release:
    """What the reference model follows for this release (oracle.releases)."""
    return Release(
        open_slice_is_identity=not has_older("full_slice_write_is_view_write", release),
        setitem_fill_checks_overlap=not has_older("setitem_fill_skips_overlap_check", release),
        mean_saves_self=has_older("mean_saves_self", release),
        clamp_grad_at_bounds=has_older("clamp_grad_at_bounds", release),
        resize_bumps_version=not has_older("resize_skips_version_bump", release),
        foreach_inplace_recorded=not has_older("foreach_inplace_unrecorded", release),
        copy_resolves_bits_of_same_memory=not has_older("copy_same_memory_ignores_bits", release),
        retain_grad_follows_view_writes=not has_older(
            "retain_grad_stays_before_view_write", release
        ),
    )


ORACLE_RELEASE: Release = oracle_release()


# --- kernels -----------------------------------------------------------------

_NOT_IMPLEMENTED = ("not implemented for", "is not implemented for", "No kernel found")


def is_missing_kernel(error: BaseException) -> bool:
    """An error that says a kernel is absent (not that an op misbehaved)."""
    if isinstance(error, NotImplementedError):
        return True
    if "not implemented for tensors with non-complex dtypes" in str(error):
        return False  # x.imag of a real tensor: refused by design, not a missing kernel
    return isinstance(error, RuntimeError) and any(s in str(error) for s in _NOT_IMPLEMENTED)


@dataclass(frozen=True)
class MissingKernel:
    """An op this build has no kernel for, on these dtypes and this device."""

    op: str
    dtypes: tuple[str, ...]
    device: str
    backward: bool
    message: str  # torch's error, first line

    @property
    def reason(self) -> str:
        what = f"{self.op} backward" if self.backward else self.op
        return f"not in this build: {what} for {'/'.join(self.dtypes)} on {self.device}"

    def __str__(self) -> str:
        return self.reason


# Combinations skipped by the current test, counted by reason (reset per test,
# carried to the controller in the test's coverage, see conformance.harness).
MISSING: Counter[str] = Counter()


def reset_missing() -> None:
    MISSING.clear()


_PROBED: dict[tuple, MissingKernel | None] = {}


def _operand(shape: tuple[int, ...], dtype: str, device: str, grad: bool) -> torch.Tensor:
    # ones: a value every op accepts (log, division, sqrt), in a new contiguous
    # tensor with at least one element (an empty tensor reaches no kernel)
    fresh = torch.ones(shape if 0 not in shape else (1,) * len(shape), dtype=TORCH_DTYPES[dtype])
    fresh = fresh.to(device)
    if grad and (fresh.is_floating_point() or fresh.is_complex()):
        return fresh.requires_grad_().clone()  # in-place ops may write a non-leaf
    return fresh


def probe(
    op: str,
    call: Callable[..., Any],
    operands: Sequence[tuple[tuple[int, ...], str]],
    device: str,
    params: Sequence[Any] = (),
    backward: bool = False,
) -> MissingKernel | None:
    """Whether this build lacks the kernel of `call` (named `op`) for operands
    of these (shape, dtype) on `device`: `call(*fresh operands, *params)`, and
    with `backward` a backward through its result, raise "not implemented".
    Any other outcome says the kernel is there. Cached per process."""
    key = (op, tuple(operands), device, repr(tuple(params)), backward)
    if key in _PROBED:
        return _PROBED[key]
    if backward and (forward := probe(op, call, operands, device, params)) is not None:
        _PROBED[key] = forward  # the forward kernel is the one missing
        return forward
    found = None
    try:
        fresh = [_operand(tuple(s), d, device, backward) for s, d in operands]
        with torch.enable_grad() if backward else torch.no_grad():
            result = call(*fresh, *params)
            if backward and isinstance(result, torch.Tensor) and result.grad_fn is not None:
                result.backward(torch.ones_like(result))
    except Exception as error:  # noqa: BLE001 - only a missing kernel is an answer
        if is_missing_kernel(error):
            dtypes = tuple(dict.fromkeys(d for _, d in operands))
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            found = MissingKernel(op, dtypes, device, backward, first)
    _PROBED[key] = found
    return found


# torch's names (c10's ScalarType) of the dtypes whose kernels builds differ
# in: the reduced-precision floats. A build without a float32 or int64
# kernel is broken, not lacking; only for these is a kernel's absence read
# from the error alone (`missing_in`), where no narrow probe can run.
_REDUCED = {"Half": "float16", "BFloat16": "bfloat16", "ComplexHalf": "complex32"}
_DISPATCH = re.compile(r'"(?P<kernel>[^"]+)" not implemented for \'(?P<dtype>[A-Za-z0-9]+)\'')


def missing_in(error: BaseException | None, device: str) -> MissingKernel | None:
    """The reduced-precision kernel a build lacks that an escaped error says
    is absent ('"exp_vml_cpu" not implemented for 'Half''), in the error or
    in what it was raised from (a failed check wrapping torch's error); None
    for any other error. For a test that did not probe its op first: the
    kernel's name stands for the op."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        found = _DISPATCH.search(str(error)) if isinstance(error, RuntimeError) else None
        if found and found["dtype"] in _REDUCED:
            first = str(error).strip().splitlines()[0]
            return MissingKernel(found["kernel"], (_REDUCED[found["dtype"]],), device, False, first)
        error = error.__cause__ or error.__context__
    return None


def lacks(
    op: str,
    call: Callable[..., Any],
    operands: Sequence[tuple[tuple[int, ...], str]],
    device: str,
    params: Sequence[Any] = (),
    backward: bool = False,
) -> MissingKernel | None:
    """`probe`, and a missing kernel is counted as one skipped combination."""
    missing = probe(op, call, operands, device, params, backward)
    if missing is not None:
        MISSING[missing.reason] += 1
    return missing
