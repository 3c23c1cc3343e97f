"""What a lockstep run keeps: its pools, how each tensor came to be, what was
observed, and the discrepancy it reports."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from conformance import build
from conformance.differential.observe import Observed
from oracle import Engine
from strategies.programs import Program

BACKWARD_OPS = ("backward", "backward_g", "autograd_grad", "grad_cg")


@dataclass
class Discrepancy:
    step: int  # index of the step after which torch and the oracle differ
    kind: str  # raise, identity, storage_moved, sharing, values, shape, dtype, strides, ...
    tensors: tuple[int, ...]  # pool indices involved
    expected: object
    actual: object
    message: str


@dataclass
class Origin:
    """How a pool tensor came to be: the step, its op and its tensor operands."""

    step: int
    op: str
    parents: tuple[int, ...]
    strides_documented: bool = False


@dataclass
class Run:
    program: Program
    torch_pool: list[torch.Tensor] = field(default_factory=list)
    oracle_pool: list = field(default_factory=list)
    origins: list[Origin] = field(default_factory=list)
    engine: Engine = field(default_factory=lambda: Engine(build.ORACLE_RELEASE))
    retired: set[int] = field(default_factory=set)
    # steps that wrote through a view in grad mode but left the base's
    # grad_fn as it was: torch must rebase the base's history onto the write
    unrecorded_view_writes: list[int] = field(default_factory=list)
    steps_checked: int = 0
    resizes: bool = False  # a step may resize storage: read torch's tensors keeping it resizable
    # (oracle, torch) observations after the last step compared, and before it
    observed: tuple[list[Observed], list[Observed]] = ([], [])
    previous: tuple[list[Observed], list[Observed]] = ([], [])
    # pool index of each gradient handed to backward -> the storages it had then
    # (grad_argument: a later set_ moves it, while a leaf's .grad keeps that memory)
    handed: dict[int, set[int]] = field(default_factory=dict)
    # pool tensors that took another's memory and geometry (x.data = y, x.set_(y))
    # from a tensor of a layout the model does not follow: theirs is unknown now
    adopted_unknown_layout: set[int] = field(default_factory=set)
