"""The catalogue's rules on the wider autograd surface: multi-output, lazily
resolved and dtype views, indexed writes, out=, resize_, set_, _foreach_,
the gradient APIs."""

from __future__ import annotations

from .invariant import Invariant
from .sources import (
    INDEX_PUT_SENTENCE,
    MULTI_OUTPUT_SOURCE,
)

RULES: tuple[Invariant, ...] = (
    # --- the wider autograd surface (issue 10): multi-output views --------------------
    Invariant(
        "view.multi_output_inplace_raises",
        "An in-place op that autograd records, on an output of unbind, split, "
        "split_with_sizes or chunk (or on a view of one), raises; the outputs of "
        "tensor_split, hsplit and vsplit are ordinary views and may be written.",
        "This view is the output of a function that returns multiple views. Such functions "
        "do not allow the output views to be modified inplace. You should replace the inplace "
        "operation by an out-of-place one.",
        MULTI_OUTPUT_SOURCE,
        ">=1.9",
    ),
    Invariant(
        "view.multi_output_base_written_raises",
        "Once an output of unbind, split, split_with_sizes or chunk of a tensor that requires "
        "grad, or its base, has been written in place, reading its grad_fn raises.",
        "Output 0 of UnbindBackward0 is a view and its base or another view of its base has "
        "been modified inplace. This view is the output of a function that returns multiple "
        "views.",
        MULTI_OUTPUT_SOURCE,
        ">=1.9",
    ),
    # --- in-place view ops (issue 37) ---------------------------------------------------
    Invariant(
        "view.inplace_view_op",
        "x.transpose_(), t_(), squeeze_(), unsqueeze_(), swapdims_() and as_strided_() give "
        "x itself the geometry the out-of-place op gives its view: over the same storage, "
        "still a view of the same base, with its version counter bumped once. Where autograd "
        "records them they are refused as any in-place op on x is (a leaf or a view of a leaf "
        "that requires grad, a view made under no_grad or inference_mode, an output of "
        "unbind or split), and x's grad_fn maps its gradient back to x's old geometry.",
        "transpose_(dim0, dim1) -> Tensor: In-place version of Tensor.transpose (and so for "
        "t_, squeeze_, unsqueeze_, swapdims_, as_strided_); the inplace_view tag: this "
        "operator only modifies the tensor metadata.",
        "torch/_tensor_docs.py (Tensor.transpose_, t_, squeeze_, unsqueeze_, swapdims_, "
        "as_strided_); aten/src/ATen/native/tags.yaml (inplace_view); the refusals: "
        "torch/csrc/autograd/VariableTypeUtils.h (check_inplace)",
    ),
    Invariant(
        "ops.unsafe_split_outputs_writable",
        "The outputs of unsafe_split, unsafe_chunk and unsafe_split_with_sizes share their "
        "input's memory but are no views: each has a version counter of its own, may be "
        "written in place where split's outputs may not, and backward through a written "
        "one runs (written with the input too: gradients undefined).",
        "Works like torch.split() but without enforcing the autograd restrictions on inplace "
        "modification of the outputs. ... This function is safe to use as long as only the "
        "input, or only the outputs are modified inplace after calling this function.",
        "torch/_torch_docs.py (torch.unsafe_split, torch.unsafe_chunk)",
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
        INDEX_PUT_SENTENCE,
        "torch/_tensor_docs.py (Tensor.index_put_)",
    ),
    Invariant(
        "index.grad_to_source",
        "Gradient through an indexed write reaches the source from the elements it wrote, and "
        "the overwritten elements of x get none (index_add_ adds, so x gets all of it).",
        INDEX_PUT_SENTENCE,
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
        "torch.autograd.grad(y, x, g) returns the gradient of y with respect to x and changes "
        "no tensor's .grad; where y does not depend on x it returns None with allow_unused=True "
        "and raises with allow_unused False or left out; an x that does not require grad raises.",
        "Compute and return the sum of gradients of outputs with respect to the inputs. [...] "
        "To accumulate gradient for other parts of the graph, please use "
        "torch.autograd.backward. [...] allow_unused: If False, specifying inputs that were "
        "not used when computing outputs (and therefore their grad is always zero) is an "
        "error.",
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
