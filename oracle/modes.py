"""Inference mode in the model, beyond its tensors (issue 10: grad modes as
modes of their own).

A view of a normal tensor made under torch.inference_mode() is a normal
tensor, tracked as a view with CreationMeta::INFERENCE_MODE: like a view made
under no_grad it cannot be written in place once grad mode is back on (when it
requires grad), nor can its grad_fn be read once its base was written; torch
names inference mode in both errors. The mark sticks to views of it, whatever
mode they are made in (torch's propagate_creation_meta). Inside inference
mode an inference tensor may be written (Engine._write), without a version bump.
"""

from __future__ import annotations

from .errors import ErrorKind, OracleError
from .tensor import OTensor


def mark_view(v: OTensor, t: OTensor, inference_enabled: bool) -> None:
    """v, a tracked view of t just made: marked when made in inference mode, or
    a view of a view that was."""
    if inference_enabled or (t.base is not None and t.inference_view):
        v.inference_view = v.no_grad_view = True
        v.multi_output = False


def check_view_inplace(t: OTensor) -> None:
    """check_inplace on a view written with grad on, whose base requires grad."""
    if t.inference_view:
        raise OracleError(
            ErrorKind.INFERENCE_VIEW_INPLACE,
            "A view was created in inference mode and is being modified inplace in normal mode",
        )
