"""grad.accumulates_in_place in the differential: a leaf's .grad stays the
same tensor over a step unless the step assigns it.

The model holds .grad's values only, and the same values come out of an
in-place and an out-of-place sum, so this is checked on torch's side alone:
the tensor each leaf's .grad was before a step is held, and compared by
identity after it. The differential never runs backward(create_graph=True),
where AccumulateGrad replaces .grad (accumulate_grad.h); torch.autograd.grad
touches no .grad.
"""

from __future__ import annotations

import warnings

import torch

from conformance.differential.run import Discrepancy

RULE = "grad.accumulates_in_place"
KIND = "grad_identity"
# x.grad = g and x.grad = None assign x's .grad
_ASSIGNS = ("set_grad", "zero_grad")


def held(pool: list[torch.Tensor], lazy: bool = False) -> dict[int, torch.Tensor]:
    """Pool index -> the tensor that leaf's .grad is, for leaves that have one.

    `lazy` (a program that leaves grad_fn unread, Program.reads): a view that
    requires grad is passed over, as its is_leaf reads grad_fn, which
    regenerates a stale view's: the lazy path would never be seen (nor
    register_hook's crash on it, pytorch/pytorch#196459)."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (is_leaf is read first: a non-leaf's .grad warns)
        for i, t in enumerate(pool):
            if lazy and t.requires_grad and t._base is not None:
                continue
            try:
                if t.is_leaf and (g := t.grad) is not None:
                    out[i] = g
            except RuntimeError:  # (a view whose base was written under no_grad)
                continue
    return out


def replaced(run, number: int, step, before: dict[int, torch.Tensor]) -> Discrepancy | None:
    """The first leaf whose .grad the step put another tensor in, where only
    an assignment may: x.grad = ..., or a post-accumulate-grad hook that
    assigns it (the model's leaf has post_hooks)."""
    if not before:
        return None
    after = held(run.torch_pool, run.program.reads == "lazy")
    for i, g in before.items():
        if step.op in _ASSIGNS and step.tensors[:1] == (i,):
            continue
        if getattr(run.oracle_pool[i], "post_hooks", None):
            continue
        if run.oracle_pool[i].retain_node is not None:
            # retain_grad(), then detach_(): a leaf whose retains_grad hook stays on
            # its old node, which sets .grad out of place (`grad = grad + new_grad`,
            # VariableHooks::retain_grad); measured on 2.13.0: another tensor
            continue
        now = after.get(i)
        if now is not None and now is not g:
            return Discrepancy(
                number,
                KIND,
                (i,),
                "the same tensor",
                "another tensor",
                f"t{i}.grad is another tensor after {step.op}: accumulation and this step "
                "keep the tensor .grad was",
            )
    return None
