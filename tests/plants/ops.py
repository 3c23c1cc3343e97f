"""ops.*: ops in general computing wrong values, writing where they should not,
or raising what they should not; and builds that lack a kernel (LACKING)."""

from __future__ import annotations

from .patch import methods, results, version_kept, wrap
from .registry import lacking, plant


@plant("exp_doubles@bfloat16", "ops.values", "x.exp() of a bfloat16 tensor is 2 * exp(x)")
def _(torch):
    results("exp", lambda self, out: out + out if self.dtype == torch.bfloat16 else out)


@plant("add_inplace_returns_copy", "ops.inplace_writes_self", "x.add_(y) returns a copy of x")
def _(torch):
    results("add_", lambda self, out: out.clone())


@plant("neg_writes_input", "ops.out_of_place_new_tensor", "x.neg() negates x in place")
def _(torch):
    methods("neg", lambda orig, self: self.neg_() if not self.requires_grad else orig(self))


@plant(
    "add_forgives_shapes", "ops.shape_errors", "x.add(y) of shapes that do not broadcast gives x"
)
def _(torch):
    def add(orig, self, other, *a, **k):
        try:
            return orig(self, other, *a, **k)
        except RuntimeError as error:
            if "must match the size" in str(error):
                return self.clone()
            raise

    methods(("add", "__add__"), add)


@plant(
    "exp_in_float32@float64",
    "ops.values",
    "x.exp() of float64 is computed in float32 and cast back (about 6e-8 relative off), as a "
    "build without float64 units would; nothing else changes",
)
def _(torch):
    def exp(orig, self, *args, **kwargs):
        result = orig(self, *args, **kwargs)
        if self.dtype == torch.float64 and result.numel():
            # the value only: no version, no node of its own
            with version_kept(result), torch.no_grad():
                result.copy_(orig(self.detach().float()))
        return result

    methods("exp", exp)


# --- kernels a build lacks (issue 9) ------------------------------------------------
# Not violations: builds that lack a kernel the way torch 2.0's CPU build lacks
# float16 exp. The suite must skip and count them (conformance.build), so they
# are kept apart from PLANTS, which the suite must report.


def _unimplemented(names, when) -> None:
    """The methods named raise as a kernel the build lacks where when(self)."""
    kinds = {"float16": "Half", "bfloat16": "BFloat16"}

    def op(orig, self, *args, **kwargs):
        if when(self):
            kind = kinds.get(str(self.dtype).removeprefix("torch."), str(self.dtype))
            raise RuntimeError(f"\"exp_vml_cpu\" not implemented for '{kind}'")
        return orig(self, *args, **kwargs)

    methods(names, op)


@lacking("no_exp@float16", "x.exp() and x.exp_() of float16 raise as on torch 2.0's CPU build")
def _(torch):
    _unimplemented(("exp", "exp_"), lambda t: t.dtype == torch.float16)


@plant(
    "exp_unimplemented@strided",
    "ops.values",
    "x.exp() of a non-contiguous tensor says its kernel is not implemented",
)
def _(torch):
    # the kernel exists (a fresh contiguous tensor works): a narrow probe
    # must not take this for a build that lacks it
    _unimplemented("exp", lambda t: not t.is_contiguous())


# --- multi-output ops that are no views, and unsafe_split (issue 37) -------------------
@plant(
    "std_mean_hands_back_unsaved_std",
    "version.saved_modified_raises",
    "torch.std_mean returns a copy of the std its node saved: a write to the std it returns "
    "no longer makes backward raise",
)
def _(torch):
    wrap(torch, "std_mean", lambda orig, *a, **k: _first_cloned(orig(*a, **k)))


def _first_cloned(outs):
    return (outs[0].clone(), *outs[1:])


@plant(
    "unsafe_split_is_split",
    "ops.unsafe_split_outputs_writable",
    "unsafe_split, unsafe_chunk and unsafe_split_with_sizes are split, chunk and "
    "split_with_sizes: their outputs are views that refuse in-place writes",
)
def _(torch):
    for unsafe in ("unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes"):
        safe = unsafe.removeprefix("unsafe_")
        methods(unsafe, lambda orig, self, *a, _safe=safe, **k: getattr(self, _safe)(*a, **k))
