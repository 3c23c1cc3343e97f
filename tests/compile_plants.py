"""Planted compile backends: aot_eager, each broken in one way a real
backend could be, for the compiled differential to catch and name.

Each is a torch.compile backend (`fn(graph_module, example_inputs)`), usable
as `--compile tests.compile_plants:NAME`. PLANTS maps each to the invariant
the compiled differential must name.
"""

from __future__ import annotations

import torch
from torch._dynamo.backends.debugging import aot_eager, boxed_nop


def _inputs(args) -> list[torch.Tensor]:
    return [a for a in args if isinstance(a, torch.Tensor)]


def _around_aot_eager(call):
    """A backend: aot_eager, its compiled function run as call(compiled, *args)."""

    def backend(gm, example_inputs):
        compiled = aot_eager(gm, example_inputs)
        return lambda *args: call(compiled, *args)

    backend.__name__ = backend.__qualname__ = call.__name__
    backend.__doc__ = call.__doc__
    return backend


@_around_aot_eager
def drops_input_mutation(compiled, *args):
    """Writes to the inputs are undone after the call (their version still rises)."""
    before = [t.detach().clone() for t in _inputs(args)]
    out = compiled(*args)
    for t, old in zip(_inputs(args), before, strict=True):
        if t.shape == old.shape and not torch.equal(t.detach(), old):
            t.data.copy_(old)  # through .data: no version bump of its own
    return out


@_around_aot_eager
def copies_views(compiled, *args):
    """An output that is a view of an input comes back as a copy."""
    out = compiled(*args)
    storages = {t.untyped_storage().data_ptr() for t in _inputs(args)}
    return type(out)(
        o.clone()
        if isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() in storages
        else o
        for o in out
    )


@_around_aot_eager
def skips_version_bump(compiled, *args):
    """Inputs written by the call keep their old version counter."""
    inputs = _inputs(args)
    versions = [t._version for t in inputs]
    out = compiled(*args)
    for t, v in zip(inputs, versions, strict=True):
        if t._version != v:
            torch._C._autograd._unsafe_set_version_counter((t,), (v,))
    return out


def _scaled_backward(gm, example_inputs):
    backward = boxed_nop(gm, example_inputs)

    def run(args):
        grads = backward(args)
        return [g * 1.5 if isinstance(g, torch.Tensor) else g for g in grads]

    run._boxed_call = True
    return run


def changes_gradient(gm, example_inputs):
    """aot_eager, its backward scaling every gradient by 1.5."""
    return aot_eager(gm, example_inputs, bw_compiler=_scaled_backward)


@_around_aot_eager
def swallows_error(compiled, *args):
    """Saved tensors are packed as copies: a write after the call no longer
    makes backward raise (and backward sees the old values)."""
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        return compiled(*args)


def _alone(out, args) -> list[bool]:
    """Per output: a tensor that shares memory with no input and no other output."""
    storages = [
        o.untyped_storage().data_ptr() if isinstance(o, torch.Tensor) else None for o in out
    ]
    taken = {t.untyped_storage().data_ptr() for t in _inputs(args)}
    return [s is not None and s not in taken and storages.count(s) == 1 for s in storages]


@_around_aot_eager
def changes_outputs(compiled, *args):
    """Outputs on memory of their own come back one higher (floating ones)."""
    out = compiled(*args)
    return type(out)(
        o + 1 if alone and (o.is_floating_point() or o.is_complex()) else o
        for o, alone in zip(out, _alone(out, args), strict=True)
    )


@_around_aot_eager
def rounds_float64(compiled, *args):
    """float64 outputs on memory of their own (views excepted) come back
    rounded through float32 (about 6e-8 relative off), as a backend without
    float64 units would: written through .data, so nothing else changes (no
    version bump, the same graph)."""
    out = compiled(*args)
    for o, alone in zip(out, _alone(out, args), strict=True):
        if alone and o.dtype == torch.float64 and not o._is_view():
            o.data.copy_(o.data.float())
    return out


@_around_aot_eager
def drops_requires_grad(compiled, *args):
    """Outputs on memory of their own come back detached from the graph."""
    out = compiled(*args)
    return type(out)(
        o.detach() if alone and o.requires_grad else o
        for o, alone in zip(out, _alone(out, args), strict=True)
    )


PLANTS: dict[str, str] = {
    "drops_input_mutation": "compile.input_mutation",
    "copies_views": "compile.aliasing",
    "skips_version_bump": "compile.version",
    "changes_gradient": "compile.grad",
    "swallows_error": "compile.raises",
    "changes_outputs": "compile.outputs",
    "rounds_float64": "compile.outputs",
    "drops_requires_grad": "compile.autograd_flags",
}

# Each is aot_eager with one thing broken: aot_eager's own known failures are
# its own too (conformance.compiled.targets.builds_on)
for _name in PLANTS:
    globals()[_name].builds_on = "aot_eager"
