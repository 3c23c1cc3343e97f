"""The invariant catalogue: every rule the suite checks, as data.

Each entry has a stable ID (tests, reports and failures speak in these), a
one-line statement, PyTorch's own sentence with the file of pytorch/pytorch it
comes from, and the torch releases it applies to (a PEP 440 specifier).
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version


@dataclass(frozen=True)
class Invariant:
    id: str
    statement: str
    quote: str
    source: str
    versions: str = ">=2.0"

    @property
    def family(self) -> str:
        return self.id.split(".")[0]

    def applies_to(self, torch_version: str) -> bool:
        release = Version(torch_version).release  # "2.13.0+cpu" and "2.14.0a0" alike
        return Version(".".join(map(str, release))) in SpecifierSet(self.versions)


_CLONE_DOC = "torch/_torch_docs.py (torch.clone)"
_CLONE_DIFF = (
    "This function is differentiable, so gradients will flow back from the result of this "
    "operation to input. To create a tensor without an autograd relationship to input see "
    "detach()."
)
_COPY_DOC = "torch/_tensor_docs.py (Tensor.copy_)"
_COPY_SENTENCE = (
    "Copies the elements from src into self tensor and returns self. The src tensor must be "
    "broadcastable with the self tensor. It may be of a different data type or reside on a "
    "different device."
)
_COPY_TESTS = "test/test_autograd.py (test_copy_, test_copy_r_to_c)"
_DETACH_DOC = "torch/_tensor.py (Tensor.detach)"
_DETACH_SHARES = (
    "Returned Tensor shares the same storage with the original one. In-place modifications on "
    "either of them will be seen, and may trigger errors in correctness checks."
)
_VERSION_NOTE = "c10/core/TensorImpl.h (NOTE [ Version Counter Sharing ])"
_DATA_NOTE = "0.4.0 release notes, quoted in pytorch/pytorch#6990"
_DATA_SENTENCE = (
    "Any changes on x.data wouldn't be tracked by autograd, and the computed gradients would be "
    "incorrect if x is needed in a backward pass."
)
_BACKWARD_DOC = "torch/_tensor.py (Tensor.backward)"
_ACCUMULATES = (
    "This function accumulates gradients in the leaves - you might need to zero .grad "
    "attributes or set them to None before calling it."
)
_GRAD_DOC = "torch/_tensor_docs.py (Tensor.grad)"
_GRAD_SENTENCE = (
    "This attribute is None by default and becomes a Tensor the first time a call to "
    "backward() computes gradients for self. The attribute will then contain the gradients "
    "computed and future calls to backward() will accumulate (add) gradients into it."
)
_AUTOGRAD_NOTES = "docs/source/notes/autograd.md (In-place correctness checks)"
_VERSION_SENTENCE = (
    "Every tensor keeps a version counter, that is incremented every time it is marked dirty in "
    "any operation. When a Function saves any tensors for backward, a version counter of their "
    "containing Tensor is saved as well. Once you access self.saved_tensors it is checked, and "
    "if it is greater than the saved value an error is raised."
)
_VIEW_DOC = "docs/source/tensor_view.rst"
_VIEW_SENTENCE = (
    "View tensor shares the same underlying data with its base tensor. Supporting View avoids "
    "explicit data copy [...] if you edit the data in the view, it will be reflected in the "
    "base tensor as well."
)
_CHECK_INPLACE = "torch/csrc/autograd/VariableTypeUtils.h (check_inplace)"
_NO_GRAD_DOC = "torch/autograd/grad_mode.py (no_grad)"
_DTYPES_DOC = "torch/autograd/__init__.py"
_INFERENCE_DOC = "torch/autograd/grad_mode.py (inference_mode)"
_SCHEMA_README = "aten/src/ATen/native/README.md (func: Annotations)"
_INDEX_PUT_SENTENCE = (
    "Puts values from the tensor values into the tensor self using the indices specified in "
    "indices (which is a tuple of Tensors). The expression tensor.index_put_(indices, values) "
    "is equivalent to tensor[indices] = values. Returns self."
)
_MULTI_OUTPUT_SOURCE = (
    "torch/csrc/autograd/variable.cpp (handle_view_on_rebase); an error since torch 1.9 "
    "(pytorch/pytorch#56093, which ended the deprecation begun in 1.7: a UserWarning "
    "'Inplace operators on such views are being deprecated' in 1.7 and 1.8)"
)

CATALOGUE: tuple[Invariant, ...] = (
    # clone
    Invariant(
        "clone.new_storage",
        "clone() returns a tensor on new memory: it shares no storage with its source.",
        "Returns a copy of input.",
        _CLONE_DOC,
    ),
    Invariant(
        "clone.same_values",
        "A clone has its source's shape, dtype, device and values.",
        "Returns a copy of input.",
        _CLONE_DOC,
    ),
    Invariant(
        "clone.write_isolated",
        "Writes to a clone never change its source, and writes to the source never change it.",
        "Returns a copy of input.",
        _CLONE_DOC,
    ),
    Invariant(
        "clone.own_version",
        "A clone has its own version counter: in-place writes to the source do not bump it.",
        "Returns a copy of input.",
        _CLONE_DOC,
    ),
    Invariant(
        "clone.preserves_strides",
        "Cloning a dense, non-overlapping tensor keeps its strides.",
        "If the input tensor is dense (i.e., non-overlapping strided), its memory format "
        "(including strides) is retained.",
        _CLONE_DOC,
    ),
    Invariant(
        "clone.result_in_graph",
        "A clone of a tensor that requires grad requires grad and has a grad_fn; "
        "a clone of one that does not is a leaf without one.",
        _CLONE_DIFF,
        _CLONE_DOC,
    ),
    Invariant(
        "clone.grad_flows_to_source",
        "Gradient through a clone reaches its source unchanged and adds to other paths' gradients.",
        _CLONE_DIFF,
        _CLONE_DOC,
    ),
    # copy_
    Invariant(
        "copy.values_copied",
        "dst.copy_(src) fills dst with src's values, broadcast to dst's shape and cast to its "
        "dtype, and returns dst itself.",
        _COPY_SENTENCE,
        _COPY_DOC,
    ),
    Invariant(
        "copy.keeps_storage",
        "copy_ writes into dst's own memory: dst keeps its storage, shares none with src, and "
        "src is left unchanged.",
        _COPY_SENTENCE,
        _COPY_DOC,
    ),
    Invariant(
        "copy.result_in_graph",
        "After copy_ from a src that requires grad, dst requires grad and has a grad_fn.",
        "gradient reaches src [...]; copy_ into a leaf that requires grad raises "
        "(established by PyTorch's own tests)",
        _COPY_TESTS,
    ),
    Invariant(
        "copy.grad_flows_to_src",
        "Gradient through copy_ reaches src, summed to src's shape and cast to src's dtype.",
        "gradient reaches src (reduced to src's shape and cast to src's dtype)",
        _COPY_TESTS,
    ),
    Invariant(
        "copy.overwritten_gets_no_grad",
        "The values copy_ overwrites receive zero gradient.",
        "zero gradient to the old contents of self",
        _COPY_TESTS,
    ),
    Invariant(
        "copy.into_grad_leaf_raises",
        "copy_ into a leaf that requires grad raises (outside no_grad).",
        "a leaf Variable that requires grad is being used in an in-place operation.",
        _CHECK_INPLACE,
    ),
    # detach
    Invariant(
        "detach.shares_storage",
        "detach() returns a tensor on the same storage as its source.",
        _DETACH_SHARES,
        _DETACH_DOC,
    ),
    Invariant(
        "detach.shares_version",
        "detach() shares its source's version counter: an in-place write through either bumps "
        "both.",
        "x.detach() shares the version counter of x",
        _VERSION_NOTE,
    ),
    Invariant(
        "detach.never_requires_grad",
        "A detached tensor never requires grad: it is a leaf with no grad_fn and no _base.",
        "Returns a new Tensor, detached from the current graph. The result will never require "
        "gradient.",
        _DETACH_DOC,
    ),
    Invariant(
        "detach.blocks_gradient",
        "No gradient flows through a detached tensor back to its source.",
        "Returns a new Tensor, detached from the current graph.",
        _DETACH_DOC,
    ),
    Invariant(
        "detach.write_visible",
        "An in-place write through a detached tensor is seen by its source, and the other way "
        "round.",
        _DETACH_SHARES,
        _DETACH_DOC,
    ),
    Invariant(
        "detach.write_then_backward_raises",
        "After an in-place write through a detached tensor, a backward that needs the source's "
        "saved value raises 'modified by an inplace operation'.",
        _DETACH_SHARES,
        _DETACH_DOC,
    ),
    Invariant(
        "detach.inplace_makes_leaf",
        "detach_() turns a non-view tensor into a leaf that does not require grad; on a view "
        "it raises.",
        "Detaches the Tensor from the graph that created it, making it a leaf. Views cannot be "
        "detached in-place.",
        "torch/_tensor.py (Tensor.detach_)",
    ),
    # .data
    Invariant(
        "data.shares_storage",
        ".data returns a tensor on the same storage as its source.",
        "A safer alternative is to use x.detach(), which also returns a Tensor that shares data "
        "with requires_grad=False",
        _DATA_NOTE,
    ),
    Invariant(
        "data.own_version",
        ".data has its own version counter: writes through it do not bump the source's.",
        "x.data does not share the version counter of x.",
        _VERSION_NOTE,
    ),
    Invariant(
        "data.never_requires_grad",
        ".data never requires grad: it is a leaf with no grad_fn.",
        "which also returns a Tensor that shares data with requires_grad=False",
        _DATA_NOTE,
    ),
    Invariant(
        "data.write_is_silent",
        "An in-place write through .data never makes a later backward raise, even when backward "
        "needs the overwritten value.",
        _DATA_SENTENCE,
        _DATA_NOTE,
    ),
    Invariant(
        "data.write_changes_gradient",
        "After a write through .data, backward computes gradients from the new values.",
        _DATA_SENTENCE,
        _DATA_NOTE,
    ),
    # gradients
    Invariant(
        "grad.accumulates_across_backward",
        "Each backward call adds its gradient to a leaf's existing .grad.",
        _GRAD_SENTENCE,
        _GRAD_DOC,
    ),
    Invariant(
        "grad.gradient_argument_kept",
        "The gradient handed to y.backward(g) is only read: no leaf's .grad is g or a view of "
        "it, so a later write to g leaves .grad as it was, and a later backward leaves g as it "
        "was.",
        "gradient (Tensor, optional): The gradient of the function being differentiated w.r.t. "
        "self. [...] This function accumulates gradients in the leaves",
        _BACKWARD_DOC,
    ),
    Invariant(
        "grad.accumulates_across_paths",
        "A leaf used along several paths receives the sum of their gradients.",
        _ACCUMULATES,
        _BACKWARD_DOC,
    ),
    Invariant(
        "grad.matches_leaf",
        "A leaf's .grad has the leaf's shape, dtype and device.",
        _GRAD_SENTENCE,
        _GRAD_DOC,
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
        _BACKWARD_DOC,
    ),
    Invariant(
        "grad.nonscalar_needs_gradient",
        "backward() on a tensor of more than one element needs a gradient argument.",
        "If the tensor is non-scalar (i.e. its data has more than one element) and requires "
        "gradient, the function additionally requires specifying a gradient.",
        _BACKWARD_DOC,
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
        _VERSION_SENTENCE,
        _AUTOGRAD_NOTES,
    ),
    Invariant(
        "version.unchanged_out_of_place",
        "Out-of-place ops and reads leave their inputs' version counters unchanged.",
        _VERSION_SENTENCE,
        _AUTOGRAD_NOTES,
    ),
    Invariant(
        "version.saved_modified_raises",
        "Backward raises 'modified by an inplace operation' when a tensor it saved was written "
        "in place after being saved.",
        _VERSION_SENTENCE,
        _AUTOGRAD_NOTES,
    ),
    Invariant(
        "version.unsaved_modified_ok",
        "Writing in place to a tensor that backward did not save (or saved a copy of) does not "
        "make backward raise.",
        _VERSION_SENTENCE,
        _AUTOGRAD_NOTES,
    ),
    Invariant(
        "version.no_grad_bumps",
        "In-place ops under no_grad still increase the version counter.",
        "Every tensor keeps a version counter, that is incremented every time it is marked "
        "dirty in any operation.",
        _AUTOGRAD_NOTES,
    ),
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
        "and whose history becomes the Function's node (its base's CopySlices, for a view); "
        "on a leaf that requires grad it raises, after the write.",
        "Every tensor that's been modified in-place in a call to forward should be given to "
        "this function, to ensure correctness of our checks.",
        "torch/autograd/function.py (FunctionCtx.mark_dirty)",
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
        "reading its grad_fn raises (torch 2.13; under no_grad it is a no_grad view).",
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
        _VERSION_NOTE,
    ),
    Invariant(
        "view.write_visible",
        "A write through a view is seen in its base, and a write to the base in the view.",
        _VIEW_SENTENCE,
        _VIEW_DOC,
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
        _CHECK_INPLACE,
    ),
    Invariant(
        "leaf.view_inplace_raises",
        "An in-place op on a view of a leaf that requires grad raises, outside no_grad.",
        "a view of a leaf Variable that requires grad is being used in an in-place operation.",
        _CHECK_INPLACE,
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
        _NO_GRAD_DOC,
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
        _DTYPES_DOC,
    ),
    Invariant(
        "dtype.inplace_keeps_int_out_of_graph",
        "Writing a value that requires grad into an integer or bool tensor in place never "
        "makes that tensor require grad.",
        "we only support autograd for floating point Tensor types (half, float, double and "
        "bfloat16) and complex Tensor types (cfloat, cdouble).",
        _DTYPES_DOC,
    ),
    # inference mode
    Invariant(
        "inference.no_version_counter",
        "Tensors made under inference_mode have no version counter: reading _version raises.",
        "Compared to no_grad, it removes additional overhead by disabling view tracking and "
        "version counter bumps.",
        _INFERENCE_DOC,
    ),
    Invariant(
        "inference.not_saved_for_backward",
        "A tensor made under inference_mode cannot be saved for backward by a recorded op.",
        "It is also more restrictive, in that tensors created in this mode cannot be used in "
        "computations recorded by autograd.",
        _INFERENCE_DOC,
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
    # schema: every ATen operator against its own schema's annotations
    Invariant(
        "schema.alias_shares_storage",
        "An output annotated as an alias of an input (Tensor(a) with no '!') shares that "
        "input's storage.",
        "There is also another situation in which we use annotations, namely views. "
        "`transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)` An alias to the memory "
        "represented by `self` may be also returned, however it is not mutated.",
        _SCHEMA_README,
    ),
    Invariant(
        "schema.fresh_output",
        "An output without an alias annotation shares storage with no input.",
        "`abs(Tensor self) -> Tensor` stays the same as it will always allocate new memory.",
        _SCHEMA_README,
    ),
    Invariant(
        "schema.input_unchanged",
        "An input not annotated mutable keeps its values, shape, strides, storage offset and "
        "version counter.",
        "A write annotation, as indicated by an exclamation mark, indicates that they both "
        "*may* also be written to.",
        _SCHEMA_README,
    ),
    Invariant(
        "schema.mutable_bumps_version",
        "An input annotated mutable (Tensor(a!)) that the op wrote has its version counter bumped.",
        "`abs_(Tensor(a!) self) -> Tensor(a!)` `self` may be written to and returned. [...] "
        "Every tensor keeps a version counter, that is incremented every time it is marked "
        "dirty in any operation.",
        _SCHEMA_README + "; docs/source/notes/autograd.md (In-place correctness checks)",
    ),
    Invariant(
        "schema.out_returns_out",
        "An out= call returns `out` itself and writes its result into it.",
        "`abs(Tensor self, *, Tensor(a!) out) -> Tensor(a!)` In the Python frontend `out` can "
        "be passed as a keyword argument and may be written to.",
        _SCHEMA_README,
    ),
    Invariant(
        "schema.inplace_returns_self",
        "An in-place variant returns `self` itself.",
        "`abs_(Tensor(a!) self) -> Tensor(a!)` `self` may be written to and returned. Further, "
        "the annotation indicates that the return value may alias the input. This indicates an "
        "inplace function and by convention ends in a single '_'.",
        _SCHEMA_README,
    ),
    # torch.compile: eager against compiled (conformance/compiled/, docs/compile.md)
    Invariant(
        "compile.raises",
        "A compiled function raises where eager raises, an error of the same class, and only "
        "there; so do the eager steps after it (backward included).",
        "Optimizes given model/function using TorchDynamo and specified backend.",
        "torch/__init__.py (torch.compile)",
    ),
    Invariant(
        "compile.aliasing",
        "A compiled function's outputs share memory with its inputs and with each other, at "
        "the same storage offsets, exactly where eager's do.",
        "AOT Autograd contains a pretty non-trivial amount of logic to handle edge cases around "
        "aliasing and mutation that are external to the graph (they show up as side effects in "
        "some way when you run the graph).",
        "torch/_functorch/aot_autograd.py",
    ),
    Invariant(
        "compile.input_mutation",
        "After a compiled call, every input holds the values, shape and strides eager leaves "
        "in it: eager's mutations are visible and there are no others.",
        "If we compile a function that mutates inputs, then those input mutations are real side "
        "effects that a user expects to see after running the compiled graph.",
        "torch/_functorch/aot_autograd.py (Note [AOT Autograd: input data mutations])",
    ),
    Invariant(
        "compile.outputs",
        "A compiled function's outputs have eager's shapes, dtypes and values (within the "
        "dtype's tolerance), and a view's strides are eager's.",
        "Inductor (and other backends) are free to change the memory format of graph outputs, if "
        "it results in better performance. This can result in problems if a user later tries to "
        ".view() that output expecting it to have one set of strides, when it has a different "
        "set of strides. By including the view op directly in the graph, inductor takes that "
        "into account",
        "torch/_functorch/aot_autograd.py (Note [AOT Autograd: outputs aliasing inputs or "
        "intermediates!])",
    ),
    Invariant(
        "compile.version",
        "A compiled call increases an input's version counter where eager's call increases "
        "it, and leaves it where eager leaves it.",
        "Every tensor keeps a version counter, that is incremented every time it is marked "
        "dirty in any operation.",
        "docs/source/notes/autograd.md (In-place correctness checks)",
    ),
    Invariant(
        "compile.autograd_flags",
        "After a compiled call, requires_grad, is_leaf and the presence of grad_fn of every "
        "input and output are eager's.",
        "When you apply torch.compile to a function in your model's forward pass, it will "
        "automatically generate a backward pass for the compiled function.",
        "docs/source/torch.compiler_backward.md",
    ),
    Invariant(
        "compile.grad",
        "Backward through a compiled call gives every leaf eager's .grad, and a second backward "
        "accumulates into it as eager's does.",
        "This function accumulates gradients in the leaves - you might need to zero .grad "
        "attributes or set them to None before calling it.",
        _BACKWARD_DOC,
    ),
    # --- the wider autograd surface (issue 10): multi-output views --------------------
    Invariant(
        "view.multi_output_inplace_raises",
        "An in-place op that autograd records, on an output of unbind, split, "
        "split_with_sizes or chunk (or on a view of one), raises; the outputs of "
        "tensor_split, hsplit and vsplit are ordinary views and may be written.",
        "This view is the output of a function that returns multiple views. Such functions "
        "do not allow the output views to be modified inplace. You should replace the inplace "
        "operation by an out-of-place one.",
        _MULTI_OUTPUT_SOURCE,
        ">=1.9",
    ),
    Invariant(
        "view.multi_output_base_written_raises",
        "Once an output of unbind, split, split_with_sizes or chunk of a tensor that requires "
        "grad, or its base, has been written in place, reading its grad_fn raises.",
        "Output 0 of UnbindBackward0 is a view and its base or another view of its base has "
        "been modified inplace. This view is the output of a function that returns multiple "
        "views.",
        _MULTI_OUTPUT_SOURCE,
        ">=1.9",
    ),
    # --- the wider autograd surface (issue 10): lazily resolved and dtype views -------
    Invariant(
        "view.conj_lazy",
        "conj() of a complex tensor x (and x.H, x.mH, x.adjoint()) is a view with the "
        "conjugate bit set: it shares x's memory and version counter, reads as the conjugate, "
        "a write through it stores the conjugate of what is written, and its gradient reaches "
        "x conjugated; conj() of a tensor that is not complex is x itself. torch._neg_view "
        "is the same with the negative bit.",
        "Returns a view of input with a flipped conjugate bit. If input has a non-complex "
        "dtype, this function just returns input. [...] torch.conj() performs a lazy "
        "conjugation, but the actual conjugated tensor can be materialized at any time using "
        "torch.resolve_conj().",
        "torch/_torch_docs.py (torch.conj); docs/source/tensor_view.rst (conj, adjoint, H, mH)",
    ),
    Invariant(
        "view.conj_resolve",
        "resolve_conj() of a tensor with the conjugate bit is a new tensor in new memory holding "
        "the conjugate values, bit cleared, in x's graph; of a tensor without the bit it is the "
        "tensor itself (resolve_neg() alike for the negative bit).",
        "Returns a new tensor with materialized conjugation if input's conjugate bit is set to "
        "True, else returns input. The output tensor will always have its conjugate bit set "
        "to False.",
        "torch/_torch_docs.py (torch.resolve_conj, torch.resolve_neg)",
    ),
    Invariant(
        "view.complex_reinterprets",
        "view_as_real(x), x.real and x.imag of a complex x, and view_as_complex(x) of a float "
        "x, are views that share x's memory and version counter and read it as the other "
        "dtype: view_as_real adds a last dim of 2 and doubles the strides; view_as_complex "
        "needs a last dim of 2 with stride 1, even strides and offset, and drops it; x.real "
        "of a real x is x and x.imag of one raises; view_as_real of a conj view raises. "
        "Writes and gradients pass between the parts and the complex numbers.",
        "Returns a view of input as a real tensor. For an input complex tensor of size m1, "
        "m2, ..., mi, this function returns a new real tensor of size m1, m2, ..., mi, 2, "
        "where the last dimension of size 2 represents the real and imaginary components of "
        "complex numbers. [...] (view_as_complex) the tensor must have a stride of 1 for its "
        "last dimension. The strides of all other dimensions must be even numbers. [...] "
        "(real, imag) The returned tensor and self share the same underlying storage.",
        "torch/_torch_docs.py (torch.view_as_real, torch.view_as_complex, torch.real, "
        "torch.imag); docs/source/tensor_view.rst",
    ),
    Invariant(
        "view.dtype_reinterprets",
        "x.view(dtype) reads x's bytes as dtype: it shares x's memory and version counter, "
        "has no _base and never requires grad; for a dtype of another element size the last "
        "dim scales by the ratio, which needs x.dim() > 0 and x.stride(-1) == 1 (and, for a "
        "larger element, a last size, offset and other strides divisible by the ratio), else "
        "it raises.",
        "Returns a new tensor with the same data as the self tensor but of a different dtype. "
        "If the element size of dtype is different than that of self.dtype, then the size of "
        "the last dimension of the output will be scaled proportionally. [...] If any of the "
        "above conditions are not met, an error is thrown.",
        "torch/_tensor_docs.py (Tensor.view, the view(dtype) overload); "
        "docs/source/tensor_view.rst",
    ),
    # --- the wider autograd surface (issue 10): writes at indexed positions ------------
    Invariant(
        "index.writes_in_place",
        "An indexed write (x[i] = v with a tensor index, index_put_, masked_fill_, "
        "index_add_, index_copy_, scatter_) changes exactly the indexed elements of x, in "
        "x's own memory, and returns x itself.",
        _INDEX_PUT_SENTENCE,
        "torch/_tensor_docs.py (Tensor.index_put_)",
    ),
    Invariant(
        "index.grad_to_source",
        "Gradient through an indexed write reaches the source from the elements it wrote, and "
        "the overwritten elements of x get none (index_add_ adds, so x gets all of it).",
        _INDEX_PUT_SENTENCE,
        "tools/autograd/derivatives.yaml (index_put, index_copy, index_add, scatter.src, "
        "masked_fill.Scalar)",
    ),
    # --- the wider autograd surface (issue 10): out=, resize_, set_, _foreach_ ----------
    Invariant(
        "out.writes_out",
        "op(..., out=o) returns o itself, holding the result, in o's own memory; o's version "
        "goes up and the inputs are unchanged.",
        "out (Tensor, optional) - the output tensor.",
        "torch/_torch_docs.py (torch.add, torch.mul, torch.exp, torch.neg: the out argument)",
    ),
    Invariant(
        "out.resizes_out",
        "An out of another shape than the result is resized to it (its storage kept when it "
        "fits); a non-empty one with a UserWarning, an empty one silently.",
        "An output with one or more elements was resized since it had shape [...], which does "
        "not match the required output shape [...]. This behavior is deprecated, and in a "
        "future PyTorch release outputs will not be resized unless they have zero elements.",
        "aten/src/ATen/native/Resize.cpp (resize_output_check)",
    ),
    Invariant(
        "out.no_autograd",
        "In grad mode, a call with out= raises when any argument (out included) requires grad; "
        "under no_grad it runs and records nothing: out keeps its requires_grad and grad_fn.",
        "functions with out=... arguments don't support automatic differentiation, but one of "
        "the arguments requires grad.",
        "torch/csrc/autograd/VariableTypeUtils.h (throw_error_out_requires_grad)",
    ),
    Invariant(
        "out.dtype_cast",
        "The result is cast into out's dtype where torch.can_cast allows it (never to a lower "
        "kind: complex to real, float to integer, anything to bool), else the call raises "
        "before writing (neg takes only an out of its input's dtype).",
        "When the output tensor of an arithmetic operation is specified, we allow casting to "
        "its dtype except that: An integral output tensor cannot accept a floating point "
        "tensor. A boolean output tensor cannot accept a non-boolean tensor. A non-complex "
        "output tensor cannot accept a complex tensor.",
        "docs/source/tensor_attributes.rst (Type promotion doc)",
    ),
    Invariant(
        "resize.in_place",
        "x.resize_(shape) returns x with that shape, contiguous over the same storage (grown "
        "in place when too small), its elements in storage order kept; x's version goes up "
        "when the shape changes (a resize_ to the same shape changes nothing).",
        "Resizes self tensor to the specified size. If the number of elements is larger than "
        "the current storage size, then the underlying storage is resized to fit the new "
        "number of elements. If the number of elements is smaller, the underlying storage is "
        "not changed. Existing elements are preserved but any new memory is uninitialized.",
        "torch/_tensor_docs.py (Tensor.resize_); torch/csrc/autograd/VariableTypeManual.cpp "
        "(the version bump, pytorch/pytorch#96403)",
    ),
    Invariant(
        "resize.requires_grad_raises",
        "resize_ of a tensor that requires grad (a leaf, a result in the graph, a view of "
        "one) raises, in grad mode and under no_grad, and leaves it as it was.",
        "cannot resize variables that require grad",
        "torch/csrc/autograd/VariableTypeManual.cpp (resize_)",
    ),
    Invariant(
        "set.shares_source",
        "x.set_(y) returns x sharing y's storage, offset, sizes and strides: a later write "
        "through either is seen through the other. x keeps its own version counter (bumped "
        "once; y's does not move, and later writes through one do not move the other's) and "
        "its _base.",
        "Sets the underlying storage, size, and strides. If source is a tensor, self tensor "
        "will share the same storage and have the same size and strides as source. Changes "
        "to elements in one tensor will be reflected in the other.",
        "torch/_tensor_docs.py (Tensor.set_)",
    ),
    Invariant(
        "foreach.inplace_grad",
        "torch._foreach_add_/_foreach_mul_ (a scalar or a list) write each tensor of the list "
        "in place (its version goes up) and autograd records each write as add_/mul_ would: a "
        "new grad_fn, the same gradients; a leaf that requires grad is refused, in grad mode, "
        "before anything is written.",
        "Generate a `grad_fn` for each (tuple of) `Tensor`(s) of the same index for "
        "`_foreach_foo_` and each `grad_fn` is `FooBackward`.",
        "tools/autograd/gen_variable_type.py (pytorch/pytorch#96405, per-Tensor grad_fn for "
        "in-place foreach functions)",
    ),
    # --- the wider autograd surface (issue 10): gradient APIs ----------------------------
    Invariant(
        "grad.autograd_grad_returns",
        "torch.autograd.grad(y, x, g) returns the gradient of y with respect to x (None, with "
        "allow_unused, where y does not depend on x) and changes no tensor's .grad; an x that "
        "does not require grad raises.",
        "Compute and return the sum of gradients of outputs with respect to the inputs. [...] "
        "To accumulate gradient for other parts of the graph, please use "
        "torch.autograd.backward.",
        "torch/autograd/__init__.py (torch.autograd.grad)",
    ),
    Invariant(
        "grad.assign_checks",
        "Assigning x.grad a tensor of another shape, dtype or device raises; a matching one "
        "becomes x.grad, and later backward calls add to it.",
        "attempting to assign a gradient of size '[3, 2]' to a tensor of size '[2, 3]'. Please "
        "ensure that the gradient and the tensor are the same size",
        "torch/csrc/autograd/python_variable.cpp (THPVariable_set_grad)",
    ),
    Invariant(
        "grad.hook_replaces_gradient",
        "A hook registered with x.register_hook that returns a tensor replaces the gradient "
        "of x: that one flows on through x's grad_fn and reaches .grad (of a leaf, or a "
        "retained x); a hook that returns None leaves it as it was.",
        "The hook should not modify its argument, but it can optionally return a new gradient "
        "which will be used in place of :attr:`grad`.",
        "torch/_tensor.py (Tensor.register_hook)",
    ),
    Invariant(
        "grad.hooks_run_in_order",
        "Hooks registered on one tensor run in registration order, each on the result of the "
        "one before; a hook whose handle was removed does not run.",
        "If multiple hooks of the same type are registered on the same Tensor or Node they are "
        "executed in the order in which they are registered. Hooks that are executed later can "
        "observe the modifications to the gradient made by earlier hooks.",
        "docs/source/notes/autograd.rst (Backward Hooks execution)",
    ),
    Invariant(
        "grad.post_accumulate_hook",
        "A hook registered with x.register_post_accumulate_grad_hook runs once per backward "
        "that reaches the leaf x, after its .grad was accumulated, and sees (and may replace) "
        "that .grad; registering one on a non-leaf raises.",
        "The hook will be called after all gradients for a tensor have been accumulated, "
        "meaning that the .grad field has been updated on that tensor. [...] Registering this "
        "hook on a non-leaf tensor will error!",
        "torch/_tensor.py (Tensor.register_post_accumulate_grad_hook)",
        versions=">=2.1",
    ),
    Invariant(
        "grad.node_prehook_replaces_grad_outputs",
        "A pre-hook registered with node.register_prehook (on a tensor's grad_fn, or a leaf's "
        "AccumulateGrad reached through next_functions) runs each time that node runs, after "
        "the tensor hooks, on its grad_outputs; a tuple it returns replaces them (None leaves "
        "them); pre-hooks of one node run in registration order, each on the previous "
        "result, a removed one never.",
        "The hook should not modify its argument, but it can optionally return a new gradient "
        "which will be used in place of :attr:`grad_outputs`. [...] 1. hooks registered to "
        "Tensor are executed 2. pre-hooks registered to Node are executed (if Node is "
        "executed). [...] If multiple hooks of the same type are registered on the same "
        "Tensor or Node they are executed in the order in which they are registered.",
        "torch/autograd/graph.py (Node.register_prehook); docs/source/notes/autograd.md "
        "(Backward Hooks execution)",
    ),
    Invariant(
        "grad.node_hook_replaces_grad_inputs",
        "A hook registered with node.register_hook runs each time that node runs, after it, on "
        "(grad_inputs, grad_outputs); a tuple it returns replaces grad_inputs, the gradients "
        "that flow on to the node's inputs and reach their .grad (None leaves them); hooks of "
        "one node run in registration order, each seeing the previous result, a removed one "
        "never.",
        "The hook should not modify its argument, but it can optionally return a new gradient "
        "which will be used in place of :attr:`grad_inputs`. [...] 4. Node is executed [...] "
        "6. post-hooks registered to Node are executed (if Node is executed)",
        "torch/autograd/graph.py (Node.register_hook); docs/source/notes/autograd.md "
        "(Backward Hooks execution)",
    ),
    Invariant(
        "grad.retain_grad_follows_writes",
        "A retained non-leaf's .grad adds up over backward calls; after an in-place write to "
        "it, or through a view of it, .grad is the gradient of its newest version.",
        "If there is a retains_grad hook registered, move that from the old cpp_hooks_list_ "
        "to the new one",
        "torch/csrc/autograd/variable.cpp (update_tensor_hooks_on_new_gradfn)",
    ),
    Invariant(
        "grad.create_graph",
        "With create_graph=True the gradients torch.autograd.grad returns (and .grad after "
        "backward) are in a graph of their own where their formula reads a tensor that "
        "requires grad: they require grad, backward through them gives second derivatives, "
        "and the first graph is kept; without it they do not require grad.",
        "create_graph (bool, optional): If ``True``, graph of the derivative will be "
        "constructed, allowing to compute higher order derivative products.",
        "torch/autograd/__init__.py (torch.autograd.grad, torch.autograd.backward)",
    ),
)

INVARIANTS: dict[str, Invariant] = {inv.id: inv for inv in CATALOGUE}

assert len(INVARIANTS) == len(CATALOGUE), "duplicate invariant IDs"


def get(invariant_id: str) -> Invariant:
    try:
        return INVARIANTS[invariant_id]
    except KeyError:
        raise KeyError(f"unknown invariant {invariant_id!r}") from None
