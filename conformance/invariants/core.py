"""The catalogue's rules on clone, copy_, detach, .data, gradients and
version counters: the first contract."""

from __future__ import annotations

from .invariant import Invariant
from .sources import (
    ACCUMULATE_GRAD,
    ACCUMULATE_SENTENCE,
    ACCUMULATES,
    AUTOGRAD_NOTES,
    BACKWARD_DOC,
    CHECK_INPLACE,
    CLONE_DIFF,
    CLONE_DOC,
    COPY_DOC,
    COPY_SENTENCE,
    COPY_TESTS,
    DATA_NOTE,
    DATA_SENTENCE,
    DETACH_DOC,
    DETACH_SHARES,
    GRAD_DOC,
    GRAD_SENTENCE,
    VERSION_NOTE,
    VERSION_SENTENCE,
)

RULES: tuple[Invariant, ...] = (
    # clone
    Invariant(
        "clone.new_storage",
        "clone() returns a tensor on new memory: it shares no storage with its source.",
        "Returns a copy of input.",
        CLONE_DOC,
    ),
    Invariant(
        "clone.same_values",
        "A clone has its source's shape, dtype, device and values.",
        "Returns a copy of input.",
        CLONE_DOC,
    ),
    Invariant(
        "clone.write_isolated",
        "Writes to a clone never change its source, and writes to the source never change it.",
        "Returns a copy of input.",
        CLONE_DOC,
    ),
    Invariant(
        "clone.own_version",
        "A clone has its own version counter: in-place writes to the source do not bump it.",
        "Returns a copy of input.",
        CLONE_DOC,
    ),
    Invariant(
        "clone.preserves_strides",
        "Cloning a dense, non-overlapping tensor keeps its strides.",
        "If the input tensor is dense (i.e., non-overlapping strided), its memory format "
        "(including strides) is retained.",
        CLONE_DOC,
    ),
    Invariant(
        "clone.result_in_graph",
        "A clone of a tensor that requires grad requires grad and has a grad_fn; "
        "a clone of one that does not is a leaf without one.",
        CLONE_DIFF,
        CLONE_DOC,
    ),
    Invariant(
        "clone.grad_flows_to_source",
        "Gradient through a clone reaches its source unchanged and adds to other paths' gradients.",
        CLONE_DIFF,
        CLONE_DOC,
    ),
    # copy_
    Invariant(
        "copy.values_copied",
        "dst.copy_(src) fills dst with src's values, broadcast to dst's shape and cast to its "
        "dtype, and returns dst itself.",
        COPY_SENTENCE,
        COPY_DOC,
    ),
    Invariant(
        "copy.keeps_storage",
        "copy_ writes into dst's own memory: dst keeps its storage, shares none with src, and "
        "src is left unchanged.",
        COPY_SENTENCE,
        COPY_DOC,
    ),
    Invariant(
        "copy.result_in_graph",
        "After copy_ from a src that requires grad, dst requires grad and has a grad_fn.",
        "gradient reaches src [...]; copy_ into a leaf that requires grad raises "
        "(established by PyTorch's own tests)",
        COPY_TESTS,
    ),
    Invariant(
        "copy.grad_flows_to_src",
        "Gradient through copy_ reaches src, summed to src's shape and cast to src's dtype.",
        "gradient reaches src (reduced to src's shape and cast to src's dtype)",
        COPY_TESTS,
    ),
    Invariant(
        "copy.overwritten_gets_no_grad",
        "The values copy_ overwrites receive zero gradient.",
        "zero gradient to the old contents of self",
        COPY_TESTS,
    ),
    Invariant(
        "copy.into_grad_leaf_raises",
        "copy_ into a leaf that requires grad raises (outside no_grad).",
        "a leaf Variable that requires grad is being used in an in-place operation.",
        CHECK_INPLACE,
    ),
    # detach
    Invariant(
        "detach.shares_storage",
        "detach() returns a tensor on the same storage as its source.",
        DETACH_SHARES,
        DETACH_DOC,
    ),
    Invariant(
        "detach.shares_version",
        "detach() shares its source's version counter: an in-place write through either bumps "
        "both.",
        "x.detach() shares the version counter of x",
        VERSION_NOTE,
    ),
    Invariant(
        "detach.never_requires_grad",
        "A detached tensor never requires grad: it is a leaf with no grad_fn and no _base.",
        "Returns a new Tensor, detached from the current graph. The result will never require "
        "gradient.",
        DETACH_DOC,
    ),
    Invariant(
        "detach.blocks_gradient",
        "No gradient flows through a detached tensor back to its source.",
        "Returns a new Tensor, detached from the current graph.",
        DETACH_DOC,
    ),
    Invariant(
        "detach.write_visible",
        "An in-place write through a detached tensor is seen by its source, and the other way "
        "round.",
        DETACH_SHARES,
        DETACH_DOC,
    ),
    Invariant(
        "detach.write_then_backward_raises",
        "After an in-place write through a detached tensor, a backward that needs the source's "
        "saved value raises 'modified by an inplace operation'.",
        DETACH_SHARES,
        DETACH_DOC,
    ),
    Invariant(
        "detach.inplace_makes_leaf",
        "detach_() turns a non-view tensor into a leaf that does not require grad; on a view "
        "it raises.",
        "Detaches the Tensor from the graph that created it, making it a leaf. Views cannot be "
        "detached in-place.",
        "torch/_tensor.py (Tensor.detach_)",
    ),
    Invariant(
        "detach.inplace_saved_input_raises",
        "A backward that reads an input a built-in op saved raises once that input was "
        "detached in place; a saved output, or a tensor a custom Function saved, is read as it "
        "is.",
        "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_(). "
        "This is not supported, please use out-of-place `.detach()` instead.",
        "torch/csrc/autograd/saved_variable.cpp (SavedVariable::unpack)",
    ),
    # .data
    Invariant(
        "data.shares_storage",
        ".data returns a tensor on the same storage as its source.",
        "A safer alternative is to use x.detach(), which also returns a Tensor that shares data "
        "with requires_grad=False",
        DATA_NOTE,
    ),
    Invariant(
        "data.own_version",
        ".data has its own version counter: writes through it do not bump the source's.",
        "x.data does not share the version counter of x.",
        VERSION_NOTE,
    ),
    Invariant(
        "data.never_requires_grad",
        ".data never requires grad: it is a leaf with no grad_fn.",
        "which also returns a Tensor that shares data with requires_grad=False",
        DATA_NOTE,
    ),
    Invariant(
        "data.write_is_silent",
        "An in-place write through .data never makes a later backward raise, even when backward "
        "needs the overwritten value.",
        DATA_SENTENCE,
        DATA_NOTE,
    ),
    Invariant(
        "data.write_changes_gradient",
        "After a write through .data, backward computes gradients from the new values.",
        DATA_SENTENCE,
        DATA_NOTE,
    ),
    # gradients
    Invariant(
        "grad.accumulates_across_backward",
        "Each backward call adds its gradient to a leaf's existing .grad.",
        GRAD_SENTENCE,
        GRAD_DOC,
    ),
    Invariant(
        "grad.accumulates_in_place",
        "A leaf's .grad stays the same tensor until it is assigned: backward adds into it in "
        "place (a reference taken earlier sees the sum), and x.data = y keeps it; only "
        "backward with create_graph=True puts a new tensor there, out of place, leaving the "
        "old one as it was.",
        ACCUMULATE_SENTENCE
        + " / `var.set_data(new_data)` shallow-copies all non-autograd TensorImpl fields from "
        "`new_data` to `var`.",
        ACCUMULATE_GRAD + "; torch/csrc/autograd/variable.cpp (VariableHooks::set_data)",
    ),
    Invariant(
        "grad.gradient_argument_kept",
        "The gradient handed to y.backward(g) is only read: no leaf's .grad is g or a view of "
        "it, so a later write to g leaves .grad as it was, and a later backward leaves g as it "
        "was.",
        "gradient (Tensor, optional): The gradient of the function being differentiated w.r.t. "
        "self. [...] This function accumulates gradients in the leaves",
        BACKWARD_DOC,
    ),
    Invariant(
        "grad.accumulates_across_paths",
        "A leaf used along several paths receives the sum of their gradients.",
        ACCUMULATES,
        BACKWARD_DOC,
    ),
    Invariant(
        "grad.matches_leaf",
        "A leaf's .grad has the leaf's shape, dtype and device.",
        GRAD_SENTENCE,
        GRAD_DOC,
    ),
    Invariant(
        "grad.leaves_only",
        "backward populates .grad of leaves only; a non-leaf's .grad stays None.",
        "Only leaf Tensors will have their grad populated during a call to backward(). To get "
        "grad populated for non-leaf Tensors, you can use retain_grad().",
        "torch/_tensor_docs.py (Tensor.is_leaf)",
    ),
    Invariant(
        "grad.retain_grad",
        "retain_grad() makes backward populate a non-leaf's .grad; on a leaf it changes nothing.",
        "Enables this Tensor to have their grad populated during backward(). This is a no-op "
        "for leaf tensors.",
        "torch/_tensor_docs.py (Tensor.retain_grad)",
    ),
    Invariant(
        "grad.backward_twice_raises",
        "A second backward through a graph whose saved tensors were freed raises, unless the "
        "first used retain_graph=True.",
        "If False, the graph used to compute the grads will be freed; If True, it will be "
        "retained.",
        BACKWARD_DOC,
    ),
    Invariant(
        "grad.nonscalar_needs_gradient",
        "backward() on a tensor of more than one element needs a gradient argument.",
        "If the tensor is non-scalar (i.e. its data has more than one element) and requires "
        "gradient, the function additionally requires specifying a gradient.",
        BACKWARD_DOC,
    ),
    Invariant(
        "grad.requires_graph",
        "backward() on a tensor that does not require grad raises.",
        "element 0 of tensors does not require grad and does not have a grad_fn",
        "torch/csrc/autograd/autograd.cpp (run_backward)",
    ),
    # version counters
    Invariant(
        "version.bumps_on_inplace",
        "Every in-place op increases the version counter of the tensor it writes.",
        VERSION_SENTENCE,
        AUTOGRAD_NOTES,
    ),
    Invariant(
        "version.unchanged_out_of_place",
        "Out-of-place ops and reads leave their inputs' version counters unchanged.",
        VERSION_SENTENCE,
        AUTOGRAD_NOTES,
    ),
    Invariant(
        "version.saved_modified_raises",
        "Backward raises 'modified by an inplace operation' when a tensor it saved was written "
        "in place after being saved.",
        VERSION_SENTENCE,
        AUTOGRAD_NOTES,
    ),
    Invariant(
        "version.unsaved_modified_ok",
        "Writing in place to a tensor that backward did not save (or saved a copy of) does not "
        "make backward raise.",
        VERSION_SENTENCE,
        AUTOGRAD_NOTES,
    ),
    Invariant(
        "version.no_grad_bumps",
        "In-place ops under no_grad still increase the version counter.",
        "Every tensor keeps a version counter, that is incremented every time it is marked "
        "dirty in any operation.",
        AUTOGRAD_NOTES,
    ),
)
