"""Grad modes as modes of their own: how a step's `mode` runs, in torch and in
the reference model, and how the listing and repro scripts print it.

A step's `no_grad` flag is always the grad mode its op runs in; `mode` says
which API puts it there, so everything that reads `no_grad` (the model,
attribution, the compiled differential) stays right without knowing modes:

- "enable_grad": `with torch.no_grad(): with torch.enable_grad(): op`
  (no_grad False: recorded again);
- "after_enable_grad": `with torch.no_grad(): (an enable_grad block); op`
  (no_grad True: leaving enable_grad restores no_grad);
- "set_grad_enabled": `with torch.set_grad_enabled(not no_grad): op`, inside
  no_grad when it enables grad;
- "set_grad_enabled_fn": the function form, `torch.set_grad_enabled(mode)`
  then op, then grad mode set back (by no_grad's exit, or a call);
- "inference": `with torch.inference_mode(): op` (no_grad True).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

MODES = ("enable_grad", "after_enable_grad", "set_grad_enabled", "set_grad_enabled_fn", "inference")
# the rule a discrepancy of a step in a grad mode breaks, when the same step
# under plain no_grad or grad mode agrees (attribution)
GRAD_MODE_RULES = {
    "enable_grad": "nograd.enable_grad_restores",
    "after_enable_grad": "nograd.enable_grad_restores",
    "set_grad_enabled": "nograd.set_grad_enabled",
    "set_grad_enabled_fn": "nograd.set_grad_enabled",
}


@contextlib.contextmanager
def torch_mode(mode: str, no_grad: bool) -> Iterator[None]:
    """Enter the step's mode in torch, through the public API being tested;
    grad mode is put back with torch's C call whatever the API did, so that a
    broken API cannot leak into later steps or programs."""
    prev = torch.is_grad_enabled()
    try:
        if mode == "enable_grad":
            with torch.no_grad():
                with torch.enable_grad():
                    yield
        elif mode == "after_enable_grad":
            with torch.no_grad():
                with torch.enable_grad():
                    pass
                yield
        elif mode == "set_grad_enabled":
            if no_grad:
                with torch.set_grad_enabled(False):
                    yield
            else:
                with torch.no_grad():
                    with torch.set_grad_enabled(True):
                        yield
        elif mode == "set_grad_enabled_fn":
            if no_grad:
                torch.set_grad_enabled(False)
                yield
            else:
                with torch.no_grad():
                    torch.set_grad_enabled(True)
                    yield
        elif mode == "inference":
            with torch.inference_mode():
                yield
        else:
            raise ValueError(f"unknown grad mode {mode!r}")
    finally:
        torch._C._set_grad_enabled(prev)


@contextlib.contextmanager
def oracle_mode(engine, step) -> Iterator[None]:
    """The step's grad mode (and inference mode) in the reference model."""
    if step.mode == "inference":
        with engine.inference_mode():
            yield
    elif step.no_grad:
        with engine.no_grad():
            yield
    else:
        yield


def wrap(step, lines: list[str]) -> list[str]:
    """The step's lines inside its mode, as torch code."""
    inner = ["    " + line for line in lines]
    mode = step.mode
    if mode == "enable_grad":
        return [
            "with torch.no_grad():",
            "    with torch.enable_grad():  # records again",
            *["    " + line for line in inner],
        ]
    if mode == "after_enable_grad":
        return [
            "with torch.no_grad():",
            "    with torch.enable_grad():",
            "        pass",
            "    # back under no_grad:",
            *inner,
        ]
    if mode == "set_grad_enabled":
        if step.no_grad:
            return ["with torch.set_grad_enabled(False):", *inner]
        return [
            "with torch.no_grad():",
            "    with torch.set_grad_enabled(True):  # records again",
            *["    " + line for line in inner],
        ]
    if mode == "set_grad_enabled_fn":
        if step.no_grad:
            return [
                "torch.set_grad_enabled(False)  # as a function: grad mode off from here",
                *lines,
                "torch.set_grad_enabled(True)",
            ]
        return [
            "with torch.no_grad():",
            "    torch.set_grad_enabled(True)  # as a function: records again",
            *inner,
        ]
    if mode == "inference":
        return ["with torch.inference_mode():", *inner]
    raise ValueError(f"unknown grad mode {mode!r}")
