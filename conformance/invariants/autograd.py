"""The catalogue's rules on custom Functions and saved-tensor hooks, ops in
general, views, leaves, grad modes, dtypes and inference mode."""

from __future__ import annotations

from .invariant import Invariant
from .sources import (
    CHECK_INPLACE,
    DTYPES_DOC,
    INFERENCE_DOC,
    NO_GRAD_DOC,
    VERSION_NOTE,
    VIEW_DOC,
    VIEW_SENTENCE,
)

RULES: tuple[Invariant, ...] = (
    # --- the wider autograd surface (issue 10): custom Functions, saved-tensor hooks ---
    Invariant(
        "function.saved_version_check",
        "A tensor a custom Function saved with save_for_backward and that was then modified "
        "in place makes backward raise when the Function's backward reads ctx.saved_tensors.",
        "In backward, saved tensors can be accessed through the saved_tensors attribute. "
        "Before returning them to the user, a check is made to ensure they weren't used in any "
        "in-place operation that modified their content.",
        "torch/autograd/function.py (FunctionCtx.save_for_backward)",
    ),
    Invariant(
        "function.mark_dirty_returns_input",
        "A custom Function that writes its input in place and marks it dirty returns that "
        "input itself, whose version goes up (torch 2.13: twice, the write and mark_dirty) "
        "and whose history becomes the Function's node (its base's CopySlices, for a view), "
        "also when it required no grad and another input does; each other input gets the "
        "gradient backward returns for it; on a leaf that requires grad it raises, after "
        "the write.",
        "Every tensor that's been modified in-place in a call to forward should be given to "
        "this function, to ensure correctness of our checks.",
        "torch/autograd/function.py (FunctionCtx.mark_dirty)",
    ),
    Invariant(
        "function.backward_none_gradient",
        "A custom Function whose backward returns None for an input hands that input an "
        "undefined gradient: no .grad accumulates for it (a leaf's stays None, or as it "
        "was), built-in nodes behind it pass it on undefined (saved tensors still checked), "
        "a custom Function's node behind it gets zeros (materialize_grads), "
        "autograd.grad(allow_unused=True) gives None for it; the other inputs get their "
        "gradients unchanged (2.0.1 to 2.14.1).",
        "each returned value should be the gradient w.r.t. the corresponding input. If an "
        "input is not a Tensor or is a Tensor not requiring grads, you can just pass None as "
        "a gradient for that input. [set_materialize_grads:] If True, undefined grad tensors "
        "will be expanded to tensors full of zeros prior to calling the backward() and jvp() "
        "methods.",
        "torch/autograd/function.py (Function.backward; FunctionCtx.set_materialize_grads)",
    ),
    Invariant(
        "function.non_differentiable_output",
        "An output a custom Function marked with mark_non_differentiable does not require "
        "grad and has no grad_fn.",
        "This will mark outputs as not requiring gradients, increasing the efficiency of "
        "backward computation.",
        "torch/autograd/function.py (FunctionCtx.mark_non_differentiable)",
    ),
    Invariant(
        "function.view_output",
        "A custom Function that returns a view of its input returns a view (_base is the "
        "input's base, shared memory and version counter) whose grad_fn is the Function's "
        "node; writing it in place in grad mode raises, and once it or its base was written, "
        "reading its grad_fn raises (torch 2.13; under no_grad it is a no_grad view). A view "
        "of an input that requires no grad is marked so too: written in place with an "
        "operand that requires grad it raises, as does reading its grad_fn once its base was "
        "so written (2.0.1 to 2.14.1).",
        "This view was created inside a custom Function (or because an input was returned "
        "as-is) and the autograd logic to handle view+inplace would override the custom "
        "backward associated with the custom Function, leading to incorrect gradients. This "
        "behavior is forbidden. You can fix this by cloning the output of the custom Function.",
        "torch/csrc/autograd/variable.cpp (handle_view_on_rebase, CreationMeta::"
        "IN_CUSTOM_FUNCTION); docs/source/notes/extending.rst (Extending torch.autograd)",
    ),
    Invariant(
        "saved_hooks.pack_unpack",
        "Inside saved_tensors_hooks(pack, unpack), pack runs once for each tensor an op saves "
        "for backward, unpack once when backward needs it, and backward computes with what "
        "unpack returned; a tensor saved through the hooks is not version-checked (a write "
        "after saving does not make backward raise: torch 2.13).",
        "In that context, the pack_hook function will be called every time an operation "
        "saves a tensor for backward [...] The output of pack_hook is then stored in the "
        "computation graph instead of the original tensor. The unpack_hook is called when "
        "the saved tensor needs to be accessed",
        "torch/autograd/graph.py (saved_tensors_hooks)",
    ),
    Invariant(
        "grad.requires_grad_propagates",
        "Outside no_grad, an op's result requires grad exactly when one of its inputs does.",
        "If there's a single input to an operation that requires gradient, its output will also "
        "require gradient. Conversely, only if all inputs don't require gradient, the output also "
        "won't require it.",
        "docs/source/notes/autograd.rst (Excluding subgraphs from backward, torch 1.x; "
        "the same rule as requires_grad in docs/source/notes/autograd.md)",
    ),
    Invariant(
        "grad.formula",
        "backward computes each op's derivative as defined for it, with PyTorch's convention "
        "for complex numbers.",
        "This function accumulates gradients in the leaves [...] (each op's gradient formula "
        "is defined in tools/autograd/derivatives.yaml)",
        "tools/autograd/derivatives.yaml",
    ),
    Invariant(
        "grad.requires_grad_flag_on_leaves",
        "requires_grad can only be switched off on leaves: requires_grad_(False) on a non-leaf "
        "raises.",
        "you can only change requires_grad flags of leaf variables.",
        "torch/csrc/autograd/utils/error_messages.h (requires_grad_leaf_error)",
    ),
    # ops in general
    Invariant(
        "ops.values",
        "Every op computes the values its definition gives (up to the dtype's rounding).",
        "Methods which mutate a tensor are marked with an underscore suffix. For example, "
        "torch.FloatTensor.abs_() computes the absolute value in-place and returns the modified "
        "tensor, while torch.FloatTensor.abs() computes the result in a new tensor.",
        "docs/source/tensors.rst",
    ),
    Invariant(
        "ops.inplace_writes_self",
        "An in-place op writes into the tensor's own memory and returns that same tensor.",
        "torch.FloatTensor.abs_() computes the absolute value in-place and returns the modified "
        "tensor",
        "docs/source/tensors.rst",
    ),
    Invariant(
        "ops.out_of_place_new_tensor",
        "An out-of-place op returns a tensor on new memory and leaves its inputs' values as "
        "they were.",
        "torch.FloatTensor.abs() computes the result in a new tensor.",
        "docs/source/tensors.rst",
    ),
    Invariant(
        "ops.shape_errors",
        "An op whose operands' shapes do not broadcast or fit raises instead of computing "
        "something.",
        'If two tensors x, y are "broadcastable", the resulting tensor size is calculated as '
        "follows [...] in-place operations do not allow the in-place tensor to change shape as "
        "a result of the broadcast.",
        "docs/source/notes/broadcasting.rst",
    ),
    # views
    Invariant(
        "view.shares_storage_and_version",
        "A view shares its base's storage and version counter.",
        "A view shares the version counter of the base Variable",
        VERSION_NOTE,
    ),
    Invariant(
        "view.write_visible",
        "A write through a view is seen in its base, and a write to the base in the view.",
        VIEW_SENTENCE,
        VIEW_DOC,
    ),
    Invariant(
        "view.base_is_root",
        "A view's _base is the root tensor it was taken from, never an intermediate view.",
        "// Set `view_func` using the root base as input.",
        "torch/csrc/autograd/variable.cpp (ViewInfo::chain)",
    ),
    Invariant(
        "view.inplace_updates_base_grad",
        "An in-place op on a view rewrites its base's history, so gradients through the base "
        "and its other views account for it.",
        "if an in-place op is done on view, in rebase_history() of view, which is called after "
        "every in-place op in VariableType.cpp, the grad_fn of base is updated.",
        "torch/csrc/autograd/variable.h (NOTE [ Autograd View Variables ])",
    ),
    Invariant(
        "view.overlapping_write_raises",
        "An in-place write to a tensor whose elements share memory (from expand) raises.",
        "unsupported operation: more than one element of the written-to tensor refers to a "
        "single memory location. Please clone() the tensor before performing the operation.",
        "aten/src/ATen/MemoryOverlap.cpp (assert_no_internal_overlap)",
    ),
    # leaves and grad mode
    Invariant(
        "leaf.inplace_raises",
        "An in-place op on a leaf that requires grad raises, outside no_grad.",
        "a leaf Variable that requires grad is being used in an in-place operation.",
        CHECK_INPLACE,
    ),
    Invariant(
        "leaf.view_inplace_raises",
        "An in-place op on a view of a leaf that requires grad raises, outside no_grad.",
        "a view of a leaf Variable that requires grad is being used in an in-place operation.",
        CHECK_INPLACE,
    ),
    Invariant(
        "nograd.inplace_on_leaf_allowed",
        "Under no_grad, an in-place op on a leaf that requires grad is allowed and writes it.",
        "when performing the training update you'd like to update parameters in-place without "
        "the update being recorded by autograd.",
        "docs/source/notes/autograd.md (Locally disabling gradient computation)",
    ),
    Invariant(
        "nograd.results_dont_require_grad",
        "Under no_grad, results of computations do not require grad, even from inputs that do.",
        "In this mode, the result of every computation will have requires_grad=False, even "
        "when the inputs have requires_grad=True.",
        NO_GRAD_DOC,
    ),
    Invariant(
        "nograd.view_inplace_raises",
        "A view made under no_grad of a tensor that requires grad cannot be modified in place "
        "once grad mode is back on.",
        "A view was created in no_grad mode and is being modified inplace with grad mode "
        "enabled. Given that this use case is ambiguous and error-prone, it is forbidden.",
        "torch/csrc/autograd/variable.cpp (handle_view_on_rebase)",
    ),
    # dtypes
    Invariant(
        "dtype.only_float_complex_require_grad",
        "Floating and complex tensors can require grad; integer and bool tensors cannot.",
        "we only support autograd for floating point Tensor types (half, float, double and "
        "bfloat16) and complex Tensor types (cfloat, cdouble).",
        DTYPES_DOC,
    ),
    Invariant(
        "dtype.inplace_keeps_int_out_of_graph",
        "Writing a value that requires grad into an integer or bool tensor in place never "
        "makes that tensor require grad.",
        "we only support autograd for floating point Tensor types (half, float, double and "
        "bfloat16) and complex Tensor types (cfloat, cdouble).",
        DTYPES_DOC,
    ),
    # inference mode
    Invariant(
        "inference.no_version_counter",
        "Tensors made under inference_mode have no version counter: reading _version raises.",
        "Compared to no_grad, it removes additional overhead by disabling view tracking and "
        "version counter bumps.",
        INFERENCE_DOC,
    ),
    Invariant(
        "inference.not_saved_for_backward",
        "A tensor made under inference_mode cannot be saved for backward by a recorded op.",
        "It is also more restrictive, in that tensors created in this mode cannot be used in "
        "computations recorded by autograd.",
        INFERENCE_DOC,
    ),
    # grad modes as modes of their own (issue 10)
    Invariant(
        "nograd.enable_grad_restores",
        "Inside no_grad, a block under enable_grad records again (results of ops on tensors "
        "that require grad require grad, and backward through them works); leaving it "
        "restores no_grad.",
        "Enables gradient calculation, if it has been disabled via no_grad or set_grad_enabled.",
        "torch/autograd/grad_mode.py (enable_grad)",
    ),
    Invariant(
        "nograd.set_grad_enabled",
        "torch.set_grad_enabled(False/True), as a context manager, as a function or as a "
        "decorator, disables/enables recording as no_grad/enable_grad do, and "
        "torch.is_grad_enabled() reports it.",
        "set_grad_enabled will enable or disable grads based on its argument mode. It can be "
        "used as a context-manager or as a function.",
        "torch/autograd/grad_mode.py (set_grad_enabled)",
    ),
    Invariant(
        "inference.inplace_outside_raises",
        "An in-place op on an inference tensor (or a view of one) outside inference_mode "
        "raises; inside inference_mode it is allowed.",
        "are immutable outside InferenceMode. So an error will be raised if you try to: "
        "mutate their data outside InferenceMode.",
        "docs/cpp/source/notes/inference_mode.rst; c10/core/InferenceMode.h (Inplace update "
        "to inference tensor outside InferenceMode is not allowed)",
    ),
    Invariant(
        "inference.view_inplace_raises",
        "A view of a normal tensor made under inference_mode is a normal tensor; once its base "
        "requires grad, writing it in place with grad mode on raises (and so does reading the "
        "grad_fn of such a view after its base was written).",
        "A view was created in inference mode and is being modified inplace in normal mode. "
        "Given that this use case is ambiguous and error-prone, it is forbidden.",
        "torch/csrc/autograd/variable.cpp (handle_view_on_rebase); "
        "docs/cpp/source/notes/inference_mode.rst",
    ),
)
