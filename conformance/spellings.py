"""The ways to spell each op under test. Tests draw one, so a build that breaks
only `torch.clone(x)` and not `x.clone()` is still caught, and the falsifying
example prints the spelling that broke."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Spelling:
    name: str
    fn: Callable

    def __call__(self, *args):
        return self.fn(*args)

    def __repr__(self) -> str:
        return self.name


CLONES = (
    Spelling("x.clone()", lambda x: x.clone()),
    Spelling("torch.clone(x)", lambda x: torch.clone(x)),
    Spelling(
        "x.clone(memory_format=torch.preserve_format)",
        lambda x: x.clone(memory_format=torch.preserve_format),
    ),
)

DETACHES = (
    Spelling("x.detach()", lambda x: x.detach()),
    Spelling("torch.detach(x)", lambda x: torch.detach(x)),
)

COPIES = (
    Spelling("dst.copy_(src)", lambda dst, src: dst.copy_(src)),
    Spelling(
        "dst.copy_(src, non_blocking=True)", lambda dst, src: dst.copy_(src, non_blocking=True)
    ),
    Spelling("torch.Tensor.copy_(dst, src)", lambda dst, src: torch.Tensor.copy_(dst, src)),
)

DATAS = (Spelling("x.data", lambda x: x.data),)
