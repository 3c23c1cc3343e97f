"""Where the rules' sentences come from: files of pytorch/pytorch, and
sentences that several rules quote."""

CLONE_DOC = "torch/_torch_docs.py (torch.clone)"
CLONE_DIFF = (
    "This function is differentiable, so gradients will flow back from the result of this "
    "operation to input. To create a tensor without an autograd relationship to input see "
    "detach()."
)
COPY_DOC = "torch/_tensor_docs.py (Tensor.copy_)"
COPY_SENTENCE = (
    "Copies the elements from src into self tensor and returns self. The src tensor must be "
    "broadcastable with the self tensor. It may be of a different data type or reside on a "
    "different device."
)
COPY_TESTS = "test/test_autograd.py (test_copy_, test_copy_r_to_c)"
DETACH_DOC = "torch/_tensor.py (Tensor.detach)"
DETACH_SHARES = (
    "Returned Tensor shares the same storage with the original one. In-place modifications on "
    "either of them will be seen, and may trigger errors in correctness checks."
)
VERSION_NOTE = "c10/core/TensorImpl.h (NOTE [ Version Counter Sharing ])"
DATA_NOTE = "0.4.0 release notes, quoted in pytorch/pytorch#6990"
DATA_SENTENCE = (
    "Any changes on x.data wouldn't be tracked by autograd, and the computed gradients would be "
    "incorrect if x is needed in a backward pass."
)
BACKWARD_DOC = "torch/_tensor.py (Tensor.backward)"
ACCUMULATES = (
    "This function accumulates gradients in the leaves - you might need to zero .grad "
    "attributes or set them to None before calling it."
)
GRAD_DOC = "torch/_tensor_docs.py (Tensor.grad)"
GRAD_SENTENCE = (
    "This attribute is None by default and becomes a Tensor the first time a call to "
    "backward() computes gradients for self. The attribute will then contain the gradients "
    "computed and future calls to backward() will accumulate (add) gradients into it."
)
ACCUMULATE_GRAD = "torch/csrc/autograd/functions/accumulate_grad.h ([ Gradient Layout Contract ])"
ACCUMULATE_SENTENCE = (
    "If we aren't setting up for double backward (!GradMode::is_enabled()), AccumulateGrad "
    'performs "variable_grad += new_grad" in-place, which keeps variable_grad\'s layout. [...] '
    "If we are setting up for double backward, AccumulateGrad updates the grad out-of-place "
    'via "variable_grad + new_grad."'
)
AUTOGRAD_NOTES = "docs/source/notes/autograd.md (In-place correctness checks)"
VERSION_SENTENCE = (
    "Every tensor keeps a version counter, that is incremented every time it is marked dirty in "
    "any operation. When a Function saves any tensors for backward, a version counter of their "
    "containing Tensor is saved as well. Once you access self.saved_tensors it is checked, and "
    "if it is greater than the saved value an error is raised."
)
VIEW_DOC = "docs/source/tensor_view.rst"
VIEW_SENTENCE = (
    "View tensor shares the same underlying data with its base tensor. Supporting View avoids "
    "explicit data copy [...] if you edit the data in the view, it will be reflected in the "
    "base tensor as well."
)
CHECK_INPLACE = "torch/csrc/autograd/VariableTypeUtils.h (check_inplace)"
NO_GRAD_DOC = "torch/autograd/grad_mode.py (no_grad)"
DTYPES_DOC = "torch/autograd/__init__.py"
INFERENCE_DOC = "torch/autograd/grad_mode.py (inference_mode)"
SCHEMA_README = "aten/src/ATen/native/README.md (func: Annotations)"
INDEX_PUT_SENTENCE = (
    "Puts values from the tensor values into the tensor self using the indices specified in "
    "indices (which is a tuple of Tensors). The expression tensor.index_put_(indices, values) "
    "is equivalent to tensor[indices] = values. Returns self."
)
MULTI_OUTPUT_SOURCE = (
    "torch/csrc/autograd/variable.cpp (handle_view_on_rebase); an error since torch 1.9 "
    "(pytorch/pytorch#56093, which ended the deprecation begun in 1.7: a UserWarning "
    "'Inplace operators on such views are being deprecated' in 1.7 and 1.8)"
)
