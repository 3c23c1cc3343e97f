"""What can be observed of a tensor, read the same way from torch and from the
oracle, so the two can be compared field by field."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
import torch

from oracle import OracleError, OTensor, classify
from strategies.tensors import DTYPE_NAMES, to_numpy

RAISES = "raises"  # an attribute whose read raised (torch and the oracle agree it must)


@dataclass
class Observed:
    shape: tuple[int, ...]
    dtype: str
    device: str
    values: np.ndarray
    strides: tuple[int, ...]
    requires_grad: bool
    is_leaf: object  # bool, or RAISES
    has_grad_fn: object  # bool, or RAISES
    grad: np.ndarray | None
    grad_meta: tuple | None  # (shape, dtype, device) of .grad
    version: object  # int, or RAISES (an inference tensor)
    storage: int  # identity of the storage, comparable within one side
    base: int | None  # pool index of _base; -1 when not in the pool; None without one


@cache
def _device(device: torch.device | str) -> str:
    """One spelling of a device for both sides: a program's plain "cuda" is
    the current device, which its tensors report as "cuda:0"."""
    device = torch.device(device)
    if device.type == "cpu":
        return "cpu"
    if device.index is None:
        index = torch.cuda.current_device() if device.type == "cuda" else 0
        device = torch.device(device.type, index)
    return str(device)


def storages_torch(pool: list[torch.Tensor]) -> list[int]:
    """Each tensor's storage identity (cheap: no values are read)."""
    return [t.untyped_storage()._cdata for t in pool]


def storages_oracle(pool: list[OTensor]) -> list[int]:
    return [id(t.storage) for t in pool]


class _PoolIndex:
    """Pool indices by identity, -1 outside the pool; the table is made at
    the first base looked up (most reads find none)."""

    def __init__(self, pool: list) -> None:
        self.pool, self.table = pool, None

    def of(self, t: object) -> int:
        if self.table is None:
            self.table = {id(u): i for i, u in enumerate(self.pool)}
        return self.table.get(id(t), -1)


def _read(get: Callable[[], object]) -> object:
    """get(), or RAISES where reading it raises (torch and the oracle agree it must)."""
    try:
        return get()
    except (RuntimeError, OracleError):
        return RAISES


def observe_torch(
    pool: list[torch.Tensor], only: list[int] | None = None, resizable: bool = False
) -> list[Observed]:
    """What can be seen of each tensor of `pool` (of `pool[i]` for i in
    `only`, in that order, when given); `resizable`: read without marking
    storages non-resizable (programs that resize, see to_numpy)."""
    index = _PoolIndex(pool)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reading a non-leaf's .grad warns
        for t in pool if only is None else (pool[i] for i in only):
            # read in this order (reading grad_fn may regenerate a view's); a
            # read that raises is observed as RAISES
            try:
                grad = t.grad
                grad_raised = False
            except (RuntimeError, OracleError):  # a build whose .grad raises: an observation
                grad = None
                grad_raised = True
            base = t._base
            shape = tuple(t.shape)
            dtype = DTYPE_NAMES[t.dtype]
            device = _device(t.device)
            values = to_numpy(t, resizable)
            strides = tuple(t.stride())
            requires_grad = t.requires_grad
            is_leaf = _read(lambda: t.is_leaf)  # noqa: B023 - called at once
            has_grad_fn = _read(lambda: t.grad_fn is not None)  # noqa: B023
            # .grad may be the very tensor handed to backward (pytorch#34082),
            # whose storage a later step resizes
            grad_values = (
                RAISES if grad_raised else (None if grad is None else to_numpy(grad, resizable))
            )
            grad_meta = (
                None
                if grad is None
                else (
                    tuple(grad.shape),
                    DTYPE_NAMES.get(grad.dtype, str(grad.dtype)),
                    _device(grad.device),
                )
            )
            version = _read(lambda: t._version)  # noqa: B023
            seen.append(
                Observed(
                    shape,
                    dtype,
                    device,
                    values,
                    strides,
                    requires_grad,
                    is_leaf,
                    has_grad_fn,
                    grad_values,
                    grad_meta,
                    version,
                    t.untyped_storage()._cdata,
                    None if base is None else index.of(base),
                )
            )
    return seen


def observe_oracle(pool: list[OTensor], only: list[int] | None = None) -> list[Observed]:
    index = _PoolIndex(pool)
    seen = []
    for t in pool if only is None else (pool[i] for i in only):
        grad = t.grad
        values = t.values()
        requires_grad = t.requires_grad
        is_leaf = _read(lambda: t.is_leaf)  # noqa: B023 - called at once; may regenerate grad_fn
        has_grad_fn = _read(lambda: t.has_grad_fn)  # noqa: B023
        version = _read(lambda: t.version)  # noqa: B023
        seen.append(
            Observed(
                tuple(t.shape),
                t.dtype,
                _device(t.device),
                values,
                tuple(t.strides),
                requires_grad,
                is_leaf,
                has_grad_fn,
                None if grad is None else np.array(grad),
                None
                if grad is None
                else (tuple(np.shape(grad)), t.grad_dtype or t.dtype, _device(t.device)),
                version,
                id(t.storage),
                None if t.base is None else index.of(t.base),
            )
        )
    return seen


def error_kind(error: BaseException) -> str:
    """The oracle's name for a torch error's class, or the exception's type."""
    if isinstance(error, RuntimeError):
        found = classify(str(error))
        if found is not None:
            return found.name
    return f"unclassified {type(error).__name__}"
