"""pytorch/pytorch#34082, named: the gradient handed to backward became a
leaf's .grad.

When `y.backward(g)` reaches a leaf through view-like steps only, torch's
AccumulateGrad takes `g` itself (or a view of it) for the leaf's .grad: a
later write to `g` changes .grad, and a later backward accumulates into `g`
in place. The model keeps `g` the program's own, so the first discrepancy
this causes can be anywhere downstream (a .grad, g's values, a version);
what names it is the state torch is in: a leaf's .grad sharing memory with
a gradient that an earlier backward was handed.
"""

from __future__ import annotations

import warnings

import torch

RULE = "grad.gradient_argument_kept"
_KINDS = ("grad", "values", "version", "sharing")


def _storage(t: torch.Tensor) -> int | None:
    """Its storage's identity (an empty tensor's too: a view of an empty g
    shares g's storage object, and its version counter)."""
    try:
        return t.untyped_storage()._cdata
    except RuntimeError:  # (a tensor without storage: nothing to share)
        return None


def _leaf_grads(pool: list[torch.Tensor]) -> dict[int, int]:
    """Pool index -> storage of that leaf's .grad, for leaves that have one."""
    out = {}
    for i, t in enumerate(pool):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if not t.is_leaf or t.grad is None:
                    continue
                storage = _storage(t.grad)
        except RuntimeError:  # (a view whose base was written under no_grad: .grad raises)
            continue
        if storage is not None:
            out[i] = storage
    return out


def note_handed(run, g: int) -> None:
    """Remember the memory the gradient at pool index g has as backward takes it."""
    if g < len(run.torch_pool) and (storage := _storage(run.torch_pool[g])) is not None:
        run.handed.setdefault(g, set()).add(storage)


def rule(run, d) -> str | None:
    """RULE when a leaf's .grad shares memory with a gradient an earlier
    backward_g step was handed, and the discrepancy is on one of them."""
    if d.kind not in _KINDS:
        return None
    handed = {
        step.tensors[1] for step in run.program.steps[: d.step + 1] if step.op == "backward_g"
    }
    if not handed:
        return None
    pool = run.torch_pool
    grads = _leaf_grads(pool)
    for g in handed:
        if g >= len(pool):
            continue
        # its memory now, and when handed: g.set_(...) since moves g, while the
        # leaf's .grad keeps that memory and g's version counter (a thorough run:
        # t0.grad = view_as_real(t3), then t3.set_(t2), then a second backward)
        storages = {_storage(pool[g])} | run.handed.get(g, set())
        storages.discard(None)
        sharing = {leaf for leaf, s in grads.items() if s in storages}
        if sharing and set(d.tensors) & (sharing | {g} | _aliases(pool, storages)):
            return RULE
    return None


def _aliases(pool: list[torch.Tensor], storages: set[int]) -> set[int]:
    return {i for i, t in enumerate(pool) if _storage(t) in storages}
