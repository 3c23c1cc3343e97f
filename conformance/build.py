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

Release differences are data (`DIFFERENCES`), each with its kind and the pull
request that made it; docs/releases.md explains them. Bugs of older releases
are not differences: they are known failures (known-failures.toml).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec

import torch
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from oracle import Release
from strategies.tensors import TORCH_DTYPES

__all__ = [
    "RELEASE",
    "DIFFERENCES",
    "DOCUMENTED_CHANGE",
    "KINDS",
    "WORDING",
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


DOCUMENTED_CHANGE = "documented change"
WORDING = "error class or wording"
KINDS = (DOCUMENTED_CHANGE, WORDING)


@dataclass(frozen=True)
class ReleaseDifference:
    """Behaviour that changed between releases, where the change is one the
    model follows: the documentation (or an API, a deprecation, a release
    note) changed the promise, or only an error's class or wording changed.
    `older` is what the releases in `versions` do, `newer` what the later
    ones do; `changed_by` is the pull request or note that made the change.

    A release that breaks a promise that a later one keeps has a bug, never a
    difference: it is in known-failures.toml, with the release that fixed it."""

    name: str
    kind: str
    versions: str
    older: str
    newer: str
    changed_by: str


DIFFERENCES: dict[str, ReleaseDifference] = {
    d.name: d
    for d in (
        ReleaseDifference(
            "tensor_base_name",
            DOCUMENTED_CHANGE,
            "<2.2",
            "the C base class of torch.Tensor is torch._C._TensorBase",
            "it is torch._C.TensorBase (torch._C._TensorBase stays as an alias)",
            "https://github.com/pytorch/pytorch/pull/109940",
        ),
        ReleaseDifference(
            "full_slice_write_is_view_write",
            WORDING,
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
            "clamp_grad_at_bounds",
            DOCUMENTED_CHANGE,
            # 2.13.0 (and 2.0.1 to 2.9.1) pass 1, 2.14.1 passes 0
            "<2.14",
            "clamp(x, lo, hi)'s gradient is 1 where x equals lo or hi (the subgradient "
            "PyTorch chose in 2018, pytorch/pytorch#7049)",
            "it is 0 there: the minimum-norm subgradient, as relu6 and hardtanh have",
            "https://github.com/pytorch/pytorch/pull/191142 "
            "(for https://github.com/pytorch/pytorch/issues/184572)",
        ),
        ReleaseDifference(
            "version_counter_setter",
            DOCUMENTED_CHANGE,
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
        clamp_grad_at_bounds=has_older("clamp_grad_at_bounds", release),
    )


ORACLE_RELEASE: Release = oracle_release()


# --- kernels -----------------------------------------------------------------

_NOT_IMPLEMENTED = ("not implemented for", "is not implemented for", "No kernel found")
_NO_DERIVATIVE = re.compile(r"derivative for \S+ is not implemented")


def is_missing_kernel(error: BaseException) -> bool:
    """An error that says a kernel is absent (not that an op misbehaved)."""
    if isinstance(error, NotImplementedError):
        return True
    if "not implemented for tensors with non-complex dtypes" in str(error):
        return False  # x.imag of a real tensor: refused by design, not a missing kernel
    if isinstance(error, RuntimeError) and _NO_DERIVATIVE.search(str(error)):
        return True  # a backward formula the build lacks (aminmax: 2.0.1, 2.4.1 measured)
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


_P = ParamSpec("_P")


def _counted(find: Callable[_P, MissingKernel | None]) -> Callable[_P, MissingKernel | None]:
    """`find`, each missing kernel it finds counted as one skipped combination."""

    @functools.wraps(find)
    def counted(*args: _P.args, **kwargs: _P.kwargs) -> MissingKernel | None:
        missing = find(*args, **kwargs)
        if missing is not None:
            MISSING[missing.reason] += 1
        return missing

    return counted


lacks = _counted(probe)  # `probe`, and a missing kernel counted in MISSING
