"""The catalogue's rules on torch.compile: eager against compiled."""

from __future__ import annotations

from .invariant import Invariant
from .sources import (
    BACKWARD_DOC,
)

RULES: tuple[Invariant, ...] = (
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
        BACKWARD_DOC,
    ),
    Invariant(
        "compile.recompile",
        "A later call of a compiled function, on inputs that differ from an earlier call's in "
        "aliasing, shape, strides, dtype, requires_grad, grad mode or inference-ness, gives what "
        "eager gives on them wherever the function compiled afresh for those inputs does: a "
        "cached graph is reused only where its assumptions hold, and recompiled otherwise.",
        "Recompilations are necessary for torch.compile soundness, but can result in "
        "significantly increased compile time.",
        "docs/source/compile/programming_model.recompilation.md (Dealing with Recompilations)",
    ),
)
