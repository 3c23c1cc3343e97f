"""The classes of torch errors the oracle predicts, and how to recognise them."""

from __future__ import annotations

import enum
from functools import cache


class ErrorKind(enum.Enum):
    INPLACE_ON_LEAF = "a leaf Variable that requires grad"
    INPLACE_ON_LEAF_VIEW = "a view of a leaf Variable that requires grad"
    NO_GRAD_VIEW_INPLACE = "created in no_grad mode"
    SAVED_TENSOR_MODIFIED = "modified by an inplace operation"
    BACKWARD_TWICE = "backward through the graph a second time"
    DTYPE_CANNOT_REQUIRE_GRAD = "floating point"
    NO_GRAD_FN = "does not require grad and does not have a grad_fn"
    NONSCALAR_BACKWARD = "grad can be implicitly created only for"
    OVERLAPPING_WRITE = (
        "more than one element of the written-to tensor refers to a single memory location"
    )
    NOT_BROADCASTABLE = "must match the size"
    SHAPE_MISMATCH = "cannot be multiplied"
    VIEW_INCOMPATIBLE = "view size is not compatible"
    NONLEAF_REQUIRES_GRAD = "you can only change requires_grad flags of leaf variables"
    DETACH_VIEW_INPLACE = "Can't detach views in-place"
    # added beyond the first contract (see docs/oracle.md)
    PARTIAL_OVERLAP = "some elements of the input tensor and the written-to tensor refer to"
    INDEX_OUT_OF_RANGE = "out of range"
    INVALID_SHAPE = "is invalid for input of size"
    GRAD_SHAPE_MISMATCH = "Mismatch in shape"
    RETAIN_GRAD_NO_GRAD = "can't retain_grad on Tensor that has requires_grad=False"
    SAVED_TENSOR_DETACHED = "Trying to use a saved tensor that has been detached in-place"
    LEAF_MOVED = "leaf variable has been moved into the graph interior"
    INFERENCE_VERSION = "Inference tensors do not track version counter"
    INFERENCE_SAVED = "Inference tensors cannot be saved for backward"
    INFERENCE_INPLACE = "Inplace update to inference tensor outside InferenceMode"
    INFERENCE_REQUIRES_GRAD = "Setting requires_grad=True on inference tensor outside InferenceMode"
    INFERENCE_VIEW_INPLACE = "created in inference mode"  # a view of a normal tensor (issue 10)
    # the wider surface (issue 10)
    MULTI_OUTPUT_VIEW_INPLACE = "This view is the output of a function that returns multiple views"
    INPUT_NO_GRAD = "One of the differentiated Tensors does not require grad"
    UNUSED_INPUT = "appears to not have been used in the graph"  # autograd.grad, allow_unused off
    GRAD_ASSIGN_MISMATCH = "attempting to assign a gradient"
    CUSTOM_FUNCTION_VIEW = "This view was created inside a custom Function"
    # out=, resize_, set_, _foreach_ (oracle/write_ops.py)
    OUT_AUTOGRAD = "arguments don't support automatic differentiation"
    OUT_CAST = "can't be cast to the desired output type"
    OUT_DTYPE = "Found dtype"
    RESIZE_REQUIRES_GRAD = "cannot resize variables that require grad"
    MUTABLE_LIST_BIT = "fallback doesn't currently support mutable TensorLists"
    # dtype-reinterpreting views (oracle/complex_views.py)
    UNRESOLVED_CONJ = "doesn't work on unresolved conjugated tensors"
    NOT_COMPLEX = "is not implemented for tensors with non-complex dtypes"
    COMPLEX_LAYOUT = "Tensor must have a last dimension"
    DTYPE_VIEW_LAYOUT = "(different element sizes)"  # x.view(dtype)
    HOOK_NO_GRAD = "cannot register a hook on a tensor that doesn't require gradient"
    POST_HOOK_NON_LEAF = "post accumulate grad hooks cannot be registered on non-leaf tensors"
    NO_NODE = "'NoneType' object has no attribute"  # a Node hook on t.grad_fn of a leaf


# More stable substrings per kind; classify() tries these kinds first, in this order.
_ALSO = {
    # (torch prefixes it with "A view was created in no_grad mode" for a view without grad_fn)
    ErrorKind.CUSTOM_FUNCTION_VIEW: (),
    ErrorKind.INPLACE_ON_LEAF_VIEW: (),
    ErrorKind.INPLACE_ON_LEAF: (),
    ErrorKind.NOT_BROADCASTABLE: (
        "doesn't match the broadcast shape",
        "must match the existing size",
        "the number of sizes provided",
        "isn't allowed in a leading, non-existing",
    ),
    ErrorKind.SHAPE_MISMATCH: (
        "must be a matrix",
        "need to be at least 1D",
        "inconsistent tensor size",
        "size mismatch",
        "Expected size for first two dimensions of batch2 tensor",
    ),
    ErrorKind.GRAD_SHAPE_MISMATCH: ("invalid gradient at index", "Mismatch in dtype"),
    ErrorKind.GRAD_ASSIGN_MISMATCH: ("assigned grad has data of a different",),  # before 2.x
    ErrorKind.INDEX_OUT_OF_RANGE: (
        "out of bounds",
        "too many indices",
        "invalid index of a 0-dim",
        "cannot be applied to a 0-dim tensor",
    ),
    ErrorKind.INVALID_SHAPE: (
        "only one dimension can be inferred",
        "invalid shape dimension",
        "can be any value and is ambiguous",
        "duplicate dims",
        "appears multiple times in the list of dims",
        "does not match the length of the desired ordering",
        "expects a tensor with <= 2 dimensions",
    ),
    ErrorKind.COMPLEX_LAYOUT: (  # view_as_complex
        "Tensor must have a stride divisible by 2",
        "Tensor must have a storage_offset divisible by 2",
        "Input tensor must have one or more dimensions",
    ),
}


class OracleError(Exception):
    """An error torch would raise; `kind` names its class."""

    def __init__(self, kind: ErrorKind, detail: str = "") -> None:
        super().__init__(f"{kind.name}: {detail or kind.value}")
        self.kind = kind


def messages(kind: ErrorKind) -> tuple[str, ...]:
    """The substrings that tell a torch error of `kind` (its value first)."""
    return (kind.value, *_ALSO.get(kind, ()))


def classify(message: str) -> ErrorKind | None:
    """The ErrorKind of a torch error message, or None if it is none of them."""
    for substring, k in _patterns():
        if substring in message:
            return k
    return None


@cache
def _patterns() -> tuple[tuple[str, ErrorKind], ...]:
    """(substring, kind) in the order classify tries them: the kinds of _ALSO
    first, each kind's value before its other substrings. Built once: the
    enum lookups cost more than the search."""
    order = list(_ALSO) + [k for k in ErrorKind if k not in _ALSO]
    return tuple((s, k) for k in order for s in (k.value, *_ALSO.get(k, ())))
