"""Eager against compiled: the first difference a caller can observe, named
by the compile.* invariant it breaks.

Checked in this order, so that a difference is named by its cause rather
than by what follows from it: which call raises (and the error's class);
which tensors share memory, and at which offsets; the arguments' values and
geometry afterwards; the outputs' shapes, dtypes, values and documented
strides; the arguments' version counters; requires_grad, is_leaf and
grad_fn presence; every tensor's .grad.

A program with later calls (CompiledProgram.calls) is compared call by
call, each on its own fresh inputs. A difference at a later call is
compile.recompile where the function compiled afresh for that call's inputs
agrees with eager (the reuse of a cached graph, or a recompile, went wrong);
where it does not, it is no recompile's: `diverges` says so (`afresh`), and
the difference is the fresh program's own, named by its rule.

Values are compared exactly (`identical`: the same bits, NaNs in the same
places) for a backend that runs eager's own kernels (targets.SAME_KERNELS),
and within oracle.tolerances.compiled_tolerance for any other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from conformance.check import close
from conformance.compiled.program import CompiledProgram
from conformance.compiled.run import Outcome, Snapshot, Trace, execute
from conformance.compiled.targets import Target
from conformance.differential.observe import RAISES
from oracle.tolerances import compiled_tolerance

ERROR_CLASS_HOLDS = "compile.raises"
RECOMPILE = "compile.recompile"
UNDOCUMENTED = "unclassified"  # observe.error_kind's prefix for an error of no known class


@dataclass(frozen=True)
class Divergence:
    invariant: str
    where: str  # "call" or "step N"
    message: str
    tensors: tuple[int, ...] = ()
    call: int = 0  # the call it shows at: 0 the first, k the program's k-th later call
    # a later call's difference that its inputs alone, compiled afresh, show
    # too: the program to report is program.alone(call)
    afresh: bool = False


Agree = Callable[..., bool]  # (eager's values, compiled's, dtype, grad=False)


def compare(
    program: CompiledProgram,
    eager: Trace,
    compiled: Trace,
    exact: bool = False,
    bounds: Callable[[str], tuple[float, float]] = compiled_tolerance,
    values_undefined: bool = False,
) -> Divergence | None:
    """The first difference, in the module's order. Values bit for bit where
    `exact`, else within `bounds(dtype)`, (rtol, atol); not at all where
    `values_undefined` (shapes, dtypes and all else still)."""

    def agree(a: np.ndarray, b: np.ndarray, dtype: str, grad: bool = False) -> bool:
        if values_undefined:
            return np.shape(a) == np.shape(b)
        return identical(a, b) if exact else _within(a, b, dtype, bounds(dtype), grad)

    for number, (e, c) in enumerate(zip(eager.calls(), compiled.calls(), strict=True)):
        found = _call(program, number, e, c, agree)
        if found is None:
            continue
        if number == 0:
            return found
        call = program.calls[number - 1]
        graphs = compiled.later_graphs[number - 1]
        said = f"{graphs} new graph{'s' if graphs != 1 else ''}" if graphs else "no new graph"
        return replace(
            found,
            call=number,
            message=f"at call {number + 1} of {len(program.calls) + 1} ({call.describe()}; "
            f"Dynamo compiled {said} for it): [{found.invariant}] {found.message}",
        )
    return None


def _call(
    program: CompiledProgram, number: int, eager: list[Outcome], compiled: list[Outcome], agree
) -> Divergence | None:
    made = program.call_args(number)
    inputs = set(program.arg_tokens) | {s.out for s in made}
    for e, c in zip(eager, compiled, strict=False):
        found = _outcome(program, inputs, e, c, agree)
        if found is not None:
            return found
    if len(eager) != len(compiled):  # only after a difference in raising
        return Divergence(ERROR_CLASS_HOLDS, "call", "the compiled run stopped elsewhere")
    return None


def diverges(
    program: CompiledProgram, target: Target, values_undefined: bool = False
) -> Divergence | None:
    """Run the program eagerly and through `target`, and compare the two:
    bit for bit where the target runs eager's own kernels; not at all where
    `values_undefined` (the reference model found memory whose bits, read as
    another dtype, no run need reproduce: NaN payloads, kernels' last bits).
    A difference at a later call is compile.recompile where the function
    compiled afresh for that call's inputs agrees with eager; else it comes
    back `afresh`."""
    eager, compiled = execute(program, None), execute(program, target)
    exact, undefined = target.same_kernels, values_undefined
    found = compare(program, eager, compiled, exact=exact, values_undefined=undefined)
    if found is None or found.call == 0:
        return found
    alone = program.alone(found.call)
    fresh = compare(
        alone, execute(alone, None), execute(alone, target), exact, values_undefined=undefined
    )
    if fresh is not None:
        return replace(fresh, call=found.call, afresh=True)
    return replace(
        found,
        invariant=RECOMPILE,
        message=f"{found.message} (compiled afresh for these inputs, it agrees with eager)",
    )


def _same_raising(e: Outcome, c: Outcome) -> bool:
    """Whether the two raised alike. Where eager raises a documented error
    (one of check.py's classes) the compiled call must raise the same class;
    where eager's error is none of them (an op a dtype does not support, say:
    eager's NotImplementedError, Dynamo's TorchRuntimeError from the fake
    tensor's check), only that both raise is held (issue 11, docs/compile.md)."""
    if e.error == c.error:
        return True
    return e.error is not None and c.error is not None and e.error.startswith(UNDOCUMENTED)


def _outcome(
    program: CompiledProgram, inputs: set[int], e: Outcome, c: Outcome, agree: Agree
) -> Divergence | None:
    if not _same_raising(e, c):
        return Divergence(
            "compile.raises",
            e.where,
            f"at the {e.where.replace('step', 'eager step after it,')}: eager {_said(e)}; "
            f"compiled {_said(c)}",
        )
    if e.snapshot is None or c.snapshot is None:
        return None  # both raised alike: what an interrupted call leaves behind is not compared
    return _snapshots(program, inputs, e.where, e.snapshot, c.snapshot, agree)


def _said(o: Outcome) -> str:
    return f"raised {o.error} ({o.message})" if o.error else "did not raise"


def _snapshots(
    program: CompiledProgram, args: set[int], where: str, e: Snapshot, c: Snapshot, agree: Agree
) -> Divergence | None:
    """`args`: the call's inputs, and what they were made from."""
    views = {s.out for s in program.body if s.is_view} | args
    tokens = e.tokens
    E, C = e.seen, c.seen  # noqa: N806 - the two sides, as in the docstring
    at = "after the call" if where == "call" else f"after the eager {where} after the call"

    def found(invariant: str, message: str, *ts: int) -> Divergence:
        return Divergence(invariant, where, f"{at}: {message}", ts)

    if e.tokens != c.tokens:  # a gradient torch.autograd.grad gave on one side only
        only = sorted(set(e.tokens) ^ set(c.tokens))
        return found("compile.grad", f"t{only[0]} is None on one side only", *only)

    # memory: which tensors share storage, and where in it they start
    for a in range(len(tokens)):
        for b in range(a + 1, len(tokens)):
            shared_e = E[a].storage == E[b].storage
            shared_c = C[a].storage == C[b].storage
            if shared_e != shared_c:
                ta, tb = tokens[a], tokens[b]
                return found(
                    "compile.aliasing",
                    f"t{ta} and t{tb} {'share' if shared_c else 'do not share'} memory compiled; "
                    f"eager: {'shared' if shared_e else 'separate'}",
                    ta,
                    tb,
                )
    for k, token in enumerate(tokens):
        shares = any(E[k].storage == E[j].storage for j in range(len(tokens)) if j != k)
        if shares and e.offsets[k] != c.offsets[k]:
            return found(
                "compile.aliasing",
                f"t{token} starts at storage offset {c.offsets[k]} compiled, {e.offsets[k]} eager",
                token,
            )
    # the arguments: eager's mutations visible, no others
    for k, token in enumerate(tokens):
        if token not in args:
            continue
        name = _differs(E[k], C[k], ("shape", "dtype", "strides"), agree)
        if name is not None:
            said = (  # its dtype and shape: classes of this divergence depend on them
                f"argument t{token} ({E[k].dtype}{list(E[k].shape)}) holds "
                if name == "values"
                else f"argument t{token}'s {name} is "
            )
            return found("compile.input_mutation", said + _both(E[k], C[k], name), token)
    # the outputs
    for k, token in enumerate(tokens):
        if token in args:
            continue
        name = _differs(E[k], C[k], ("shape", "dtype", "device"), agree)
        if name is not None:
            said = f"t{token} holds " if name == "values" else f"t{token}.{name} is "
            return found("compile.outputs", said + _both(E[k], C[k], name), token)
        if token in views and not _same_strides(E[k], C[k]):
            return found(
                "compile.outputs",
                f"t{token} (a view) has strides {C[k].strides} compiled, {E[k].strides} eager",
                token,
            )
    # version counters: increased exactly where eager's increased
    for k, token in enumerate(tokens):
        if token not in e.versions_before:
            continue
        up_e = _increased(e.versions_before[token], E[k].version)
        up_c = _increased(c.versions_before[token], C[k].version)
        if up_e != up_c:
            return found(
                "compile.version",
                f"t{token}'s version counter {'rose' if up_c else 'stayed'} compiled "
                f"({c.versions_before[token]} -> {C[k].version}); eager's "
                f"{'rose' if up_e else 'stayed'} ({e.versions_before[token]} -> {E[k].version})",
                token,
            )
    for k, token in enumerate(tokens):
        for name in ("requires_grad", "is_leaf", "has_grad_fn"):
            if getattr(E[k], name) != getattr(C[k], name):
                return found(
                    "compile.autograd_flags",
                    f"t{token}.{name} is {getattr(C[k], name)} compiled, "
                    f"{getattr(E[k], name)} eager",
                    token,
                )
    for k, token in enumerate(tokens):
        ge, gc = E[k].grad, C[k].grad
        if (ge is None) != (gc is None) or (ge is RAISES) != (gc is RAISES):
            return found(
                "compile.grad",
                f"t{token}.grad is {_grad(gc)} compiled, {_grad(ge)} eager",
                token,
            )
        if ge is None or ge is RAISES:
            continue
        if E[k].grad_meta != C[k].grad_meta or not agree(ge, gc, E[k].grad_meta[1], grad=True):
            return found(
                "compile.grad",
                f"t{token}.grad is {_grad(gc)} compiled, {_grad(ge)} eager",
                token,
            )
    return None


def _differs(e, c, names: tuple[str, ...], agree: Agree) -> str | None:
    """The first of `names` whose attribute differs between eager's tensor `e`
    and compiled's `c`, else "values" where their values disagree, else None."""
    for name in names:
        if getattr(e, name) != getattr(c, name):
            return name
    return None if agree(e.values, c.values, e.dtype) else "values"


def _both(e, c, name: str) -> str:
    """Compiled's and eager's `name` (their values as lists), as a message ends."""
    if name == "values":
        return f"{c.values.tolist()!r} compiled, {e.values.tolist()!r} eager"
    return f"{getattr(c, name)} compiled, {getattr(e, name)} eager"


def _grad(g) -> str:
    if g is None or g is RAISES:
        return "None" if g is None else "unreadable"
    return repr(np.asarray(g).tolist())


def _increased(before, after) -> object:
    if before is None or after is None or RAISES in (before, after):
        return None  # no counter: only that must agree
    return after > before


def identical(a: np.ndarray, b: np.ndarray) -> bool:
    """The same values bit for bit, NaNs (whatever their payload) in the same
    places. Zeros of either sign are equal, as IEEE 754 and the repro script's
    == count them: a gradient that aot_eager sums in another order may be 0.0
    where eager's is -0.0 (ci profile, seed 0)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if np.iscomplexobj(a):
        return identical(a.real, b.real) and identical(a.imag, b.imag)
    return bool(np.array_equal(a, b, equal_nan=np.issubdtype(a.dtype, np.floating)))


def _within(
    a: np.ndarray, b: np.ndarray, dtype: str, bounds: tuple[float, float], grad: bool = False
) -> bool:
    if a.shape != b.shape:
        return False
    rtol, atol = bounds
    if grad:  # fused backward kernels round differently (docs/compile.md)
        rtol, atol = 4 * rtol, 4 * atol
    return close(b, a, dtype, (rtol, atol))


def _same_strides(e, c) -> bool:
    if int(np.prod(e.shape)) == 0:
        return True
    return all(a == b for a, b, n in zip(e.strides, c.strides, e.shape, strict=False) if n > 1)
