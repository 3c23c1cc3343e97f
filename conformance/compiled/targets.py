"""Compile targets: `--compile BACKEND[,BACKEND...]`, checked once.

A target is a torch.compile backend beside eager: `eager` (Dynamo capture
only), `aot_eager`, `inductor`, any backend registered with Dynamo, or
`module:callable` for a user's own. A backend this build cannot run (no C++
compiler for inductor, a release whose torch.compile refuses this Python) is
kept as a skipped target with its reason, never an error; a name Dynamo does
not know is a usage error.

A backend may be built on another (`--compile my_pkg:backend=aot_eager`, a
known-failure list's `[builds_on]` table, the callable's `builds_on`
attribute, or BUILT_ON for a registered one): the base's known failures are
then its own, so that a run reports what the backend changes, not what it
inherits.
"""

from __future__ import annotations

import importlib
import logging
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import torch

# Backends that run eager's own kernels on the graph Dynamo captured (eager:
# the capture alone; aot_eager: AOTAutograd's forward and backward graphs,
# functionalized, without decompositions): the same kernels on the same
# inputs give the same bits, so their values are compared exactly. Any other
# backend (inductor, a user's) may fuse and reorder floating-point operations.
SAME_KERNELS = frozenset({"eager", "aot_eager"})

# Registered backends built on another. Inductor compiles the forward and
# backward graphs AOTAutograd traces, as aot_eager runs them, so every
# AOTAutograd divergence is inductor's too ("TorchInductor ... uses
# AOTAutograd to capture the backward", torch.compile's documentation).
BUILT_ON = {"inductor": "aot_eager"}


class TargetError(ValueError):
    """A usage error in --compile: one line a user can act on."""


@dataclass(frozen=True)
class Target:
    name: str  # as given: "aot_eager", "my_pkg.backends:broken"
    available: bool = True
    reason: str = ""  # why it is skipped, when not available
    base: str | None = None  # declared on the command line: `name=base`

    @property
    def spec(self) -> str:
        """As --compile takes it: the name, and the base it was declared on."""
        return self.name if self.base is None else f"{self.name}={self.base}"

    @property
    def backend(self) -> str | Callable:
        """What torch.compile takes: a registered name, or the user's callable."""
        if ":" in self.name:
            return _load_callable(self.name)
        return self.name

    @property
    def same_kernels(self) -> bool:
        """Whether its values must be eager's bit for bit (SAME_KERNELS)."""
        return self.name in SAME_KERNELS


# Bases declared for this run: on the command line (`name=base`), which wins,
# and in the known-failure lists' `[builds_on]` tables.
_DECLARED: dict[str, str] = {}
_LISTED: dict[str, str] = {}


def declare_listed(bases: dict[str, str]) -> None:
    """The bases the run's known-failure lists declare (`[builds_on]`)."""
    _LISTED.clear()
    _LISTED.update(bases)


def builds_on(name: str) -> str | None:
    """The backend `name` is built on, whose known failures hold for it too:
    as declared on the command line, then in a known-failure list, then by
    a user's callable's `builds_on` attribute, then BUILT_ON. None when it
    says nothing."""
    base = _DECLARED.get(name) or _LISTED.get(name) or _attribute(name) or BUILT_ON.get(name)
    return base if base != name else None


@cache
def _attribute(name: str) -> str | None:
    if ":" not in name:
        return None
    try:
        base = getattr(_load_callable(name), "builds_on", None)
    except TargetError:
        return None
    return base if isinstance(base, str) else None


def column(device: str, target: str | None) -> str:
    """A report column: the device alone for eager, `device/target` compiled."""
    return device if not target else f"{device}/{target}"


def split_column(label: str) -> tuple[str, str | None]:
    device, _, target = label.partition("/")
    return device, target or None


def _load_callable(spec: str) -> Callable:
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise TargetError(f"--compile {spec}: cannot import {module_name!r}: {error}") from None
    found = getattr(module, attribute, None)
    if not callable(found):
        raise TargetError(f"--compile {spec}: {module_name} has no callable {attribute!r}")
    return found


@cache
def registered() -> tuple[str, ...]:
    """Every backend Dynamo knows, debug and testing ones included."""
    try:
        from torch._dynamo import list_backends
    except Exception:  # noqa: BLE001 - a build without Dynamo knows none
        return ()
    return tuple(list_backends(exclude_tags=()))


def compile_unsupported() -> str | None:
    """Why torch.compile cannot run here at all, or None."""
    try:
        import torch._dynamo as dynamo
    except Exception as error:  # noqa: BLE001 - any import failure is the build's
        return f"torch._dynamo cannot be imported: {type(error).__name__}: {error}"
    supported = getattr(dynamo, "is_dynamo_supported", None)
    if supported is not None and not supported():
        python = ".".join(map(str, sys.version_info[:2]))
        return f"torch {torch.__version__}'s torch.compile does not support Python {python}"
    return None


def cxx_missing() -> str | None:
    """Why inductor cannot build its CPU kernels here, or None."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        get_cpp_compiler()
        return None
    except ImportError:
        pass
    except Exception as error:  # noqa: BLE001 - its own message says what is missing
        return f"inductor needs a C++ compiler: {str(error).splitlines()[0]}"
    if any(shutil.which(c) for c in ("g++", "c++", "clang++")):
        return None
    return "inductor needs a C++ compiler (g++, c++ or clang++ on PATH); none found"


def parse_targets(spec: str | None) -> tuple[Target, ...]:
    """The targets `--compile` names, in order. TargetError for an unknown one."""
    if not spec:
        return ()
    given = list(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
    if not given:
        raise TargetError("--compile needs at least one backend, e.g. --compile aot_eager")
    unsupported = compile_unsupported()
    targets = []
    for named in given:
        name, _, base = (part.strip() for part in named.partition("="))
        if "=" in named and not (name and base and "=" not in base):
            raise TargetError(
                f"--compile {named}: declare a base as BACKEND=BASE, e.g. my_pkg:fast=aot_eager"
            )
        if base:
            _check_known(base, unsupported, f"{name}'s base")
        _check_known(name, unsupported, "compile backend")
        if "/" in name:
            raise TargetError(f"compile backend {name!r}: '/' separates device and target")
        reason = unsupported
        if reason is None and name == "inductor":
            reason = cxx_missing()
        targets.append(Target(name, reason is None, reason or "", base or None))
    return tuple(targets)


def _check_known(name: str, unsupported: str | None, what: str) -> None:
    """A backend that cannot be found is a usage error (where compile runs)."""
    if ":" in name:
        _load_callable(name)  # a user's backend that cannot load is a usage error
    elif name not in registered() and unsupported is None:
        known = ", ".join(registered())
        raise TargetError(f"unknown {what} {name!r} (known: {known}, or module:callable)")


_TARGETS: tuple[Target, ...] = ()


def set_targets(targets: tuple[Target, ...]) -> None:
    global _TARGETS
    _TARGETS = targets
    _DECLARED.clear()
    _DECLARED.update({t.name: t.base for t in targets if t.base})


def current_targets() -> tuple[Target, ...]:
    """The run's compile targets (none unless --compile)."""
    return _TARGETS


def describe(targets: tuple[Target, ...]) -> str:
    parts = [
        (t.name if t.available else f"{t.name} skipped: {t.reason}")
        + (f" (built on {base})" if (base := builds_on(t.name)) else "")
        for t in targets
    ]
    return "compile targets: " + ("; ".join(parts) if parts else "none (add --compile BACKEND)")


# Dynamo keeps compiled code per code object, up to a recompile limit; past
# it, it silently runs the frame eagerly. Every program here is a new code
# object and Dynamo is reset before each, but a program that recompiles
# (dynamic shapes, guards on a second call) must fail loudly, never fall back.
def guard_cache_limits() -> None:
    # Dynamo's trace logger writes at DEBUG level; pytest would print it all
    # with every failure
    logging.getLogger("torch.__trace").setLevel(logging.WARNING)
    config = torch._dynamo.config
    for flag in ("fail_on_recompile_limit_hit", "fail_on_cache_limit_hit"):
        if hasattr(config, flag):
            setattr(config, flag, True)
