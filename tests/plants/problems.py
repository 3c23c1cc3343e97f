"""Crashes, hangs and the suite's own errors (issue 13, issue 9 item 4).

These break no rule: they take the process down, hang, or break the suite's
own code, each only for some inputs. `problem_plant` names the status the
test must report (crashed, hung or internal error), which is what the
project's tests check (tests/test_crashes.py). None is in PLANTS, nor in the
every-invariant-has-a-plant check."""

from __future__ import annotations

import os
import signal

from .patch import methods
from .registry import problem_plant


def _suite_module(name: str):
    """A module of the suite itself; tests/ is first on sys.path when
    sitecustomize installs a plant, and tests/oracle would shadow oracle/."""
    import importlib
    import sys
    from pathlib import Path

    tests = str(Path(__file__).resolve().parent.parent)
    root = str(Path(__file__).resolve().parent.parent.parent)
    saved = list(sys.path)
    sys.path[:] = [root] + [p for p in sys.path if p not in (tests, root)]
    try:
        return importlib.import_module(name)
    finally:
        sys.path[:] = saved


def _rank3_detach(torch, action) -> None:
    """Tensor.detach does `action` on tensors of rank >= 3, as a build whose
    kernel breaks on some shapes only. Like torch's own methods written in
    Python, it honours __torch_function__ first: the break is below it, where
    a kernel's would be."""

    def detach(orig, self):
        if torch.overrides.has_torch_function_unary(self):
            return torch.overrides.handle_torch_function(torch.Tensor.detach, (self,), self)
        if self.dim() >= 3:
            action()
        return orig(self)

    methods("detach", detach)


def _segfault() -> None:
    import ctypes

    ctypes.string_at(0)  # reads address 0: SIGSEGV


def _spin() -> None:
    while True:  # an endless loop that returns to Python: SIGALRM can stop it
        pass


def _stuck() -> None:
    import time

    # A hang the in-process stage cannot stop (as a loop in C that never
    # returns to Python): the alarm is ignored, so only the watchdog's last
    # stage ends it.
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    while True:
        time.sleep(0.05)


def _exhaust_memory() -> None:
    import resource

    import torch

    # Bound the address space first, so that the machine survives: the
    # allocation fails at the bound instead of taking the machine's memory.
    with open("/proc/self/statm") as statm:
        used = int(statm.read().split()[0]) * resource.getpagesize()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (used + (512 << 20), hard))
    try:
        torch.ones(1 << 33, dtype=torch.uint8)  # 8 GiB
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


_RANK3 = {
    "segfault@rank3": ("crashed", "detach reads address 0 on rank >= 3 tensors", _segfault),
    "abort@rank3": ("crashed", "detach calls abort() on rank >= 3 tensors", os.abort),
    "oom_killed@rank3": (
        "crashed",
        "detach's process is SIGKILLed on rank >= 3",
        # what the kernel's out-of-memory killer does
        lambda: os.kill(os.getpid(), signal.SIGKILL),
    ),
    "out_of_memory@rank3": (
        "crashed",
        "detach exhausts memory on rank >= 3 tensors",
        _exhaust_memory,
    ),
    "hang@rank3": ("hung", "detach loops forever on rank >= 3 tensors", _spin),
    "stuck@rank3": ("hung", "detach hangs beyond SIGALRM's reach on rank >= 3", _stuck),
}
for _name, (_status, _what, _action) in _RANK3.items():
    problem_plant(_name, _status, _what)(lambda torch, action=_action: _rank3_detach(torch, action))


@problem_plant(
    "oracle_right_shift", "internal error", "the reference model's add raises NumPy's TypeError"
)
def _(torch):
    import dataclasses

    OPS = _suite_module("oracle").OPS

    def broken(*args, **kwargs):
        raise TypeError("ufunc 'right_shift' not supported for the input types")

    OPS["add"] = dataclasses.replace(OPS["add"], fwd=broken)


@problem_plant("strategy_raises@rank3", "internal error", "drawing a rank >= 3 tensor raises")
def _(torch):
    tensors = _suite_module("strategies.tensors")
    original = tensors.build_case

    def build_case(root_values, *args, **kwargs):
        if root_values.ndim >= 3:
            raise TypeError("ufunc 'right_shift' not supported for the input types")
        return original(root_values, *args, **kwargs)

    tensors.build_case = build_case


@problem_plant(
    "check_raises@rank3",
    "internal error",
    "the suite's storage check raises an AttributeError on rank >= 3 tensors, in a test's body",
)
def _(torch):
    check = _suite_module("conformance.check")
    original = check.storage_id

    def storage_id(tensor):
        if tensor.dim() >= 3:  # as the suite's call of an API a release lacks
            raise AttributeError("'UntypedStorage' object has no attribute 'right_shift'")
        return original(tensor)

    check.storage_id = storage_id
