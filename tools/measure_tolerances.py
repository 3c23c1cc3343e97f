#!/usr/bin/env python3
"""Issue 28 measurement: how far torch's values and gradients are from the
oracle's (oracle/ops.py formulas, NumPy), per op and dtype, over inputs like
the ones the suite draws; and how much rounding float64 through float32 moves
a value (what a float64 tolerance must catch).

Run (the figures in docs/oracle.md, "Tolerances"; about 50 s on one core):
  python tools/measure_tolerances.py --n 60000 --trials 600
  options: [--seed 0] [--device cpu|cuda] [--json results.json]
           [--only fwd,grad,red,down,compiled]

Input sets (float64 values, rounded to the dtype under test):
  leaf      k*2**e, |k|<=15, -4<=e<=-1   (strategies.dtypes.seeded_values / small_elements,
                                          differential leaves and scalars)
  elements  k*2**e, |k|<=15, -6<=e<=3    (strategies.dtypes.elements)
  chained   leaf values after 1-3 random steps of exp/tanh/sigmoid/sin/cos/*c,/c,+c,
            x*x, x*x*x, sqrt|x|, log|x|, x*y, x/y (full-mantissa values a chain makes)
  wide      sign * 10**U(-6, 6), full mantissa (stress only, not what the suite draws)
Metrics, where both results are finite:
  ulp   |a-e| / ulp_d(e)   (complex: |a-e| / (eps_d*|e|), eps_d = 2**(1-p))
  rel   |a-e| / |e|
  scl   |a-e| / (eps_d * T), T = the sum of |terms| (reductions, matmul, gradients)
  z     max |a| where the oracle's value is exactly 0
  nf    elements whose finiteness (or nan-ness, real) differs
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
sys.dont_write_bytecode = True  # never write __pycache__ into the repo
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from oracle.dtypes import op_values, round_to  # noqa: E402
from oracle.ops import OPS, out_dtype  # noqa: E402

torch.set_num_threads(1)

REALS = ["float64", "float32", "float16", "bfloat16"]
COMPLEXES = ["complex128", "complex64"]
TD = {n: getattr(torch, n) for n in REALS + COMPLEXES}
PREC = {  # (significand bits, smallest normal exponent)
    "float64": (53, -1022),
    "float32": (24, -126),
    "float16": (11, -14),
    "bfloat16": (8, -126),
    "complex128": (53, -1022),
    "complex64": (24, -126),
}
EPS = {d: 2.0 ** (1 - p) for d, (p, _) in PREC.items()}
SETS = ("leaf", "elements", "chained", "wide")
SUITE_SETS = ("leaf", "elements", "chained")


def ulp(e: np.ndarray, d: str) -> np.ndarray:
    p, emin = PREC[d]
    _, ex = np.frexp(np.abs(e))
    return np.ldexp(1.0, np.maximum(ex - 1, emin) - p + 1)


# ---- inputs ---------------------------------------------------------------------------
def dyadic(rng, n, lo, hi):
    return rng.integers(-15, 16, n) * 2.0 ** rng.integers(lo, hi + 1, n)


def chained(rng, n, cplx):
    v = leaf(rng, n, cplx)
    for _ in range(3):
        w = leaf(rng, n, cplx)
        c = leaf(rng, n, cplx)
        c = np.where(c == 0, 0.5, c)
        with np.errstate(all="ignore"):
            steps = [
                np.exp(v),
                np.tanh(v),
                1 / (1 + np.exp(-v)),
                np.sin(v),
                np.cos(v),
                v * c,
                v / c,
                v + c,
                v * v,
                v * v * v,
                np.sqrt(np.abs(v)) if not cplx else np.sqrt(v),
                np.log(np.abs(v)) if not cplx else np.log(v),
                v * w,
                v / np.where(w == 0, 1, w),
            ]
        pick = rng.integers(0, len(steps), n)
        nxt = np.choose(pick, steps)
        keep = rng.random(n) < 0.75  # 1-3 steps on most, some stop earlier
        v = np.where(keep & np.isfinite(nxt) & (np.abs(nxt) < 1e30), nxt, v)
    return v


def leaf(rng, n, cplx):
    if not cplx:
        return dyadic(rng, n, -4, -1)
    re, im = dyadic(rng, n, -4, -1), dyadic(rng, n, -4, -1)
    return np.where(re == 0, 0.5, re) + 1j * np.where(im == 0, 0.5, im)


def make(kind, rng, n, cplx):
    if kind == "leaf":
        return leaf(rng, n, cplx)
    if kind == "elements":
        if cplx:
            return dyadic(rng, n, -6, 3) + 1j * dyadic(rng, n, -6, 3)
        return dyadic(rng, n, -6, 3)
    if kind == "chained":
        return chained(rng, n, cplx)
    w = lambda: rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-6, 6, n)  # noqa: E731
    return w() + 1j * w() if cplx else w()


# ---- statistics -----------------------------------------------------------------------
class Stat:
    def __init__(self):
        self.n = self.nf = 0
        self.ulp = self.rel = self.scl = self.z = 0.0
        self.worst = None

    def add(self, a, e, d, scale=None, x=None):
        a, e = np.ravel(np.asarray(a)), np.ravel(np.asarray(e))
        cplx = np.iscomplexobj(a) or np.iscomplexobj(e)
        fa, fe = np.isfinite(a), np.isfinite(e)
        if cplx:
            self.nf += int((fa != fe).sum())
        else:
            same = (a == e) | (np.isnan(a) & np.isnan(e)) | (fa & fe)
            self.nf += int((~same).sum())
        m = fa & fe
        a, e = a[m], e[m]
        self.n += int(m.sum())
        if not a.size:
            return
        err = np.abs(a - e)
        mag = np.abs(e)
        nz = mag > 0
        if (~nz).any():
            self.z = max(self.z, float(err[~nz].max()))
        if nz.any():
            rel = err[nz] / mag[nz]
            u = rel / EPS[d] if cplx else err[nz] / ulp(e[nz], d)
            i = int(np.argmax(u))
            if u[i] > self.ulp:
                xs = None if x is None else np.ravel(np.asarray(x))[m][nz][i]
                self.worst = xs.item() if xs is not None else None
                self.worst = (self.worst, (a[nz][i]).item(), (e[nz][i]).item())
            self.ulp = max(self.ulp, float(u.max()))
            self.rel = max(self.rel, float(rel.max()))
        if scale is not None:
            s = np.ravel(scale)
            s = (np.broadcast_to(s, m.shape) if s.size == 1 else s)[m]
            pos = s > 0
            if pos.any():
                self.scl = max(self.scl, float((err[pos] / (EPS[d] * s[pos])).max()))

    COLUMNS = ("n", "ulp", "rel", "scl", "z", "nf", "worst")  # a row's, in the JSON's order

    def row(self):
        return {k: getattr(self, k) for k in self.COLUMNS}


STATS: dict = {}


def stat(*key):
    return STATS.setdefault(key, Stat())


# ---- torch side -------------------------------------------------------------------------
DEV = "cpu"


def tt(values, d, requires_grad=False, strided=False):
    v = np.asarray(values)
    t = torch.tensor(v, dtype=TD[d], device=DEV)
    if strided and t.ndim == 1:  # every other element of a buffer: TensorIterator's basic loop
        buf = torch.zeros(2 * t.numel(), dtype=TD[d], device=DEV)
        buf[::2] = t
        t = buf[::2]
    if requires_grad:
        t = t.detach().requires_grad_(True) if not strided else t.requires_grad_(True)
    return t


def tn(t):
    t = t.detach().cpu()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.double()
    return t.numpy().astype(np.complex128 if t.is_complex() else np.float64)


def call(name, ts, p):
    spec = OPS[name]
    names = {f"t{i}": f"ts[{i}]" for i in range(len(ts))}
    names.update({f"p{i}": repr(v) for i, v in enumerate(p)})
    return eval(spec.torch.format(**names), {"torch": torch, "ts": ts})


def oracle_fwd(name, xs, p, d):
    spec = OPS[name]
    with np.errstate(all="ignore"):
        v = spec.fwd([op_values(x, d) for x in xs], p, d)
    return round_to(np.asarray(v), out_dtype(spec, d))


UNARY = ["neg", "exp", "log", "tanh", "sigmoid", "relu", "sin", "cos", "sqrt", "abs"]
BINARY = ["add", "sub", "mul", "div"]
SCALAR = ["add_s", "sub_s", "mul_s", "div_s"]
POWS = [0, 1, 2, 3, -2, -0.5, 0.5]  # the differential draws 0..3; the others: oracle branches


def supports(name, d):
    kind = "complex" if d.startswith("complex") else "float"
    return kind in OPS[name].dtypes


def scalar_for(rng, d, nonzero):
    v = float(dyadic(rng, 1, -4, -1)[0])
    if d.startswith("complex"):
        w = float(dyadic(rng, 1, -4, -1)[0])
        return complex(v or 0.5, w or 0.5)
    return v if (v or not nonzero) else 0.5


def elementwise(rng, n):
    for d in REALS + COMPLEXES:
        cplx = d.startswith("complex")
        for s in SETS:
            x0, y0 = make(s, rng, n, cplx), make(s, rng, n, cplx)
            x, y = round_to(x0, d), round_to(y0, d)
            jobs = [(u, (x,), ()) for u in UNARY]
            jobs += [(b, (x, y), ()) for b in BINARY]
            jobs += [(c, (x,), (scalar_for(rng, d, c.startswith("div")),)) for c in SCALAR]
            jobs += [("pow_s", (x,), (q,)) for q in POWS]
            for name, xs, p in jobs:
                if not supports(name, d):
                    continue
                key = name if name != "pow_s" else f"pow_s({p[0]})"
                try:
                    want = oracle_fwd(name, list(xs), p, d)
                except Exception as exc:  # noqa: BLE001
                    print("oracle fails", key, d, exc)
                    continue
                for strided in (False, True):
                    try:
                        got = tn(call(name, [tt(v, d, strided=strided) for v in xs], p))
                    except RuntimeError as exc:  # a missing reduced-precision kernel
                        stat("fwd", key, d, "missing").nf += 1
                        print("torch fails", key, d, str(exc)[:80])
                        break
                    stat("fwd", key, d, s).add(got, want, d, x=xs[0])


def grads(rng, n):
    """torch autograd vs the oracle's bwd formula (saved values as torch's, after resync)."""
    for d in ["float64", "float32", "complex128", "complex64", "float16", "bfloat16"]:
        cplx = d.startswith("complex")
        for s in SETS:
            x = round_to(make(s, rng, n, cplx), d)
            y = round_to(make(s, rng, n, cplx), d)
            g = round_to(make("leaf" if s != "wide" else s, rng, n, cplx), d)
            jobs = [(u, 1, ()) for u in UNARY if u not in ("neg",)]
            jobs += [(b, 2, ()) for b in BINARY if b in ("mul", "div")]
            jobs += [("pow_s", 1, (q,)) for q in (2, 3, -0.5, 0.5)]
            jobs += [("div_s", 1, (scalar_for(rng, d, True),))]
            for name, arity, p in jobs:
                if not supports(name, d):
                    continue
                key = name if name != "pow_s" else f"pow_s({p[0]})"
                ins = [x, y][:arity]
                ts = [tt(v, d, requires_grad=True) for v in ins]
                try:
                    out = call(name, ts, p)
                    out.backward(tt(g, d))
                except RuntimeError:
                    stat("grad", key, d, "missing").nf += 1
                    continue
                saved = {}
                spec = OPS[name]
                for k in spec.saves:
                    base = k.split("_if_")[0]
                    if base == "result":
                        saved[base] = tn(out)
                    elif base == "self":
                        saved[base] = ins[0]
                    elif base == "other":
                        saved[base] = ins[1] if arity > 1 else None
                saved = {k: op_values(v, d) for k, v in saved.items() if v is not None}
                with np.errstate(all="ignore"):
                    want = spec.bwd(
                        op_values(g, d), saved, p, [True] * arity, [v.shape for v in ins]
                    )
                # the size of the formula's terms: |g| * max(1, |x|, |y|, |r|)**2 (lockstep's bound)
                big = np.maximum(1, np.abs(tn(out)))
                for v in ins:
                    big = np.maximum(big, np.abs(v))
                terms = np.abs(g) * big * big
                for i, t in enumerate(ts):
                    if want[i] is None:
                        continue
                    stat("grad", key + (f"[{i}]" if arity > 1 else ""), d, s).add(
                        tn(t.grad), round_to(want[i], d), d, scale=terms, x=ins[i]
                    )


def shapes_for(rng, op):
    if op in ("sum", "mean", "sum_dim"):
        r = int(rng.integers(1, 5))
        while True:
            sh = tuple(int(v) for v in rng.integers(1, 5, r))
            if np.prod(sh) <= 64:
                return [sh]
    if op == "mm":
        a, b, c = (int(v) for v in rng.integers(1, 5, 3))
        return [(a, b), (b, c)]
    # matmul: ranks 1-3 each (the oracle models ranks up to 2 exactly; 3 broadcasts)
    ra, rb = (int(v) for v in rng.integers(1, 4, 2))
    k = int(rng.integers(1, 5))
    batch = (int(rng.integers(1, 4)),)
    sa = (k,) if ra == 1 else (batch if ra == 3 else ()) + (int(rng.integers(1, 5)), k)
    sb = (k,) if rb == 1 else (batch if rb == 3 else ()) + (k, int(rng.integers(1, 5)))
    return [sa, sb]


def reductions(rng, trials):
    for d in REALS + COMPLEXES:
        cplx = d.startswith("complex")
        for s in SETS:
            for op in ("sum", "mean", "sum_dim", "mm", "matmul"):
                if not supports(op, d):
                    continue
                for _ in range(trials):
                    shp = shapes_for(rng, op)
                    xs = [
                        round_to(make(s, rng, int(np.prod(sh)), cplx).reshape(sh), d) for sh in shp
                    ]
                    p = (int(rng.integers(0, len(shp[0]))),) if op == "sum_dim" else ()
                    want = oracle_fwd(op, xs, p, d)
                    # the sum of |terms|: the same op on magnitudes
                    absx = [np.abs(v) for v in xs]
                    terms = np.asarray(OPS[op].fwd(absx, p, d))
                    transpose = op in ("mm", "matmul") and len(shp[0]) == 2 and rng.random() < 0.5
                    ts = [tt(v, d) for v in xs]
                    if transpose:  # a transposed (column-major) left operand
                        ts[0] = tt(np.ascontiguousarray(xs[0].T), d).t()
                    try:
                        got = tn(call(op, ts, p))
                    except RuntimeError as exc:
                        stat("fwd", op, d, "missing").nf += 1
                        print("torch fails", op, d, str(exc)[:80])
                        break
                    stat("fwd", op, d, s).add(got, want.reshape(got.shape), d, scale=terms)
                    if op in ("mm", "matmul", "mean") and d in (
                        "float64",
                        "float32",
                        "complex128",
                        "complex64",
                    ):
                        gt = [tt(v, d, requires_grad=True) for v in xs]
                        out = call(op, gt, p)
                        g = round_to(make("leaf", rng, out.numel(), cplx).reshape(out.shape), d)
                        out.backward(tt(g, d))
                        saved = {"self_if_other_requires_grad": xs[0]}
                        if len(xs) > 1:
                            saved["other_if_self_requires_grad"] = xs[1]
                        saved["self"], saved["other"] = xs[0], xs[-1]
                        want_g = OPS[op].bwd(g, saved, p, [True] * len(xs), [v.shape for v in xs])
                        for i, t in enumerate(gt):
                            sv = {k: np.abs(v) for k, v in saved.items()}
                            tg = OPS[op].bwd(
                                np.abs(g), sv, p, [True] * len(xs), [v.shape for v in xs]
                            )[i]
                            stat("grad", f"{op}[{i}]", d, s).add(
                                tn(t.grad), round_to(want_g[i], d), d, scale=tg
                            )


# ---- compiled (torch.compile, inductor) against eager: conformance/compiled/compare.py ----
CMP_OPS = (
    "exp",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "log",
    "sqrt",
    "div",
    "pow_s(3)",
    "sum",
    "mean",
    "mm",
)


def _cmp_fn(*xs):
    (a, b, c, d, e, f, g, h, h2, i, j, k, k2) = xs
    return (
        a.exp(),
        b.sin(),
        c.cos(),
        d.tanh(),
        e.sigmoid(),
        f.log(),
        g.sqrt(),
        h / h2,
        i.pow(3),
        j.sum(),
        j.mean(),
        k.mm(k2),
    )


def compiled(rng, n):
    """Eager is the reference here, as in compare.py; values and gradients of one compiled
    program (fixed shapes) on the chained set, float64 and float32."""
    cf = torch.compile(_cmp_fn, dynamic=False)
    for d in ("float64", "float32"):
        x = [round_to(make("chained", rng, n, False), d) for _ in range(11)]
        x[5], x[6] = np.abs(x[5]), np.abs(x[6])  # log, sqrt: positive
        m = [round_to(make("chained", rng, 16, False), d).reshape(4, 4) for _ in range(2)]
        arrays = x + m
        outs = {}
        for label, fn in (("eager", _cmp_fn), ("compiled", cf)):
            ts = [tt(v, d, requires_grad=True) for v in arrays]
            res = fn(*ts)
            gs = (
                [
                    tt(round_to(make("leaf", rng, r.numel(), False), d).reshape(r.shape), d)
                    for r in res
                ]
                if label == "eager"
                else outs["eager"][2]
            )
            torch.autograd.backward(res, gs)
            outs[label] = (
                [tn(r) for r in res],
                [tn(t.grad) if t.grad is not None else None for t in ts],
                gs,
            )
        (ev, eg, _), (cv, cg, _) = outs["eager"], outs["compiled"]
        for name, a, e in zip(CMP_OPS, cv, ev, strict=False):
            stat("cmpf", name, d, "chained").add(a, e, d)
        # one gradient an argument: the unary ops' own, then the others'
        gnames = [
            *CMP_OPS[:7],
            "div[0]",
            "div[1]",
            "pow_s(3)",
            "sum+mean",
            "mm[0]",
            "mm[1]",
        ]
        for name, a, e, xin in zip(gnames, cg, eg, arrays, strict=False):
            if a is not None:
                stat("cmpg", name, d, "chained").add(a, e, d, x=xin)


# ---- (3): what a float64 result loses when it goes through float32 -------------------
DOWN_OPS = ("exp", "sin", "cos", "tanh", "sigmoid", "log", "sqrt", "div", "mul", "add")
PAIRS = (  # (label, rtol, atol): today's two float64 entries and the proposal
    ("oracle._TOL (1e-7,1e-10)", 1e-7, 1e-10),
    ("check.TOLERANCES (1e-10,1e-12)", 1e-10, 1e-12),
    ("proposed (4 eps, tiny)", 4 * 2.0**-52, 2.0**-1022),
)
RTOLS = (1e-7, 1e-8, 1e-10, 1e-13, 4 * 2.0**-52)


def downcast(rng, n):
    """Relative change of float64 results: 'store' rounds the oracle's float64 result
    to float32 and back (a float32 intermediate buffer); 'compute' evaluates the op in
    float32 on float32-rounded inputs (a float64 op dispatched to a float32 kernel)."""
    out = {}
    for s in SUITE_SETS:
        x = make(s, rng, n, False)
        for name in DOWN_OPS:
            xs = [x, make(s, rng, n, False)] if name in BINARY else [x]
            e = oracle_fwd(name, xs, (), "float64")
            f = oracle_fwd(name, [round_to(v, "float32") for v in xs], (), "float32")
            st = round_to(e, "float32")
            m = np.isfinite(e) & np.isfinite(f) & np.isfinite(st) & (e != 0)
            out[(s, name)] = {
                "store": np.abs(st[m] - e[m]) / np.abs(e[m]),
                "compute": np.abs(f[m] - e[m]) / np.abs(e[m]),
                "mag": np.abs(e[m]),
            }
    return out


def report_downcast(dc):
    print("\n(3) float64 results through float32: relative change |f32 - f64| / |f64|")
    head = " ".join(f"{'>' + format(r, '.0e'):>7}" for r in RTOLS)
    print(f"{'set':9} {'op':8} {'how':8} {'n':>6} {'max':>9} {'median':>9} {'exact':>6} {head}")
    for (s, name), hows in dc.items():
        for how, r in hows.items():
            if how == "mag":
                continue
            frac = " ".join(f"{np.mean(r > t):7.1%}" for t in RTOLS)
            print(
                f"{s:9} {name:8} {how:8} {r.size:6d} {r.max():9.2e} {np.median(r):9.2e} "
                f"{np.mean(r == 0):6.1%} {frac}"
            )
    print("share of float64 elements a float32 detour moves outside allclose(rtol, atol), all ops:")
    for label, rtol, atol in PAIRS:
        parts = []
        for st_ in SUITE_SETS:
            for how in ("store", "compute"):
                e = np.concatenate([dc[(st_, k)]["mag"] for k in DOWN_OPS])
                r = np.concatenate([dc[(st_, k)][how] for k in DOWN_OPS])
                parts.append(f"{st_}/{how} {np.mean(r * e > atol + rtol * e):6.1%}")
        print(f"  {label:26} " + "  ".join(parts))
    allr = np.concatenate([hows["store"] for hows in dc.values()])
    inexact = allr[allr > 0]
    print(
        f"store, all sets and ops: n={allr.size} exact={np.mean(allr == 0):.1%} "
        f"min nonzero={inexact.min():.2e} p1={np.quantile(inexact, 0.01):.2e} "
        f"median={np.median(inexact):.2e} max={allr.max():.2e}"
    )


def main():
    global DEV
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000, help="elements per input set (elementwise)")
    ap.add_argument("--trials", type=int, default=300, help="random shapes per set (reductions)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", default="results.json")
    ap.add_argument(
        "--only", default="", help="comma list of: fwd,grad,red,down,compiled (default: all)"
    )
    a = ap.parse_args()
    DEV = a.device
    only = set(filter(None, a.only.split(","))) or {"fwd", "grad", "red", "down", "compiled"}
    rng = np.random.default_rng(a.seed)
    t0 = time.time()
    print(
        f"torch {torch.__version__} numpy {np.__version__} device {DEV} "
        f"cpu capability {torch.backends.cpu.get_cpu_capability()} "
        f"threads {torch.get_num_threads()}"
    )
    if "fwd" in only:
        elementwise(rng, a.n)
    if "red" in only:
        reductions(rng, a.trials)
    if "grad" in only:
        grads(rng, a.n // 4)
    if "compiled" in only:
        compiled(rng, 4096)
    dc = downcast(rng, a.n) if "down" in only else None
    print(f"measured in {time.time() - t0:.1f}s")
    print(
        f"\n{'kind':4} {'op':14} {'dtype':10} {'set':8} {'n':>7} {'ulp':>9} {'rel':>9} "
        f"{'scl':>8} {'z':>8} {'nf':>4}  worst (x, torch, oracle)"
    )
    rows = []
    for (kind, op, d, s), st in sorted(
        STATS.items(),
        key=lambda kv: (kv[0][0], kv[0][1], (REALS + COMPLEXES).index(kv[0][2]), kv[0][3]),
    ):
        r = st.row()
        rows.append(dict(kind=kind, op=op, dtype=d, set=s, **r))
        w = "" if r["worst"] is None else repr(tuple(r["worst"]))[:70]
        print(
            f"{kind:4} {op:14} {d:10} {s:8} {r['n']:7d} {r['ulp']:9.3g} {r['rel']:9.2e} "
            f"{r['scl']:8.3g} {r['z']:8.1e} {r['nf']:4d}  {w}"
        )
    if dc is not None:
        report_downcast(dc)
    with open(a.json, "w") as f:
        down = {
            f"{s}/{k}/{how}": dict(
                n=int(r.size),
                max=float(r.max()),
                median=float(np.median(r)),
                exact=float(np.mean(r == 0)),
            )
            for (s, k), hows in (dc or {}).items()
            for how, r in hows.items()
        }
        json.dump(dict(rows=rows, downcast=down), f, indent=1, default=str)


if __name__ == "__main__":
    main()
