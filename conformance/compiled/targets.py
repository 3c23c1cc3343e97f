"""Compile targets: `--compile BACKEND[,BACKEND...]`, checked once.

A target is a torch.compile backend beside eager: `eager` (Dynamo capture
only), `aot_eager`, `inductor`, any backend registered with Dynamo, or
`module:callable` for a user's own. A backend this build cannot run (no C++
compiler for inductor, a release whose torch.compile refuses this Python) is
kept as a skipped target with its reason, never an error; a name Dynamo does
not know is a usage error.
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


class TargetError(ValueError):
    """A usage error in --compile: one line a user can act on."""


@dataclass(frozen=True)
class Target:
    name: str  # as given: "aot_eager", "my_pkg.backends:broken"
    available: bool = True
    reason: str = ""  # why it is skipped, when not available

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


def builds_on(name: str) -> str | None:
    """The backend a user's backend (`module:function`) says it wraps, in
    its `builds_on` attribute ("aot_eager"): that backend's known failures
    hold for it too. None for a registered backend, or one that says nothing."""
    if ":" not in name:
        return None
    try:
        base = getattr(_load_callable(name), "builds_on", None)
    except TargetError:
        return None
    return base if isinstance(base, str) and base != name else None


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
    names = list(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
    if not names:
        raise TargetError("--compile needs at least one backend, e.g. --compile aot_eager")
    unsupported = compile_unsupported()
    targets = []
    for name in names:
        if ":" in name:
            _load_callable(name)  # a user's backend that cannot load is a usage error
        elif name not in registered() and unsupported is None:
            known = ", ".join(registered())
            raise TargetError(
                f"unknown compile backend {name!r} (known: {known}, or module:callable)"
            )
        if "/" in name:
            raise TargetError(f"compile backend {name!r}: '/' separates device and target")
        reason = unsupported
        if reason is None and name == "inductor":
            reason = cxx_missing()
        targets.append(Target(name, reason is None, reason or ""))
    return tuple(targets)


_TARGETS: tuple[Target, ...] = ()


def set_targets(targets: tuple[Target, ...]) -> None:
    global _TARGETS
    _TARGETS = targets


def current_targets() -> tuple[Target, ...]:
    """The run's compile targets (none unless --compile)."""
    return _TARGETS


def describe(targets: tuple[Target, ...]) -> str:
    parts = [t.name if t.available else f"{t.name} skipped: {t.reason}" for t in targets]
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
