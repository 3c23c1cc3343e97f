"""The op table: one OpSpec row per op, with its forward and gradient formulas.

Formulas work on values in the compute dtype. fwd(values, params, dtype) gives
the result; bwd(g, saved, params, needs, shapes) gives one gradient (or None) per
input, where `saved` holds exactly what the row's `saves` says torch saves and
needs[i] tells whether input i has an edge. Complex gradients follow PyTorch:
grad_input = grad * conj(d out / d in).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from strategies import function_args, gradapi_args, op_args
from strategies.argspace import LEFT_OUT, ArgSpace

from . import (
    complex_views,
    gradapi,
    hook_rows,
    index_ops,
    view_geometry,
    view_ops,
    view_rows,
    write_rows,
)
from .dtypes import REAL_OF, kind, round_to
from .errors import ErrorKind, OracleError
from .geometry import (
    broadcast_shapes,
    contiguous_strides,
    expand_geometry,
    is_contiguous,
    numel,
    view_strides,
)
from .nodes import sum_to

ALL, FC = ("float", "complex", "int", "bool"), ("float", "complex")
FCI, FI = ("float", "complex", "int"), ("float", "int")
C = np.conj


@dataclass(frozen=True)
class OpSpec:
    name: str
    arity: int  # tensor operands
    params: tuple[str, ...]  # names of the python params
    torch: str  # call template over {t0} {t1} {p0} {p1}
    impl: str  # the Engine method `_op_<impl>` that runs it
    dtypes: tuple[str, ...] = ALL  # dtype kinds t0 may have (t1: the same dtype)
    saves: tuple[str, ...] = ()  # what autograd saves (torch-semantics.md section 2)
    inplace: bool = False  # writes into t0 and bumps its version
    view: bool = False  # the result is a view of t0 (reshape: when it can be)
    exact_bump: bool = True  # False where torch may bump more than once
    statement: bool = False  # the template is a statement without a value
    returns: bool = True  # Engine.call returns a tensor
    param_kinds: tuple[str, ...] = ()  # scalar index dim int bool custom (rows without args)
    fwd: Callable | None = None
    bwd: Callable | None = None
    geom: Callable | None = None  # views: the geometry function in oracle.view_geometry
    # what its arguments may be, each one's classes, and how they are drawn
    args: ArgSpace | None = None
    check: Callable | None = None  # shapes, params -> result shape, or raises
    # result strides: TensorIterator's rules, "contiguous", "preserve" (empty_like(self))
    # or "matmul" (oracle.layouts.matmul_layout: which operands it copies)
    layout: str = "elementwise"
    scalar_operand: bool = False  # the python scalar is a wrapped 0-d tensor operand
    overlap_check: bool = True  # in place: refuses overlapping / partially aliased writes
    by_ctx: bool = False  # a custom Function: saves with ctx.save_for_backward (nodes.Saved)
    cross_dtype: bool = False  # t1 may have another dtype than t0
    max_ndim: int | None = None  # operand ranks modelled exactly (matmul: 2)
    multi_output: bool = False  # one output of an op that returns several views
    # an op that returns several new tensors (not views): each output's dtype, "self"
    # (self's), "real" (self's real dtype: a complex var's) or a dtype's name; the row
    # is one output, p[-1], as view rows are (`x.max(0)[1]`); fwd gives every output,
    # bwd the gradient of output p[-1]
    outputs: tuple[str, ...] = ()
    sums: bool = False  # the result sums terms: compared to their magnitude (oracle.tolerances)
    # |g|, |saved| -> the magnitude of the terms a backward formula that cancels
    # sums (tanh's 1 - r * r near r = ±1): its gradient is compared to them
    grad_terms: Callable | None = None
    int_result: bool = False  # an integer or bool self gives an int64 result (sum, cumsum)
    # clamp's family: the gradient at a bound from torch 2.14 on (0, where `bwd` gives
    # the older 1), taken where the release is not Release.clamp_grad_at_bounds
    strict_bwd: Callable | None = None
    hook: gradapi.Hook | None = None  # a hook row: what it registers, where (oracle.hook_rows)
    # what a call that leaves the params out (or one of them: LEFT_OUT) means
    # (backward(): retain_graph=False)
    param_defaults: tuple = ()
    # dtype kinds in which torch's kernel (SLEEF, vectorized complex math) and
    # numpy part ways in the last digits beyond 1e6: undefined for the comparison
    inexact_beyond_1e6: tuple[str, ...] = ()
    # a composite (matmul): its shape checks come before any autograd op, and
    # it saves its operands as the ops it calls do, after their kernels
    composite: bool = False
    # a complex self gives its real dtype (abs): the result is empty_like(self)'s
    # layout then, elementwise otherwise
    real_of_complex: bool = False
    # an index write's index is saved only where the source needs a gradient
    # (index_add_: self's gradient is grad itself); else always
    saves_index_for_source_only: bool = False
    # a write that computes nothing (zero_, fill_, copy_, the index writes but
    # index_add_): the bits written are the source's, exact under a dtype view
    # (oracle.dtype_views)
    exact_bits: bool = False

    @property
    def bump(self) -> int:
        return 1 if self.inplace else 0


def meant(spec: OpSpec, params: tuple) -> tuple:
    """The params a call with `params` means: the row's defaults where it passes
    none (or leaves one out: LEFT_OUT)."""
    if not params:
        return spec.param_defaults
    if spec.param_defaults and any(v is LEFT_OUT for v in params):
        defaults = spec.param_defaults
        return tuple(d if v is LEFT_OUT else v for v, d in zip(params, defaults, strict=True))
    return params


def out_dtype(spec: OpSpec, dtype: str) -> str:
    if spec.real_of_complex and dtype in REAL_OF:
        return REAL_OF[dtype]
    return "int64" if spec.int_result and kind(dtype) in ("int", "bool") else dtype


# ---- shapes ------------------------------------------------------------------
def _bcast(shapes: list, p: tuple) -> tuple:
    out = broadcast_shapes(*shapes)
    if out is None:
        raise OracleError(ErrorKind.NOT_BROADCASTABLE, f"must match the size {shapes}")
    return out


def _mm_check(shapes: list, p: tuple) -> tuple:
    (a, b), err = shapes, ErrorKind.SHAPE_MISMATCH
    if len(a) != 2 or len(b) != 2:
        raise OracleError(err, "self must be a matrix")
    if a[1] != b[0]:
        raise OracleError(err, "mat1 and mat2 shapes cannot be multiplied")
    return (a[0], b[1])


def _matmul_check(shapes: list, p: tuple) -> tuple:
    a, b = shapes
    if not a or not b:
        raise OracleError(ErrorKind.SHAPE_MISMATCH, "need to be at least 1D")
    batch = _bcast([a[:-2], b[:-2]], p)  # torch broadcasts the batch first
    if a[-1] != (b[-2] if len(b) > 1 else b[0]):
        raise OracleError(ErrorKind.SHAPE_MISMATCH, "shapes cannot be multiplied")
    return batch + a[-2:-1] + (b[-1:] if len(b) > 1 else ())


def _reduce_check(shapes: list, p: tuple) -> tuple:
    if not p:
        return ()
    d = view_geometry.wrap_dim(p[0], len(shapes[0]))
    return shapes[0][:d] + shapes[0][d + 1 :]


def matmul_layout(a: tuple, b: tuple, rg: tuple, out: tuple) -> tuple:
    """How torch's matmul runs for operands (shape, strides) a and b.

    Returns (result strides, result version, (a saved as a copy, b saved as a copy)).
    1-D/2-D go to dot/mv/mm (1-D @ 2-D squeeze_()s its result: version 1). Higher
    ranks fold into mm or expand into bmm; an operand whose reshape must copy is
    saved as that copy. Version -1: the result is the mT() view of a hidden result.
    """
    (sa, ta), (sb, tb) = a, b
    da, db = len(sa), len(sb)
    plain = contiguous_strides(out)
    if da <= 2 and db <= 2:
        return plain, int((da, db) == (1, 2)), (False, False)
    if da == db == 3 and sa[0] != sb[0]:  # a batch of one that requires grad is squeezed
        if sa[0] == 1 and rg[0]:
            return matmul_layout((sa[1:], ta[1:]), b, rg, out)
        if sb[0] == 1 and rg[1]:
            return matmul_layout(a, (sb[1:], tb[1:]), rg, out)
    larger = da >= db
    s1, t1 = (sa, ta) if larger else (sb[:-2] + sb[:-3:-1], tb[:-2] + tb[:-3:-1])
    fold = len(s1) >= 3 and (db if larger else da) <= 2  # should_fold
    if fold and not (rg[1] if larger else rg[0]):
        contiguous_batch = all(t1[i] == t1[i + 1] * s1[i + 1] for i in range(len(s1) - 2))
        fold = da != 2 and (numel(s1) == 0 or contiguous_batch)
    if fold:
        copied = view_strides(s1, t1, (numel(s1[:-1]), s1[-1])) is None
        flags = (copied, False) if larger else (False, copied)
        if not larger and da == 2:  # (t1 @ t2).mT().contiguous(): a view if contiguous
            st = plain[:-2] + (1, out[-2])
            return (st, -1, flags) if is_contiguous(out, st) else (plain, 0, flags)
        return plain, 0, flags
    batch, flags = out[: len(out) - (da > 1) - (db > 1)], []
    for (s, t), tail in ((a, sa[-2:] if da > 1 else (1,) + sa), (b, sb[-2:] if db > 1 else sb)):
        exp = expand_geometry(s, t, batch + tuple(tail))
        flags.append(view_strides(exp[0], exp[1], (numel(batch),) + tuple(tail)) is None)
    return plain, 0, tuple(flags)


# ---- formulas ------------------------------------------------------------------
def _pow(x: np.ndarray, c: complex, dtype: str | None = None) -> np.ndarray:
    """x ** c as torch's kernels compute it: x**3 and x**-2 round the square first and
    x**-0.5 is rsqrt (not float16, which uses C's pow, also for x**0.5); a complex 0
    to a negative power is inf+nan*j (numpy says nan+nan*j)."""
    if dtype not in (None, "float16") and kind(dtype) == "float" and c in (3, -2, -0.5):
        if c == -0.5:
            return 1 / np.sqrt(x)
        sq = round_to(x * x, dtype)
        return sq * x if c == 3 else 1 / sq
    if dtype == "float16" and c == 0.5:
        return np.where(x == -np.inf, np.inf, np.where(x == 0, 0.0, np.power(x, c)))
    out = np.power(x, c)
    if x.dtype.kind == "c" and np.real(c) < 0:
        out = np.where(x == 0, np.array(complex(np.inf, np.nan), out.dtype), out)
    return out


def _sgn(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "c":
        return np.where(np.isnan(x), 0, np.sign(x))  # torch: sign(nan) is 0
    mag = np.abs(x)
    return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag))


def _matmul_bwd(g: np.ndarray, sv: dict, p: tuple, needs: list, shapes: list) -> list:
    (sa, sb), out = shapes, [None, None]
    if len(sa) == len(sb) == 1:  # dot: torch multiplies elementwise
        return [g * C(sv["other"]) if needs[0] else None, g * C(sv["self"]) if needs[1] else None]
    try:
        return _matmul_grads(g, sv, needs, sa, sb, out)
    except ValueError:  # a saved operand whose `.data =` changed its shape
        raise OracleError(ErrorKind.SHAPE_MISMATCH, "shapes cannot be multiplied") from None


def _matmul_grads(g: np.ndarray, sv: dict, needs: list, sa: tuple, sb: tuple, out: list) -> list:
    g = g.reshape(g.shape[:-1] + (1,) + g.shape[-1:]) if len(sa) == 1 else g
    g = g[..., None] if len(sb) == 1 else g
    if needs[0]:
        b = sv["other"][:, None] if len(sb) == 1 else sv["other"]
        out[0] = sum_to(g @ C(np.swapaxes(b, -1, -2)), (1,) * (len(sa) == 1) + sa).reshape(sa)
    if needs[1]:
        a = sv["self"][None, :] if len(sa) == 1 else sv["self"]
        out[1] = sum_to(C(np.swapaxes(a, -1, -2)) @ g, sb + (1,) * (len(sb) == 1)).reshape(sb)
    return out


def _clamp(x: np.ndarray, lo: object, hi: object) -> np.ndarray:
    x = x if lo is None else np.maximum(x, lo)
    return x if hi is None else np.minimum(x, hi)


def _clamp_bwd(g: np.ndarray, sv: dict, p: tuple, needs: list, shapes: list) -> list:
    """Gradient 1 where lo <= x <= hi: at a bound too (torch before 2.14)."""
    (x, (lo, hi)), keep = (sv["self"], p), True
    keep = keep if lo is None else keep & (x >= lo)
    keep = keep if hi is None else keep & (x <= hi)
    return [np.where(keep, g, 0)]


def clamp_bwd_strict(g: np.ndarray, sv: dict, p: tuple, needs: list, shapes: list) -> list:
    """Gradient 1 where lo < x < hi: 0 at a bound, the minimum-norm
    subgradient (torch 2.14 on, pytorch/pytorch#191142)."""
    (x, (lo, hi)), keep = (sv["self"], p), True
    keep = keep if lo is None else keep & (x > lo)
    keep = keep if hi is None else keep & (x < hi)
    return [np.where(keep, g, 0)]


def _grad1(f: Callable) -> Callable:
    """bwd for a one-input op from f(g, saved value, params)."""
    return lambda g, sv, p, needs, shapes: [f(g, next(iter(sv.values()), None), p)]


def _expand(g: np.ndarray, shape: tuple, n: float = 1.0) -> np.ndarray:
    return np.broadcast_to(g / n if n != 1.0 else g, shape).copy()


# Backward formulas whose terms cancel, as torch rounds them: complex64
# tanh_backward, vectorized, computes 1 - r * r in complex64, 1.7e-4 off,
# relative, at r = -0.99997 (measured, 2.13.0), a few units of |g| (1 + |r|^2)
CANCELLING = {"tanh": lambda g, r: g * (1 + r * r)}

# torch's sin and cos (SLEEF) and its complex exp, tanh and sigmoid part ways
# with numpy's in the last digits far from zero: values beyond 1e6 are undefined
INEXACT_BEYOND_1E6 = {
    "sin": ("float", "complex"),
    "cos": ("float", "complex"),
    "exp": ("complex",),
    "tanh": ("complex",),
    "sigmoid": ("complex",),
}
# name: (fwd on one array, what it saves, grad(g, saved, params), dtype kinds)
UNARY = {
    "neg": (np.negative, (), lambda g, _, p: -g, FCI),
    "exp": (np.exp, ("result",), lambda g, r, p: g * C(r), FC),
    "log": (np.log, ("self",), lambda g, x, p: g / C(x), FC),
    "tanh": (np.tanh, ("result",), lambda g, r, p: g * C(1 - r * r), FC),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), ("result",), lambda g, r, p: g * C(r - r * r), FC),
    # threshold_backward: zero where result <= 0, so a nan result passes its gradient
    "relu": (lambda x: np.maximum(x, 0), ("result",), lambda g, r, p: np.where(r <= 0, 0, g), FI),
    "sin": (np.sin, ("self",), lambda g, x, p: g * C(np.cos(x)), FC),
    "cos": (np.cos, ("self",), lambda g, x, p: -g * C(np.sin(x)), FC),
    "sqrt": (np.sqrt, ("result",), lambda g, r, p: g / (2 * C(r)), FC),
    "abs": (np.abs, ("self",), lambda g, x, p: g * _sgn(x), FCI),
}
MUL_SAVES = ("other_if_self_requires_grad", "self_if_other_requires_grad")
# name: (numpy op, saves, grads(g, saved, needs) for (self, other), dtype kinds)
BINARY = {
    "add": (np.add, (), lambda g, sv, n: [g, g], ALL),
    "sub": (np.subtract, (), lambda g, sv, n: [g, -g], FCI),
    "mul": (
        np.multiply,
        MUL_SAVES,
        lambda g, sv, n: [
            g * C(sv["other"]) if n[0] else None,
            g * C(sv["self"]) if n[1] else None,
        ],
        ALL,
    ),
    "div": (
        np.divide,
        ("other", "self_if_other_requires_grad"),
        lambda g, sv, n: [
            g / C(sv["other"]) if n[0] else None,
            -g * C(sv["self"] / sv["other"] / sv["other"]) if n[1] else None,
        ],
        FC,
    ),
}
# python scalars become wrapped 0-d tensors, which mul and div save (measured)
SCALAR = {
    "add_s": (np.add, (), lambda g, c: g, ALL),
    "sub_s": (np.subtract, (), lambda g, c: g, FCI),
    "mul_s": (np.multiply, ("other_if_self_requires_grad",), lambda g, c: g * np.conj(c), ALL),
    "div_s": (np.divide, ("other",), lambda g, c: g / np.conj(c), FC),
}

# ---- the table -----------------------------------------------------------------
OPS: dict[str, OpSpec] = {}


def _row(name: str, arity: int, params: tuple, torch: str, impl: str, **kw: object) -> None:
    OPS[name] = OpSpec(name, arity, params, torch, impl, **kw)


_row("clone", 1, (), "{t0}.clone()", "clone", bwd=lambda g, sv, p, n, s: [g])
_row("detach", 1, (), "{t0}.detach()", "detach")
_row("detach_", 1, (), "{t0}.detach_()", "detach_")
_row("data", 1, (), "{t0}.data", "data")
_row(
    "set_data",
    2,
    (),
    "{t0}.data = {t1}",
    "set_data",
    statement=True,
    returns=False,
    cross_dtype=True,
)
_row("copy_", 2, (), "{t0}.copy_({t1})", "copy_", inplace=True, cross_dtype=True, exact_bits=True)
_row("zeros_like", 1, (), "torch.zeros_like({t0})", "zeros_like")
# custom autograd.Functions (their classes: conformance/differential/functions.py) and
# sin under saved_tensors_hooks (oracle/functions.py); c: a real python scalar
_row(
    "fn_scale",
    1,
    ("c",),
    "Scale.apply({t0}, {p0})",
    "pointwise",
    dtypes=FC,
    saves=("self",),  # save_for_backward(x): its backward reads ctx.saved_tensors
    by_ctx=True,
    param_kinds=("custom",),
    fwd=lambda xs, p, dt: xs[0] * p[0],
    bwd=lambda g, sv, p, n, s: [g * p[0]],
)
_row(
    "fn_mul_",
    1,
    ("c",),
    "MulDirty.apply({t0}, {p0})",
    "fn_mul_",
    dtypes=FC,
    inplace=True,
    exact_bump=False,  # the write, then mark_dirty: two bumps
    param_kinds=("custom",),
)
_row(
    "fn_add_dirty_",
    2,
    ("c",),
    "AddDirty.apply({t0}, {t1}, {p0})",
    "fn_add_dirty_",
    dtypes=FC,
    inplace=True,
    exact_bump=False,  # the write, then mark_dirty: two bumps
    args=function_args.SPACES["fn_add_dirty_"],
)
_row(
    "fn_none_grad",
    2,
    ("which",),
    "AddNoGrad.apply({t0}, {t1}, {p0})",
    "pointwise",
    dtypes=FC,
    check=_bcast,
    args=function_args.SPACES["fn_none_grad"],
    fwd=lambda xs, p, dt: xs[0] + xs[1],
    # None: an undefined gradient, which that input's history never turns into one
    # (oracle.graph.run_backward); the other input gets g, reduced to its shape
    bwd=lambda g, sv, p, n, s: [None, g] if p[0] == 0 else [g, None],
)
_row("fn_nondiff", 1, (), "SignND.apply({t0})", "fn_nondiff", dtypes=("float",))
_row("fn_view", 1, (), "ViewFn.apply({t0})", "fn_view", dtypes=FC, view=True)
for _h in ("detach", "x2_x2"):
    _row(
        f"sin_hooked_{_h}",
        1,
        (),
        f"sin_hooked_{_h}({{t0}})",
        "hooked",
        dtypes=FC,
        saves=("self",),
        fwd=lambda xs, p, dt: np.sin(xs[0]),
        bwd=_grad1(lambda g, x, p: g * C(np.cos(x))),
    )

# the view family, one row per op (oracle/view_rows.py)
for _n, _kw in view_rows.ROWS.items():
    _row(_n, **_kw)

# lazily resolved views (oracle.complex_views): conj() and torch._neg_view() set a
# bit instead of computing, resolve_conj() / resolve_neg() materialise it (H, mH and
# adjoint() of a complex tensor are conj views too: their rows are in view_rows)
for _n, _tpl, _g, _d in [
    ("conj", "{t0}.conj()", complex_views.identity, ALL),
    ("neg_view", "torch._neg_view({t0})", complex_views.identity, FCI),
]:
    _row(_n, 1, (), _tpl, "bit_view", view=True, dtypes=_d, geom=_g)
for _n, _d in (("resolve_conj", ALL), ("resolve_neg", FCI)):
    _row(_n, 1, (), f"{{t0}}.{_n}()", "resolve", dtypes=_d, bwd=lambda g, sv, p, n, s: [g])
# views that read memory as another dtype: a complex tensor as (real, imag) pairs, or
# its real or imaginary parts, and a float tensor's pairs as complex numbers
for _n, _tpl, _d in [
    ("view_as_real", "torch.view_as_real({t0})", ("complex",)),
    ("view_as_complex", "torch.view_as_complex({t0})", ("float",)),
    ("real", "{t0}.real", ALL),
    ("imag", "{t0}.imag", ALL),
]:
    _row(_n, 1, (), _tpl, "reinterpret", view=True, dtypes=_d, geom=getattr(complex_views, _n))
# x.view(dtype): the same bytes as another dtype, an alias with x's version counter
# that never requires grad (param: the dtype's name)
_row(
    "view_dtype",
    1,
    ("dtype",),
    "{t0}.view(getattr(torch, {p0}))",
    "view_dtype",
    param_kinds=("custom",),
)

for _n, (_f, _s, _g, _d) in UNARY.items():
    _row(
        _n,
        1,
        (),
        f"{{t0}}.{_n}()",
        "pointwise",
        dtypes=_d,
        saves=_s,
        fwd=lambda xs, p, dt, f=_f: f(xs[0]),
        bwd=_grad1(_g),
        grad_terms=CANCELLING.get(_n),
        inexact_beyond_1e6=INEXACT_BEYOND_1E6.get(_n, ()),
        real_of_complex=_n == "abs",
    )
_row(
    "pow_s",
    1,
    ("exponent",),
    "{t0}.pow({p0})",
    "pointwise",
    dtypes=FC,
    saves=("self",),
    fwd=lambda xs, p, dt: _pow(xs[0], p[0], dt),
    param_kinds=("scalar",),
    bwd=_grad1(lambda g, x, p: g * C(p[0] * _pow(x, p[0] - 1)) if p[0] else np.zeros_like(g * x)),
)
for _n, (_f, _s, _g, _d) in BINARY.items():
    _row(
        _n,
        2,
        (),
        f"{{t0}}.{_n}({{t1}})",
        "pointwise",
        dtypes=_d,
        saves=_s,
        check=_bcast,
        fwd=lambda xs, p, dt, f=_f: f(xs[0], xs[1]),
        bwd=lambda g, sv, p, n, s, f=_g: f(g, sv, n),
    )
for _n, (_f, _s, _g, _d) in SCALAR.items():
    _row(
        _n,
        1,
        ("other",),
        f"{{t0}}.{_n[:-2]}({{p0}})",
        "pointwise",
        dtypes=_d,
        saves=_s,
        scalar_operand=True,
        param_kinds=("scalar",),
        fwd=lambda xs, p, dt, f=_f: f(xs[0], p[0]),
        bwd=lambda g, sv, p, n, s, f=_g: [f(g, p[0])],
    )

_row(
    "sum",
    1,
    (),
    "{t0}.sum()",
    "pointwise",
    int_result=True,
    check=_reduce_check,
    layout="contiguous",
    sums=True,
    fwd=lambda xs, p, dt: np.sum(xs[0]),
    bwd=lambda g, sv, p, n, s: [_expand(g, s[0])],
)
_row(
    "mean",
    1,
    (),
    "{t0}.mean()",
    "pointwise",
    dtypes=FC,
    check=_reduce_check,
    layout="contiguous",
    sums=True,
    fwd=lambda xs, p, dt: xs[0].mean() if xs[0].size else xs[0].sum() * np.nan,
    bwd=lambda g, sv, p, n, s: [_expand(g, s[0], float(numel(s[0])))],
)
_row(
    "sum_dim",
    1,
    ("dim",),
    "{t0}.sum({p0})",
    "pointwise",
    int_result=True,
    check=_reduce_check,
    layout="contiguous",
    param_kinds=("dim",),
    sums=True,
    fwd=lambda xs, p, dt: (
        xs[0].sum(view_geometry.wrap_dim(p[0], xs[0].ndim)) if xs[0].ndim else xs[0]
    ),
    bwd=lambda g, sv, p, n, s: [
        _expand(np.expand_dims(g, view_geometry.wrap_dim(p[0], len(s[0]))) if s[0] else g, s[0])
    ],
)


def _flip(x: np.ndarray, dims: tuple) -> np.ndarray:
    """x.flip(dims): a 0-d tensor takes dim 0 or -1 and is itself."""
    return np.flip(x, axis=tuple(dims)) if x.ndim else x.copy()


# flip(dims): a copy, in self's layout (empty_like(self)); saves nothing
# (derivatives.yaml: `self: grad.flip(dims)`)
_row(
    "flip",
    1,
    ("dims",),
    "{t0}.flip({p0})",
    "pointwise",
    layout="preserve",
    args=op_args.SPACES["flip"],
    fwd=lambda xs, p, dt: _flip(xs[0], p[0]),
    bwd=lambda g, sv, p, n, s: [_flip(g, p[0])],
)


def _cumsum(x: np.ndarray, dim: int, reverse: bool = False) -> np.ndarray:
    """x.cumsum(dim) (reverse: from the dim's end, cumsum_backward); a 0-d x is itself."""
    if not x.ndim:
        return x.copy()
    d = view_geometry.wrap_dim(dim, x.ndim)
    if reverse:
        return np.flip(np.cumsum(np.flip(x, d), axis=d), d)
    return np.cumsum(x, axis=d)


# cumsum(dim): a contiguous result, int64 for an integer or bool self; saves
# nothing (derivatives.yaml: `self: cumsum_backward(grad.to(self.scalar_type()), dim)`,
# the gradient summed from the dim's end)
_row(
    "cumsum",
    1,
    ("dim",),
    "{t0}.cumsum({p0})",
    "pointwise",
    layout="contiguous",
    sums=True,
    int_result=True,
    args=op_args.SPACES["cumsum"],
    fwd=lambda xs, p, dt: _cumsum(xs[0], p[0]),
    bwd=lambda g, sv, p, n, s: [_cumsum(g, p[0], reverse=True)],
)


def _take_index(x_shape: tuple, index: object) -> np.ndarray:
    """take's index as an int64 array, refused where an entry is out of range."""
    idx, n = np.asarray(index, dtype=np.int64), numel(x_shape)
    if np.any((idx < -n) | (idx >= n)):
        raise OracleError(ErrorKind.INDEX_OUT_OF_RANGE, "out of range: tried to access index")
    return idx


def _take_bwd(g: np.ndarray, sv: dict, p: tuple, needs: list, shapes: list) -> list:
    """take_backward: zeros like self, the gradient put_ back with accumulate=True
    (an entry read twice gets both)."""
    flat = np.zeros(numel(shapes[0]), dtype=np.asarray(g).dtype)
    np.add.at(flat, _take_index(shapes[0], p[0]).ravel() % max(flat.size, 1), np.ravel(g))
    return [flat.reshape(shapes[0])]


# take(index): self read as 1-D at index, a contiguous result of index's shape;
# saves self and index (derivatives.yaml: `take_backward(grad, self, index)`), so a
# later write to self, or a second backward, raises
_row(
    "take",
    1,
    ("index",),
    "{t0}.take(torch.tensor({p0}, dtype=torch.long, device={t0}.device))",
    "pointwise",
    saves=("self",),
    layout="contiguous",
    check=lambda shapes, p: _take_index(shapes[0], p[0]).shape,
    args=op_args.SPACES["take"],
    fwd=lambda xs, p, dt: xs[0].reshape(-1)[_take_index(xs[0].shape, p[0])],
    bwd=_take_bwd,
)


def _gather_at(x_shape: tuple, dim: int, index: object) -> tuple:
    """The positions gather reads (index along dim, each index position along the
    rest), as numpy advanced indices; an entry out of [0, size(dim)) is refused."""
    idx = np.asarray(index, dtype=np.int64)
    if not x_shape:  # a 0-d self: index 0 reads it
        idx, x_shape = idx.reshape(-1), (1,)
    d = view_geometry.wrap_dim(dim, len(x_shape))
    if np.any((idx < 0) | (idx >= x_shape[d])):
        raise OracleError(ErrorKind.INDEX_OUT_OF_RANGE, "index is out of bounds for dimension")
    grids = list(np.indices(idx.shape, sparse=True)) if idx.ndim else []
    grids[d] = idx
    return tuple(grids)


def _gather(x: np.ndarray, dim: int, index: object) -> np.ndarray:
    shape = np.shape(index)
    return (x.reshape(-1) if not x.ndim else x)[_gather_at(x.shape, dim, index)].reshape(shape)


def _gather_bwd(g: np.ndarray, sv: dict, p: tuple, needs: list, shapes: list) -> list:
    """gather_backward: zeros like self, grad scatter_add_ed back (an element read
    twice gets both)."""
    out = np.zeros(shapes[0] or (1,), dtype=np.asarray(g).dtype)
    np.add.at(out, _gather_at(shapes[0], p[0], p[1]), np.reshape(g, np.shape(p[1])))
    return [out.reshape(shapes[0])]


# gather(dim, index): out[i][j] = self[index[i][j]][j] (dim 0), a contiguous result of
# index's shape; saves self and index (derivatives.yaml: gather_backward(grad, self,
# dim, index, sparse_grad), measured: _saved_self, _saved_index)
_row(
    "gather",
    1,
    ("dim", "index"),
    "{t0}.gather({p0}, torch.tensor({p1}, dtype=torch.long, device={t0}.device))",
    "pointwise",
    saves=("self",),
    layout="contiguous",
    check=lambda shapes, p: (_gather_at(shapes[0], p[0], p[1]), np.shape(p[1]))[1],
    args=op_args.SPACES["gather"],
    fwd=lambda xs, p, dt: _gather(xs[0], p[0], p[1]),
    bwd=_gather_bwd,
)


def _index_fill(x: np.ndarray, dim: int, index: object, value: object) -> np.ndarray:
    """x.index_fill_(dim, index, value)'s values (a 0-d x: as of shape (1,))."""
    out = x.reshape(1).copy() if not x.ndim else x.copy()
    d = view_geometry.wrap_dim(dim, x.ndim)
    idx = np.asarray(index, dtype=np.int64).reshape(-1)
    if np.any((idx < -out.shape[d]) | (idx >= out.shape[d])):
        raise OracleError(ErrorKind.INDEX_OUT_OF_RANGE, "index is out of bounds for dimension")
    out[(slice(None),) * d + (idx,)] = value
    return out.reshape(x.shape)


# index_fill_(dim, index, value): in place, one bump; saves index only (derivatives.yaml:
# `self: grad.index_fill(dim, index, 0)`, measured: _saved_dim, _saved_index), so a
# second backward raises. Expanded memory is deprecated (a warning): undefined
_row(
    "index_fill_",
    1,
    ("dim", "index", "value"),
    "{t0}.index_fill_({p0}, torch.tensor({p1}, dtype=torch.long, device={t0}.device), {p2})",
    "index_write",
    inplace=True,
    overlap_check=False,
    args=op_args.SPACES["index_fill_"],
    fwd=lambda xs, p, dt: _index_fill(xs[0], *p),
    bwd=lambda g, sv, p, n, s: [_index_fill(g, p[0], p[1], 0)],
)


def _max_dim(x: np.ndarray, dim: int, keepdim: bool) -> tuple[np.ndarray, np.ndarray]:
    """x.max(dim, keepdim): the values and the index of the first maximal value
    (documented), a nan the maximum (numpy's argmax, too, takes the first nan);
    a 0-d x is itself, at index 0."""
    if not x.ndim:
        return x.copy(), np.zeros((), np.int64)
    d = view_geometry.wrap_dim(dim, x.ndim)
    values = np.max(x, axis=d, keepdims=keepdim)
    return values, np.argmax(x, axis=d, keepdims=keepdim).astype(np.int64)


def _max_dim_bwd(g: np.ndarray, sv: dict, p: tuple, needs: list, shapes: list) -> list:
    """value_selecting_reduction_backward: zeros like self, the gradient put at the
    saved indices (a tie: only the index max returned gets it)."""
    shape, (dim, keepdim, _) = shapes[0], p
    if not shape:
        return [np.asarray(g).copy()]
    d = view_geometry.wrap_dim(dim, len(shape))
    idx = np.asarray(sv["result1"]).astype(np.int64)
    g = np.asarray(g)
    if not keepdim:
        idx, g = np.expand_dims(idx, d), np.expand_dims(g, d)
    out = np.zeros(shape, dtype=g.dtype)
    np.put_along_axis(out, idx, g, axis=d)
    return [out]


# x.max(dim, keepdim)[k]: values (k 0, self's dtype) and indices (k 1, int64), two new
# contiguous tensors of one call; MaxBackward0 is recorded on values and saves the
# indices (derivatives.yaml: `value_selecting_reduction_backward(grad, dim, indices,
# self.sizes(), keepdim)`; measured: _saved_indices, result1), so writing them in
# place breaks backward, and a second backward raises. Complex is refused
_row(
    "max_dim_k",
    1,
    ("dim", "keepdim", "k"),
    "{t0}.max({p0}, keepdim={p1})[{p2}]",
    "multi",
    dtypes=("float", "int", "bool"),
    saves=("result1",),
    outputs=("self", "int64"),
    args=op_args.SPACES["max_dim_k"],
    fwd=lambda xs, p, dt: _max_dim(xs[0], p[0], p[1]),
    bwd=_max_dim_bwd,
)


def _moments(x: np.ndarray, dim: int, correction: int, keepdim: bool) -> tuple:
    """(var, mean) over dim: var = sum |x - mean|^2 / (N - correction), real for a
    complex x; a 0-d x is reduced as of shape (1,)."""
    x = x.reshape(1) if not x.ndim else x
    d = view_geometry.wrap_dim(dim, x.ndim)
    mean = x.mean(axis=d, keepdims=True)
    dev = x - mean
    var = np.sum((dev * np.conj(dev)).real, axis=d, keepdims=True) / (x.shape[d] - correction)
    return var, mean


def _var_mean(x: np.ndarray, p: tuple, root: bool) -> tuple:
    dim, correction, keepdim, _ = p
    var, mean = _moments(x, dim, correction, keepdim)
    shape = _reduce_check([x.shape], (dim,)) if not keepdim else var.shape if x.ndim else ()
    return tuple(np.reshape(a, shape) for a in (np.sqrt(var) if root else var, mean))


def _var_mean_bwd(g: np.ndarray, sv: dict, p: tuple, needs: list, shapes: list) -> list:
    """var_mean_backward / std_mean_backward for the gradient of output k alone:
    var's 2 (x - mean) g / (N - correction) (std's: g / (2 std) first, 0 where std
    is 0), mean's g / N, each brought back over the reduced dim."""
    (dim, correction, keepdim, k), shape = p, shapes[0]
    x = sv["self"].reshape(1) if not shape else sv["self"]
    d = view_geometry.wrap_dim(dim, x.ndim)
    g = np.asarray(g)
    g = g.reshape(g.shape if keepdim and shape else np.expand_dims(g, d).shape)
    n = x.shape[d]
    if k == 1:
        return [np.broadcast_to(g / n, x.shape).reshape(shape).copy()]
    if "result0" in sv:  # std: the gradient of the variance under it
        std = np.asarray(sv["result0"]).reshape(g.shape)
        g = np.where(std == 0, 0, g / (2 * np.where(std == 0, 1, std)))
    dev = x - x.mean(axis=d, keepdims=True)
    return [(2.0 / (n - correction) * g * dev).reshape(shape)]


# torch.var_mean / torch.std_mean(x, dim, correction=c, keepdim=)[k]: (var or std, mean),
# two new contiguous tensors of one call, var and std real for a complex x; one node,
# VarMeanBackward0 saving self, StdMeanBackward0 self and its std (derivatives.yaml:
# `std_mean_backward(grads[0], grads[1], self, result0, ...)`; measured: _saved_self,
# _saved_result0), which it reads for either output's gradient: writing the std breaks
# the mean's backward too (2.13.0), writing the mean breaks neither
for _n, _root in (("var_mean_k", False), ("std_mean_k", True)):
    _row(
        _n,
        1,
        ("dim", "correction", "keepdim", "k"),
        f"torch.{_n[:-2]}({{t0}}, {{p0}}, correction={{p1}}, keepdim={{p2}})[{{p3}}]",
        "multi",
        dtypes=FC,
        saves=("self", "result0") if _root else ("self",),
        outputs=("real", "self"),
        sums=True,
        args=op_args.SPACES[_n],
        fwd=lambda xs, p, dt, r=_root: _var_mean(xs[0], p, r),
        bwd=_var_mean_bwd,
    )


def _kept_shape(shape: tuple, dim: int | None) -> tuple:
    """shape with the reduced dims (dim, or every one for None) kept as 1."""
    if dim is None or not shape:
        return (1,) * len(shape)
    d = view_geometry.wrap_dim(dim, len(shape))
    return shape[:d] + (1,) + shape[d + 1 :]


def _aminmax(x: np.ndarray, dim: int | None, keepdim: bool) -> tuple:
    """torch.aminmax(x, dim=, keepdim=): (min, max), nan propagated; dim None reduces
    every dim (keepdim: to 1s); a 0-d x is itself."""
    shape = _kept_shape(x.shape, dim)
    if not keepdim:
        shape = () if dim is None else _reduce_check([x.shape], (dim,)) if x.ndim else ()
    axis = None if dim is None or not x.ndim else view_geometry.wrap_dim(dim, x.ndim)
    return tuple(np.reshape(f(x, axis=axis), shape) for f in (np.min, np.max))


def _aminmax_bwd(g: np.ndarray, sv: dict, p: tuple, needs: list, shapes: list) -> list:
    """derivatives.yaml: scale_grad_by_count(restore_reduced_dims(grad), result ==
    self, dim): a tie shares the gradient evenly; a nan row gets nan (no element
    equals its nan result: g / 0 * 0)."""
    (dim, _, k), shape = p, shapes[0]
    kept = _kept_shape(shape, dim)
    x, r = sv["self"], np.reshape(sv[f"result{k}"], kept)
    mask = r == x
    axes = tuple(
        i for i, (a, b) in enumerate(zip(kept, shape, strict=True)) if a != b or dim is None
    )
    count = mask.sum(axis=axes, keepdims=True) if shape else mask
    with np.errstate(all="ignore"):
        return [(np.reshape(g, kept) / count * mask).reshape(shape)]


# torch.aminmax(x, dim=, keepdim=)[k]: (min, max), two new contiguous tensors of one
# call, of self's dtype (complex not implemented). Measured on 2.13.0: one
# AminmaxBackward0 on both, saving _saved_self, _saved_min, _saved_max (result0 and
# result1) and reading all of them for either output's gradient: writing max in
# place breaks min's backward ("output 1 of AminmaxBackward0"); a tie shares the
# gradient ([1, 3, 3]: 0, .5, .5); dim None reduces all (an empty self refused)
_row(
    "aminmax_k",
    1,
    ("dim", "keepdim", "k"),
    "torch.aminmax({t0}, dim={p0}, keepdim={p1})[{p2}]",
    "multi",
    dtypes=("float", "int", "bool"),
    saves=("self", "result0", "result1"),
    outputs=("self", "self"),
    args=op_args.SPACES["aminmax_k"],
    fwd=lambda xs, p, dt: _aminmax(xs[0], p[0], p[1]),
    bwd=_aminmax_bwd,
)
# unsafe_split, unsafe_chunk, unsafe_split_with_sizes(...)[k]: split's pieces, in memory,
# but not views: "Works like torch.split() but without enforcing the autograd
# restrictions on inplace modification of the outputs" (torch/_torch_docs.py); saves
# no tensor (derivatives.yaml: split_backward(grads, split_size, dim, self.sizes(), ...))
for _n, _tpl, _geom in (
    ("unsafe_split_k", "{t0}.unsafe_split({p0}, {p1})[{p2}]", view_ops.split_k),
    ("unsafe_chunk_k", "{t0}.unsafe_chunk({p0}, {p1})[{p2}]", view_ops.chunk_k),
    (
        "unsafe_split_with_sizes_k",
        "{t0}.unsafe_split_with_sizes({p0}, {p1})[{p2}]",
        view_ops.split_with_sizes_k,
    ),
):
    _row(
        _n,
        1,
        view_rows.ROWS[_n.removeprefix("unsafe_")]["params"],
        _tpl,
        "unsafe_split",
        geom=_geom,
        args=op_args.SPACES[_n],
    )
_row(
    "mm",
    2,
    (),
    "{t0}.mm({t1})",
    "pointwise",
    dtypes=FCI,
    saves=MUL_SAVES,
    check=_mm_check,
    layout="contiguous",
    sums=True,
    fwd=lambda xs, p, dt: xs[0] @ xs[1],
    bwd=_matmul_bwd,
)
_row(
    "matmul",
    2,
    (),
    "{t0}.matmul({t1})",
    "pointwise",
    dtypes=FCI,
    saves=MUL_SAVES,
    check=_matmul_check,
    layout="matmul",
    composite=True,
    max_ndim=2,
    sums=True,
    fwd=lambda xs, p, dt: np.matmul(xs[0], xs[1]),
    bwd=_matmul_bwd,
)

for _n in (
    "add_",
    "sub_",
    "mul_",
    "div_",
    "add_s_",
    "sub_s_",
    "mul_s_",
    "div_s_",
    "exp_",
    "tanh_",
    "sigmoid_",
    "relu_",
    "sin_",
    "neg_",
):
    _src, _m = OPS[_n[:-1]], _n[:-1].removesuffix("_s")
    _row(
        _n,
        _src.arity,
        _src.params,
        _src.torch.replace(f".{_m}(", f".{_m}_("),
        "inplace",
        inplace=True,
        dtypes=_src.dtypes,
        saves=_src.saves,
        fwd=_src.fwd,
        bwd=_src.bwd,
        param_kinds=_src.param_kinds,
        scalar_operand=_src.scalar_operand,
        inexact_beyond_1e6=_src.inexact_beyond_1e6,
    )
_zero = lambda g, sv, p, n, s: [np.zeros_like(g)]  # noqa: E731
_row(
    "zero_",
    1,
    (),
    "{t0}.zero_()",
    "inplace",
    inplace=True,
    overlap_check=False,
    exact_bits=True,
    fwd=lambda xs, p, dt: np.zeros_like(xs[0]),
    bwd=_zero,
)
_row(
    "fill_",
    1,
    ("value",),
    "{t0}.fill_({p0})",
    "inplace",
    inplace=True,
    overlap_check=False,
    exact_bits=True,
    fwd=lambda xs, p, dt: np.full_like(xs[0], p[0]),
    bwd=_zero,
    param_kinds=("scalar",),
)
_row(
    "clamp_",
    1,
    ("min", "max"),
    "{t0}.clamp_({p0}, {p1})",
    "inplace",
    inplace=True,
    dtypes=FI,
    saves=("self",),
    exact_bump=False,
    fwd=lambda xs, p, dt: _clamp(xs[0], *p),
    bwd=_clamp_bwd,
    strict_bwd=clamp_bwd_strict,
    param_kinds=("scalar", "scalar"),
)
# clamp_min_(min): max(self, min), nan kept; saves self (derivatives.yaml:
# `where(self >= min, grad, 0)`, in place a private copy of the original) and
# changed its gradient at the bound with clamp in 2.14 (docs/releases.md); one bump
_row(
    "clamp_min_",
    1,
    ("min",),
    "{t0}.clamp_min_({p0})",
    "inplace",
    inplace=True,
    dtypes=FI,
    saves=("self",),
    fwd=lambda xs, p, dt: _clamp(xs[0], p[0], None),
    bwd=lambda g, sv, p, n, s: _clamp_bwd(g, sv, (p[0], None), n, s),
    strict_bwd=lambda g, sv, p, n, s: clamp_bwd_strict(g, sv, (p[0], None), n, s),
    param_kinds=("scalar",),
)


def _lerp(x: np.ndarray, end: np.ndarray, w: complex) -> np.ndarray:
    """torch's lerp: self + w (end - self) where |w| < 0.5, else end - (end - self)(1 - w)
    (the two forms round differently; aten/src/ATen/native/Lerp.h)."""
    return x + w * (end - x) if abs(w) < 0.5 else end - (end - x) * (1 - w)


# lerp_(end, weight) with a python weight: in place, one bump, float and complex;
# saves no tensor (derivatives.yaml: `self: grad * (1 - weight.conj())`,
# `end: grad * weight.conj()`; measured: _saved_weight, a scalar)
_row(
    "lerp_",
    2,
    ("weight",),
    "{t0}.lerp_({t1}, {p0})",
    "inplace",
    inplace=True,
    dtypes=FC,
    fwd=lambda xs, p, dt: _lerp(xs[0], xs[1], p[0]),
    bwd=lambda g, sv, p, n, s: [
        g * np.conj(1 - p[0]) if n[0] else None,
        sum_to(g * np.conj(p[0]), s[1]) if n[1] else None,
    ],
    param_kinds=("scalar",),
)
_row(
    "setitem",
    2,
    ("index",),
    "{t0}[{p0}] = {t1}",
    "setitem",
    inplace=True,
    exact_bits=True,
    statement=True,
    returns=False,
    cross_dtype=True,
    param_kinds=("index",),
)
_row(
    "setitem_s",
    1,
    ("index", "value"),
    "{t0}[{p0}] = {p1}",
    "setitem",
    inplace=True,
    exact_bits=True,
    statement=True,
    returns=False,
    param_kinds=("index", "scalar"),
)

# retain_graph: True, False or left out, which "defaults to the value of
# create_graph" (False: strategies/gradapi_args.py)
_row(
    "backward",
    1,
    ("retain_graph",),
    "{t0}.backward(retain_graph={p0})",
    "backward",
    statement=True,
    returns=False,
    param_kinds=("bool",),
    param_defaults=(False,),
    args=gradapi_args.SPACES["backward"],
)
_row(
    "backward_g",
    2,
    ("retain_graph",),
    "{t0}.backward({t1}, retain_graph={p0})",
    "backward",
    statement=True,
    returns=False,
    param_kinds=("bool",),
    param_defaults=(False,),
    args=gradapi_args.SPACES["backward_g"],
)
_row(
    "requires_grad_",
    1,
    ("flag",),
    "{t0}.requires_grad_({p0})",
    "requires_grad_",
    param_kinds=("bool",),
)
_row("retain_grad", 1, (), "{t0}.retain_grad()", "retain_grad", statement=True, returns=False)
_row("zero_grad", 1, (), "{t0}.grad = None", "zero_grad", statement=True, returns=False)

# writes at indexed positions (index_ops): in place, like the rows above, but
# the source fills only some of self's elements
for _n, (_tpl, _p, _f, _b, _arity) in index_ops.ROWS.items():
    _row(
        _n,
        _arity,
        _p,
        _tpl,
        "index_write",
        inplace=True,
        statement=_n == "setitem_t",
        returns=_n != "setitem_t",
        dtypes=FCI if _n == "index_add_" else ALL,
        # index_add_ rounds after each add into a repeated row
        sums=_n == "index_add_",
        saves_index_for_source_only=_n == "index_add_",
        exact_bits=_n != "index_add_",
        # index_put_ does not look; masked_fill_ only warns on expanded memory
        overlap_check=_n in ("index_add_", "index_copy_", "scatter_"),
        # index_add_ and index_copy_ save the source for its gradient's shape
        # (`expand_as(source)`), when the source requires grad (measured)
        saves=("other_if_other_requires_grad",) if _n in ("index_add_", "index_copy_") else (),
        param_kinds=("custom",) * len(_p),
        fwd=lambda xs, p, dt, f=_f: f(xs[0], xs[1] if len(xs) > 1 else None, p),
        bwd=lambda g, sv, p, n, s, b=_b: list(b(g, p, s[-1]))[: len(s)],
    )

# out=, resize_, set_, _foreach_ (write_rows): rows of their own, run by write_ops.run
for _n, _kw in write_rows.ROWS.items():
    _row(_n, **_kw)

# torch.autograd.grad: the gradient is returned, nothing accumulates (None where the
# output does not depend on the input, with allow_unused; an error without it). It is
# cloned: whether a returned gradient is the grad_outputs tensor itself, or a view of
# it, is not documented. Both flags may be left out (strategies/gradapi_args.py)
_row(
    "autograd_grad",
    3,
    ("retain_graph", "allow_unused"),
    "[g if g is None else g.clone() for g in "
    "torch.autograd.grad({t0}, {t1}, {t2}, retain_graph={p0}, allow_unused={p1})][0]",
    "autograd_grad",
    param_kinds=("bool", "bool"),
    param_defaults=(False, False),
    args=gradapi_args.SPACES["autograd_grad"],
)
# x.grad = g: checked against x's shape, dtype and device; g then is x's .grad
_row(
    "set_grad",
    2,
    (),
    "{t0}.grad = {t1}",
    "set_grad",
    statement=True,
    returns=False,
    cross_dtype=True,
)

# --- the gradient APIs (oracle.gradapi): tensor hooks, post-accumulate-grad hooks ---

# (oracle/hook_rows.py: where each registers its hook, what it does, its constant)
for _n, _kw in hook_rows.ROWS.items():
    _row(_n, **_kw)
# torch.autograd.grad(..., create_graph=True): the gradient in a graph of its own
# where its formula reads a tensor that requires grad; modelled for one op of
# gradapi.SECOND on the input, real dtypes (the graph is kept: retain_graph)
_row(
    "grad_cg",
    3,
    (),
    "torch.autograd.grad({t0}, {t1}, {t2}, create_graph=True, allow_unused=True)[0]",
    "grad_cg",
    dtypes=("float",),
)
