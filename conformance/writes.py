"""In-place writes, as a table: how to apply each to a tensor, what values it
leaves, and which dtype kinds accept it. Tests draw from it, so each rule
about in-place ops is held over many ops, not one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from conformance import build


@dataclass(frozen=True)
class Write:
    name: str
    apply: Callable[[torch.Tensor, object], object]
    expected: Callable[[np.ndarray, object], np.ndarray]
    kinds: tuple[str, ...]
    # False for ops torch lets write one value to aliased elements (fill_)
    checks_overlap: bool = True
    # False for ops that can go below zero, which uint8 wraps around
    unsigned_ok: bool = True

    def __repr__(self) -> str:
        return self.name


def _setitem(t: torch.Tensor, value: object) -> None:
    t[...] = value


def _copy_from(t: torch.Tensor, value: object) -> torch.Tensor:
    return t.copy_(torch.full_like(t, value).detach())


_ALL = ("float", "complex", "int", "bool")
_NUMERIC = ("float", "complex", "int")
_REAL = ("float", "int")

WRITES: tuple[Write, ...] = (
    Write("fill_(v)", lambda t, v: t.fill_(v), lambda a, v: np.full_like(a, v), _ALL, False),
    Write("zero_()", lambda t, v: t.zero_(), lambda a, v: np.zeros_like(a), _ALL, False),
    # a scalar setitem fills: on memory several elements share, no promise either
    # way (docs/releases.md, "Not promised")
    Write("t[...] = v", _setitem, lambda a, v: np.full_like(a, v), _ALL, False),
    Write("copy_(full_like(t, v))", _copy_from, lambda a, v: np.full_like(a, v), _ALL),
    Write("add_(v)", lambda t, v: t.add_(v), lambda a, v: a + v, _NUMERIC),
    Write("sub_(v)", lambda t, v: t.sub_(v), lambda a, v: a - v, _NUMERIC, unsigned_ok=False),
    Write("mul_(v)", lambda t, v: t.mul_(v), lambda a, v: a * v, _NUMERIC),
    Write("neg_()", lambda t, v: t.neg_(), lambda a, v: -a, _NUMERIC, unsigned_ok=False),
    Write("clamp_(min=v)", lambda t, v: t.clamp_(min=v), lambda a, v: np.maximum(a, v), _REAL),
    Write("abs_()", lambda t, v: t.abs_(), lambda a, v: np.abs(a), ("float", "int")),
)


def _fitting(
    table: tuple[Write, ...], dtype: str, overlapping: bool, device: str | None
) -> tuple[Write, ...]:
    from strategies.dtypes import DTYPES  # noqa: I001

    kind = DTYPES[dtype].kind
    fitting = tuple(
        w
        for w in table
        if kind in w.kinds
        and (w.unsigned_ok or dtype != "uint8")
        and (w.checks_overlap or not overlapping)
    )
    if device is None:
        return fitting
    # a write this build has no kernel for is left out, and counted
    return tuple(w for w in fitting if not build.lacks(w.name, _probe(w), [((2,), dtype)], device))


def _probe(write: Write) -> Callable[[torch.Tensor], object]:
    return lambda t: write.apply(t, True if t.dtype == torch.bool else 1)


def writes_for(
    dtype: str, overlapping: bool = False, device: str | None = None
) -> tuple[Write, ...]:
    """Writes that apply to `dtype`; with `overlapping`, only those torch
    refuses on memory that several elements share; with `device`, only those
    this build has kernels for there (conformance.build)."""
    return _fitting(WRITES, dtype, overlapping, device)


def _masked_fill(t: torch.Tensor, v: object) -> torch.Tensor:
    mask = torch.ones(t.shape, dtype=torch.bool, device=t.device)
    return t.masked_fill_(mask, v)


def _copy_tensor(t: torch.Tensor, v: object) -> torch.Tensor:
    return t.copy_(torch.zeros(t.shape[-1:], dtype=torch.float64, device=t.device))


def _index_fill(t: torch.Tensor, v: object) -> torch.Tensor:
    if t.dim() == 0 or t.shape[0] == 0:
        return t.fill_(v)
    return t.index_fill_(0, torch.zeros(1, dtype=torch.long, device=t.device), v)


def _rows(t: torch.Tensor) -> torch.Tensor:
    return torch.zeros(1, dtype=torch.long, device=t.device)


def _setitem_tensor(t: torch.Tensor, v: object) -> None:
    if t.dim() == 0 or t.shape[0] == 0:
        t.fill_(v)
    else:
        t[_rows(t)] = v  # advanced indexing: index_put_


def _by_rows(name: str) -> Callable[[torch.Tensor, object], object]:
    """t.<name>(0, [0], a row of v): index_add_, index_copy_; scatter_ with a zero index."""

    def apply(t: torch.Tensor, v: object) -> object:
        if t.dim() == 0 or t.shape[0] == 0:
            return t.fill_(v)
        row = torch.full((1, *t.shape[1:]), v, dtype=t.dtype, device=t.device)
        if name == "scatter_":
            return t.scatter_(0, torch.zeros(row.shape, dtype=torch.long, device=t.device), row)
        if name == "index_put_":
            return t.index_put_((_rows(t),), row)
        return getattr(t, name)(0, _rows(t), row)

    return apply


# Every in-place op, for the rules that hold of all of them (the version
# counter moves), whatever values they leave.
BUMPS: tuple[Write, ...] = WRITES + tuple(
    Write(
        name, apply, lambda a, v: a, kinds, checks_overlap=not name.startswith(("masked", "index"))
    )
    for name, apply, kinds in (
        ("exp_()", lambda t, v: t.exp_(), ("float", "complex")),
        ("sin_()", lambda t, v: t.sin_(), ("float", "complex")),
        ("tanh_()", lambda t, v: t.tanh_(), ("float", "complex")),
        ("sigmoid_()", lambda t, v: t.sigmoid_(), ("float", "complex")),
        ("relu_()", lambda t, v: t.relu_(), ("float", "int")),
        ("div_(2)", lambda t, v: t.div_(2), ("float", "complex")),
        ("pow_(2)", lambda t, v: t.pow_(2), ("float", "complex", "int")),
        ("masked_fill_(ones, v)", _masked_fill, _ALL),
        ("index_fill_(0, [0], v)", _index_fill, _ALL),
        ("copy_(zeros(last dim, float64))", _copy_tensor, _ALL),
        ("clamp_(-1, 1)", lambda t, v: t.clamp_(-1, 1), _REAL),
        ("t[tensor([0])] = v", _setitem_tensor, _ALL),
        ("index_put_((tensor([0]),), row)", _by_rows("index_put_"), _ALL),
        ("index_add_(0, tensor([0]), row)", _by_rows("index_add_"), _NUMERIC),
        ("index_copy_(0, tensor([0]), row)", _by_rows("index_copy_"), _ALL),
        ("scatter_(0, zeros, row)", _by_rows("scatter_"), _ALL),
    )
)


def bumps_for(dtype: str, device: str | None = None) -> tuple[Write, ...]:
    """Every in-place op that applies to `dtype` (on `device`: see writes_for)."""
    return _fitting(BUMPS, dtype, False, device)
