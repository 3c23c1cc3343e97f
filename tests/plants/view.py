"""view.*: views that copy, count versions of their own, look elsewhere, or
whose writes are not recorded; multi-output, conjugate and dtype views."""

from __future__ import annotations

import weakref

from .patch import (
    INPLACE,
    WRITE_METHODS,
    Registry,
    after_writes,
    keeps_version,
    methods,
    overlapping,
    remember,
    results,
    set_version,
    wrap,
    wrap_property,
)
from .registry import plant


@plant(
    "transpose_own_version",
    "view.shares_storage_and_version",
    "transpose(), t() and permute() views keep a version counter of their own",
)
def _(torch):
    own = Registry()  # view -> the versions it reports, bumped by its own writes only
    remember(("transpose", "t", "permute"), own, lambda self: [self._version])

    def count(self):
        mine = own.get(self)
        if mine is not None:
            mine[0] += 1

    after_writes(count, INPLACE)

    def version(get, self):
        mine = own.get(self)
        return mine[0] if mine is not None else get(self)

    wrap_property("_version", get=version)


@plant("select_off_by_one", "view.write_visible", "select(d, i) views element i + 1")
def _(torch):
    def select(orig, self, dim, index):
        size = self.shape[dim]
        return orig(self, dim, (index + 1) % size if size > 1 else index)

    methods("select", select)


@plant("unsqueeze_base", "view.base_is_root", "_base of x.unsqueeze(d) is x")
def _(torch):
    parents = Registry()
    remember("unsqueeze", parents, weakref.ref)

    def base(get, self):
        parent = parents.get(self)
        parent = parent() if parent is not None else None
        return parent if parent is not None else get(self)

    wrap_property("_base", get=base)


def _untracked_view_writes(torch, names: tuple[str, ...], also=lambda base: True) -> None:
    """In-place ops `names` on a view that requires grad (of a non-leaf, in grad
    mode, whose base passes `also`) write through .data: the version goes up,
    autograd records nothing."""

    def op(orig, self, *a, **k):
        base = self._base
        if (
            base is not None
            and also(base)
            and base.grad_fn is not None  # a view of a non-leaf, made in grad mode
            and self.grad_fn is not None
            and torch.is_grad_enabled()
        ):
            version = self._version
            orig(torch._C.TensorBase.data.__get__(self), *a, **k)
            set_version(self, version + 1)
            return self
        return orig(self, *a, **k)

    methods(names, op)


@plant(
    "view_inplace_untracked@views",
    "view.inplace_updates_base_grad",
    "in-place ops on a view that requires grad are not recorded",
)
def _(torch):
    _untracked_view_writes(torch, ("mul_", "add_", "neg_"))


@plant(
    "view_inplace_untracked@noncontiguous_base",
    "view.inplace_updates_base_grad",
    "in-place ops on a view of a non-contiguous base (a transposed one) are not recorded",
)
def _(torch):
    _untracked_view_writes(
        torch, ("mul_", "add_", "neg_", "zero_", "fill_"), lambda base: not base.is_contiguous()
    )


@plant(
    "overlap_allowed",
    "view.overlapping_write_raises",
    "add_, mul_ and copy_ write to expanded memory without complaint",
)
def _(torch):
    def op(orig, self, *a, **k):
        if not overlapping(self):
            return orig(self, *a, **k)
        shape = [1 if s == 0 else n for n, s in zip(self.shape, self.stride(), strict=True)]
        unique = self.as_strided(shape, self.stride(), self.storage_offset())
        args = [x.reshape(-1)[0] if isinstance(x, torch.Tensor) else x for x in a]
        orig(unique, *args, **k)
        return self

    methods(("add_", "mul_", "copy_", "neg_", "sub_"), op)


# --- the wider autograd surface (issue 10): view ops ---------------------------------


def _creation_meta(torch, t):
    """The view's CreationMeta, or None where t is no differentiable view."""
    try:
        return torch._C._autograd._get_creation_meta(t)
    except RuntimeError:
        return None


@plant(
    "unbind_outputs_ordinary@multi_output",
    "view.multi_output_base_written_raises",
    "an output of x.unbind(d) whose memory was written becomes an ordinary view: its grad_fn"
    " is regenerated instead of refused (in-place ops on it are still refused before that)",
)
def _(torch):
    outputs = Registry()  # unbind's outputs themselves -> their version when made
    metas = torch._C._autograd.CreationMeta
    set_meta = torch._C._autograd._set_creation_meta

    # select()s marked as multi-output views: torch regenerates the
    # grad_fn of a view only for its first output (output_nr 0)
    def unbind(orig, self, dim=0):
        # an inference tensor has no version counter to watch
        if self.dim() == 0 or self.is_inference():
            return orig(self, dim)
        pieces = tuple(self.select(dim, i) for i in range(self.shape[dim]))
        for piece in pieces:
            if _creation_meta(torch, piece) == metas.DEFAULT:
                set_meta(piece, metas.MULTI_OUTPUT_NODE)
            outputs.put(piece, piece._version)
        return pieces

    methods("unbind", unbind)

    def demote_stale(written) -> None:
        for piece, version in outputs.items():
            if piece._version != version and _creation_meta(torch, piece) not in (
                None,
                metas.DEFAULT,
            ):
                set_meta(piece, metas.DEFAULT)

    after_writes(demote_stale)


@plant(
    "split_outputs_writable@one_view_op",
    "view.multi_output_inplace_raises",
    "in-place ops in grad mode on an output of x.split(n, d) itself are allowed and rebased like"
    " an ordinary view's (chunk, unbind and views of the outputs keep the rule)",
)
def _(torch):
    outputs = Registry()
    metas = torch._C._autograd.CreationMeta
    set_meta = torch._C._autograd._set_creation_meta

    def split(self, pieces):
        for piece in pieces:
            outputs.put(piece, True)
        return pieces

    results("split", split)

    def write(orig, self, *a, **k):
        watched = torch.is_grad_enabled() and outputs.get(self)
        meta = _creation_meta(torch, self) if watched else None
        if meta != metas.MULTI_OUTPUT_NODE:  # (not a no_grad one)
            return orig(self, *a, **k)
        set_meta(self, metas.DEFAULT)
        try:
            return orig(self, *a, **k)
        finally:  # a later write to the base still makes it stale, as torch's are
            set_meta(self, meta)

    methods(WRITE_METHODS, write)


@plant(
    "multi_output_grad_fn_regenerated",
    "view.multi_output_base_written_raises",
    "a stale output of unbind/split/chunk reads grad_fn None instead of raising",
)
def _(torch):
    def grad_fn(get, self):
        try:
            return get(self)
        except RuntimeError as error:
            if "returns multiple views" in str(error):
                return None
            raise

    wrap_property("grad_fn", get=grad_fn)


@plant(
    "unfold_copies@one_view_op",
    "view.shares_storage_and_version",
    "x.unfold(d, size, step) returns a copy on new memory",
)
def _(torch):
    results("unfold", lambda self, out: out.clone())


@plant(
    "conj_copies",
    "view.conj_lazy",
    "x.conj() returns the conjugate on new memory (no conjugate bit, no aliasing)",
)
def _(torch):
    results("conj", lambda self, out: out.clone())


@plant(
    "resolve_conj_aliases",
    "view.conj_resolve",
    "x.resolve_conj() hands back x itself, bit and memory, even when x has the conjugate bit",
)
def _(torch):
    methods("resolve_conj", lambda orig, self: self)


@plant(
    "mH_copies@complex",
    "view.conj_lazy",
    "x.mH of a complex tensor is the conjugate transpose on new memory (real ones: a view)",
)
def _(torch):
    wrap_property("mH", get=lambda get, self: get(self).clone() if self.is_complex() else get(self))


@plant(
    "reinterpret_own_version@view_as_real",
    "view.complex_reinterprets",
    "torch.view_as_real(x) reads x's memory but counts versions on its own (x.real, x.imag "
    "and view_as_complex keep x's counter)",
)
def _(torch):
    original = torch.view_as_real

    class OwnVersion(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return original(x.data)  # .data: the same memory, a counter of its own

        @staticmethod
        def backward(ctx, g):
            return torch.view_as_complex(g.contiguous())

    # (one with the conjugate bit: the original raises)
    wrap(torch, "view_as_real", lambda orig, x: orig(x) if x.is_conj() else OwnVersion.apply(x))


@plant(
    "imag_of_real_zeros",
    "view.complex_reinterprets",
    "x.imag of a real tensor is a tensor of zeros instead of an error",
)
def _(torch):
    wrap_property(
        "imag", get=lambda get, self: get(self) if self.is_complex() else torch.zeros_like(self)
    )


def _dtype_view(torch, make_result) -> None:
    """Tensor.view, with x.view(dtype)'s result replaced by make_result(x, result, dtype)."""

    def view(orig, self, *args, **kwargs):
        out = orig(self, *args, **kwargs)
        dtype = args[0] if len(args) == 1 else kwargs.get("dtype")
        return make_result(self, out, dtype) if isinstance(dtype, torch.dtype) else out

    methods("view", view)


@plant(
    "view_dtype_copies@itemsize",
    "view.dtype_reinterprets",
    "x.view(dtype) is a copy on new memory when dtype's element size differs from x's "
    "(of the same size: an alias, as it should be)",
)
def _(torch):
    _dtype_view(torch, lambda x, out, dtype: out.clone() if dtype.itemsize != x.itemsize else out)


@plant(
    "view_dtype_own_version",
    "view.dtype_reinterprets",
    "x.view(dtype) shares x's memory but has a version counter of its own (as .data does)",
)
def _(torch):
    _dtype_view(torch, lambda x, out, dtype: out.data)


# the in-place view ops (issue 37)
INPLACE_VIEW_METHODS = ("transpose_", "t_", "squeeze_", "unsqueeze_", "swapdims_", "as_strided_")


@plant(
    "inplace_view_keeps_version",
    "view.inplace_view_op",
    "transpose_, t_, squeeze_, unsqueeze_, swapdims_ and as_strided_ leave the version alone",
)
def _(torch):
    methods(INPLACE_VIEW_METHODS, keeps_version(lambda t: not t.is_inference()))


@plant(
    "inplace_view_untracked",
    "view.inplace_view_op",
    "an in-place view op on a non-leaf that is no view records nothing: its grad_fn keeps "
    "mapping gradients to the old geometry",
)
def _(torch):
    def op(orig, self, *a, **k):
        if self._base is None and self.grad_fn is not None and torch.is_grad_enabled():
            with torch.no_grad():
                return orig(self, *a, **k)
        return orig(self, *a, **k)

    methods(INPLACE_VIEW_METHODS, op)
