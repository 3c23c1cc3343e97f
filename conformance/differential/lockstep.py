"""Run a program on torch and on the oracle, step by step, and compare.

After every step, for every tensor in the pool: values (within the dtype's
tolerance), shape, dtype, device, strides where torch documents them,
requires_grad, is_leaf, grad_fn, .grad, the version counter (equal, or
increased where torch may bump more than once) and the storage identity;
for every pair, whether they share storage. A step raises in torch if and
only if the oracle predicts an error of the same class.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cache
from operator import attrgetter

import numpy as np
import torch

from conformance import build, watch
from conformance.check import close, dense
from conformance.differential import grad_argument, write_checks
from conformance.differential.modes import oracle_mode, torch_mode
from conformance.differential.observe import (
    RAISES,
    Observed,
    error_kind,
    observe_oracle,
    observe_torch,
    storages_oracle,
    storages_torch,
)
from conformance.differential.torch_calls import compiled
from conformance.internal import suite_code
from oracle import OPS, Engine, OracleError, OTensor, tolerance
from oracle.ops import OpSpec
from oracle.tolerances import EPS, part_atol, summed_atol
from strategies.dtypes import LARGEST_FINITE
from strategies.programs import Leaf, Program, Step
from strategies.tensors import leaf_tensor

BACKWARD_OPS = ("backward", "backward_g", "autograd_grad", "grad_cg")
# Ops after which torch documents the result's strides.
STRIDED_ORIGINS = ("leaf", "clone")


def retired_by(step: Step) -> set[int]:
    """Tensors a step hands over to torch for good.

    A tensor assigned to x.grad is x's .grad from then on: backward
    accumulates into it in place, as documented. autograd.grad's gradient
    may come back as its result.

    The gradient handed to backward stays the program's: it is read, reused
    and written like any other tensor, so that torch's AccumulateGrad taking
    it for a leaf's .grad (pytorch/pytorch#34082: later writes to it change
    .grad, a later backward writes it) is drawn, not stepped around.
    """
    if step.op in ("autograd_grad", "grad_cg"):  # (its gradient may come back as the result)
        return {step.tensors[2]}
    return {step.tensors[1]} if step.op == "set_grad" else set()


@dataclass
class Discrepancy:
    step: int  # index of the step after which torch and the oracle differ
    kind: str  # raise, identity, storage_moved, sharing, values, shape, dtype, strides, ...
    tensors: tuple[int, ...]  # pool indices involved
    expected: object
    actual: object
    message: str


@dataclass
class Origin:
    """How a pool tensor came to be: the step, its op and its tensor operands."""

    step: int
    op: str
    parents: tuple[int, ...]
    strides_documented: bool = False


@dataclass
class Run:
    program: Program
    torch_pool: list[torch.Tensor] = field(default_factory=list)
    oracle_pool: list = field(default_factory=list)
    origins: list[Origin] = field(default_factory=list)
    engine: Engine = field(default_factory=lambda: Engine(build.ORACLE_RELEASE))
    retired: set[int] = field(default_factory=set)
    # steps that wrote through a view in grad mode but left the base's
    # grad_fn as it was: torch must rebase the base's history onto the write
    unrecorded_view_writes: list[int] = field(default_factory=list)
    steps_checked: int = 0
    resizes: bool = False  # a step may resize storage: read torch's tensors keeping it resizable
    # (oracle, torch) observations after the last step compared, and before it
    observed: tuple[list[Observed], list[Observed]] = ([], [])
    previous: tuple[list[Observed], list[Observed]] = ([], [])
    # pool index of each gradient handed to backward -> the storages it had then
    # (grad_argument: a later set_ moves it, while a leaf's .grad keeps that memory)
    handed: dict[int, set[int]] = field(default_factory=dict)


def _torch_step(run: Run, step: Step) -> tuple[object, BaseException | None]:
    if step.op == "leaf":
        leaf = step.leaf
        # inference_mode(False) is a no-op outside inference mode with grad mode
        # on, and entering it costs more than making the tensor
        switch = leaf.inference or torch.is_inference_mode_enabled() or not torch.is_grad_enabled()
        with torch.inference_mode(leaf.inference) if switch else nullcontext():
            return _made(leaf), None
    args = [run.torch_pool[i] for i in step.tensors] + list(step.params)
    try:
        if step.mode:  # enable_grad, set_grad_enabled, inference_mode (modes.py)
            with torch_mode(step.mode, step.no_grad):
                return compiled(step.op)(*args), None
        if step.no_grad and torch.is_grad_enabled():  # else grad mode stays as it is
            with torch.set_grad_enabled(False):
                return compiled(step.op)(*args), None
        return compiled(step.op)(*args), None
    except Exception as error:  # noqa: BLE001 - every torch error is an outcome to compare
        if watch.out_of_memory(error):  # not an outcome a rule speaks of: the build gave up
            raise watch.ExampleCrashed(f"torch ran out of memory: {error}") from error
        return None, error


def _made(leaf: Leaf) -> torch.Tensor:
    # the tensor leaf.source() spells and the oracle's leaf models: contiguous
    # strides, an empty one's included (torch.tensor of an empty NumPy array
    # keeps its zero strides, which view_as_complex refuses)
    return leaf_tensor(leaf.values, leaf.dtype, leaf.device, leaf.requires_grad)


def _view_write_base(run: Run, step: Step) -> tuple[torch.Tensor | None, object]:
    """For an in-place step on a view whose base requires grad, in grad mode:
    the base and its grad_fn now (held, so that identity means the same node)."""
    if step.op == "leaf" or not OPS[step.op].inplace or step.no_grad:
        return None, None
    if not torch.is_grad_enabled():
        return None, None
    base = run.torch_pool[step.tensors[0]]._base
    if base is None or not base.requires_grad or base.is_leaf:
        return None, None
    return base, base.grad_fn


def _oracle_step(run: Run, step: Step) -> tuple[object, OracleError | None]:
    # The model's own OracleError is its prediction that torch refuses the
    # step; anything else it raises is the suite's bug.
    with suite_code(f"running the reference model's {step.op}"):
        return _oracle_outcome(run, step)


def _oracle_outcome(run: Run, step: Step) -> tuple[object, OracleError | None]:
    engine = run.engine
    try:
        if step.op == "leaf":
            leaf = step.leaf
            made = engine.leaf(
                leaf.values, leaf.dtype, leaf.requires_grad, leaf.device, leaf.inference
            )
            return made, None
        tensors = [run.oracle_pool[i] for i in step.tensors]
        if step.no_grad or step.mode:
            with oracle_mode(engine, step):
                return engine.call(step.op, tensors, step.params), None
        return engine.call(step.op, tensors, step.params), None
    except OracleError as error:
        return None, error


def execute(program: Program, exhaustive: bool = False) -> tuple[Run, Discrepancy | None]:
    """Run `program` on torch and the oracle; return the first discrepancy.

    After each step, the tensors the step can have changed are read and
    compared: its operands and result, whatever shares storage with them on
    either side, and every tensor after a backward. After the last step,
    every tensor is. Reading every tensor after every step made chains twice
    as slow, for the same verdicts: when anything differs, the program runs
    again with every tensor compared after every step (`exhaustive`), and the
    first discrepancy of that run is the one returned, so that what is
    reported (the step, the tensors, the rule) never depends on the shortcut.
    """
    run, found = _execute(program, exhaustive)
    if found is None or exhaustive:
        return run, found
    return _execute(program, exhaustive=True)


def _execute(program: Program, exhaustive: bool) -> tuple[Run, Discrepancy | None]:
    run = Run(program, resizes=write_checks.resizes(program))
    partial = False  # the last comparison left some tensors unread
    for number, step in enumerate(program.steps):
        base, before = _view_write_base(run, step)
        watch.note(step=number)  # a crash or hang in this step leaves its number
        with write_checks.recording(run, step):  # out=: the resize warning
            t_result, t_error = _torch_step(run, step)
        if step.op == "backward_g":
            grad_argument.note_handed(run, step.tensors[1])
        if t_error is not None and missing_kernel(run, step, t_error) is not None:
            # not in this build: the step is skipped (and counted), the chain
            # ends, and nothing after it is compared (torch may have run part
            # of it: a backward that accumulated some gradients first)
            partial = False
            break
        if base is not None and t_error is None and base.grad_fn is before:
            run.unrecorded_view_writes.append(number)
        o_result, o_error = _oracle_step(run, step)
        refusable = run.engine.may_refuse
        if refusable is not None and t_error is not None:
            # a refusal torch may make before anything else: either outcome is
            # allowed (the model's own, an error it raises later, included), and
            # what follows differs
            if error_kind(t_error) == refusable.name:
                break
        found = _compare_outcome(run, number, step, t_result, t_error, o_result, o_error)
        if found is None and (warned := write_checks.warning_differs(run, step, o_error)):
            found = Discrepancy(number, "warning", step.tensors[:1], *warned)
        if found is not None:
            return run, found
        if isinstance(o_result, OTensor) and all(o_result is not t for t in run.oracle_pool):
            run.torch_pool.append(t_result)
            run.oracle_pool.append(o_result)
            run.origins.append(
                Origin(number, step.op, step.tensors, _strides_documented(run, step))
            )
        run.retired |= retired_by(step)
        undefined = run.engine.undefined
        scope = None if exhaustive else _scope(run, step)
        partial = scope is not None
        found = _compare_pool(run, number, step, bool(undefined), scope)
        run.steps_checked += 1
        if found is not None:
            return run, found
        if undefined or (o_error is not None and step.op in BACKWARD_OPS):
            break  # the rest would depend on values or state torch leaves undefined
    if partial:
        # every tensor, each version change exact: a tensor left out of the
        # last steps' reads may have moved during any of them
        undefined = bool(run.engine.undefined)
        return run, _compare_pool(run, number, step, undefined, None, exact_versions=True)
    return run, None


def _scope(run: Run, step: Step) -> list[int] | None:
    """The pool tensors `step` can have changed, or None for all of them."""
    seen = len(run.observed[0])
    if step.op in BACKWARD_OPS or not seen:
        return None  # gradients land anywhere
    count = len(run.oracle_pool)
    touched = {i for i in step.tensors if i < count} | set(range(seen, count))
    if count:
        touched.add(count - 1)
    ours = storages_oracle(run.oracle_pool)
    theirs = storages_torch(run.torch_pool)
    # a version counter can outlive its storage's sharing (t1 = t0.detach();
    # t0.data = t2: t0's writes still move t1's version)
    counters = [id(t.counter) for t in run.oracle_pool]
    shared_o = {ours[i] for i in touched}
    shared_t = {theirs[i] for i in touched}
    shared_c = {counters[i] for i in touched}
    return [
        i
        for i in range(count)
        if i in touched or ours[i] in shared_o or theirs[i] in shared_t or counters[i] in shared_c
    ]


def _operands(run: Run, tensors: tuple[int, ...]) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(run.oracle_pool[i].shape), run.oracle_pool[i].dtype) for i in tensors]


def missing_kernel(run: Run, step: Step, error: BaseException) -> build.MissingKernel | None:
    """The kernel this build lacks that made `step` raise `error`, when a
    narrow probe confirms it (conformance.build), counted; None otherwise. A
    backward step is blamed on an op of its graph whose backward is missing."""
    if step.op == "leaf" or not build.is_missing_kernel(error):
        return None
    device = str(run.torch_pool[step.tensors[0]].device) if step.tensors else "cpu"
    if step.op not in BACKWARD_OPS:
        suspects = [(step.op, step.tensors, step.params, False)]
    else:
        suspects = [
            (o.op, o.parents, run.program.steps[o.step].params, True)
            for o in (run.origins[k] for k in sorted(feeding(run, step)))
            if o.op != "leaf"
        ]
    for op, tensors, params, backward in suspects:
        operands = _operands(run, tensors)
        found = build.lacks(op, compiled(op), operands, device, params, backward)
        if found is not None:
            return found
    return None


def _compare_outcome(run, number, step, t_result, t_error, o_result, o_error):
    expected = None if o_error is None else o_error.kind.name
    actual = None if t_error is None else error_kind(t_error)
    if expected != actual:
        detail = f"torch raised {actual}: {t_error}" if t_error else "torch did not raise"
        return Discrepancy(
            number,
            "raise",
            step.tensors,
            expected,
            actual,
            f"expected {expected or 'no error'}; {detail}",
        )
    returns_operand = step.tensors and o_result is run.oracle_pool[step.tensors[0]]
    if o_error is None and returns_operand:
        if t_result is not run.torch_pool[step.tensors[0]]:
            return Discrepancy(
                number,
                "identity",
                step.tensors[:1],
                "self",
                "another tensor",
                f"{step.op} did not return the tensor it wrote",
            )
    return None


def _version_ok(step: Step, expected_delta, actual_delta) -> bool:
    if RAISES in (expected_delta, actual_delta):  # inference tensors have no counter
        return expected_delta == actual_delta
    if expected_delta == 0 or step.op == "leaf":
        return actual_delta == expected_delta
    exact = OPS[step.op].exact_bump
    return actual_delta == expected_delta if exact else actual_delta >= expected_delta


_METADATA = ("shape", "dtype", "device")
_AUTOGRAD_FLAGS = ("requires_grad", "is_leaf", "has_grad_fn")


def _attribute_differs(
    number: int, i: int, o: Observed, t: Observed, names: tuple[str, ...]
) -> Discrepancy | None:
    """The first of `names` on which torch's t{i} differs from the oracle's."""
    read = _reader(names)
    if read(o) == read(t):  # (one comparison of tuples: they mostly agree)
        return None
    for name in names:
        expected, actual = getattr(o, name), getattr(t, name)
        if expected != actual:
            message = f"t{i}.{name} is {actual}, expected {expected}"
            return Discrepancy(number, name, (i,), expected, actual, message)
    return None


@cache
def _reader(names: tuple[str, ...]) -> Callable[[Observed], tuple]:
    return attrgetter(*names) if len(names) > 1 else lambda seen: (getattr(seen, names[0]),)


def _observe(run: Run, scope: list[int] | None) -> tuple[list[Observed], list[Observed]]:
    """Both sides' observations: read afresh for `scope` (None: all), kept
    from the last step for the others."""
    theirs = observe_torch(run.torch_pool, scope, run.resizes)
    with suite_code("reading the reference model's tensors"):
        ours = observe_oracle(run.oracle_pool, scope)
    if scope is None:
        return ours, theirs
    kept_o, kept_t = list(run.observed[0]), list(run.observed[1])
    for i, o, t in zip(scope, ours, theirs, strict=True):
        if i < len(kept_o):
            kept_o[i], kept_t[i] = o, t
        else:  # new tensors come last, in order
            kept_o.append(o)
            kept_t.append(t)
    return kept_o, kept_t


def _sharing_differs(ours: list[Observed], theirs: list[Observed], live: list[int]) -> bool:
    """Whether the two sides group `live` into storages differently."""
    first_o: dict[int, int] = {}
    first_t: dict[int, int] = {}
    return any(
        first_o.setdefault(ours[i].storage, i) != first_t.setdefault(theirs[i].storage, i)
        for i in live
    )


def _compare_pool(
    run: Run,
    number: int,
    step: Step,
    skip_values: bool,
    scope: list[int] | None = None,
    exact_versions: bool = False,
) -> Discrepancy | None:
    """Compare the pool after `step`: the tensors of `scope` (None: all);
    with `exact_versions`, every version change must be the predicted one."""
    ours, theirs = _observe(run, scope)
    run.previous = run.observed
    run.observed = (ours, theirs)
    before_o, before_t = run.previous
    everyone = [i for i in range(len(ours)) if i not in run.retired]
    live = everyone if scope is None else [i for i in scope if i not in run.retired]
    # the tensors the step acted on first: a discrepancy is reported on them
    # rather than on an alias that shows it too
    acted = [i for i in (*step.tensors[:1], len(ours) - 1) if i in live]
    live = list(dict.fromkeys(acted + live))
    everyone = list(dict.fromkeys(acted + everyone))

    def found(kind, tensors, expected, actual, message):
        return Discrepancy(number, kind, tuple(tensors), expected, actual, message)

    # storage: a tensor keeps its memory unless the oracle says it moved (x.data = y)
    for i in (i for i in live if i < len(before_o)):
        moved_o = ours[i].storage != before_o[i].storage
        moved_t = theirs[i].storage != before_t[i].storage
        if moved_o != moved_t:
            return found(
                "storage_moved",
                [i],
                moved_o,
                moved_t,
                f"t{i} {'kept' if moved_o else 'changed'} its storage",
            )
    sharing = everyone if _sharing_differs(ours, theirs, everyone) else []
    for a, i in enumerate(sharing):
        for j in sharing[a + 1 :]:
            shared_o = ours[i].storage == ours[j].storage
            shared_t = theirs[i].storage == theirs[j].storage
            if shared_o != shared_t:
                return found(
                    "sharing",
                    [i, j],
                    shared_o,
                    shared_t,
                    f"t{i} and t{j} {'share' if shared_t else 'do not share'} storage; "
                    f"expected {'shared' if shared_o else 'separate'} memory",
                )
    for i in live:
        if (d := _attribute_differs(number, i, ours[i], theirs[i], _METADATA)) is not None:
            return d
    for i in live:
        o, t = ours[i], theirs[i]
        tolerated = _value_tolerance(run, step, number, i, o.dtype)
        if step.op in ("autograd_grad", "grad_cg") and run.origins[i].step == number:
            fed = feeding(run, step)  # a gradient it returned: a .grad's tolerance
            on_path = [ours[k] for k in fed if k < len(ours)]
            tolerated = grad_tolerance(o.dtype, on_path, divisors_on_path(run, step, fed, ours))
        if not skip_values and not close(t.values, o.values, o.dtype, tolerated):
            return found(
                "values",
                [i],
                o.values,
                t.values,
                f"t{i} holds {t.values.tolist()!r}, expected {o.values.tolist()!r}",
            )
    for i in live:
        o, t = ours[i], theirs[i]
        if RAISES in (o.version, t.version):
            d_o, d_t = o.version, t.version  # no counter: only that must agree
        elif i < len(before_o) and RAISES not in (before_o[i].version, before_t[i].version):
            d_o, d_t = o.version - before_o[i].version, t.version - before_t[i].version
        else:
            d_o = d_t = 0
            # some ops on inference tensors finish with an internal in-place
            # step (version 1): only results of ordinary tensors are checked
            from_inference = any(run.oracle_pool[k].inference for k in step.tensors)
            if from_inference and isinstance(t.version, int):
                run.oracle_pool[i].counter.value = o.version = t.version  # aliases follow
            elif step.op == "leaf" or o.version == t.version:
                pass
            elif not _version_ok(step, o.version, t.version):
                return found(
                    "version",
                    [i],
                    o.version,
                    t.version,
                    f"new t{i} is at version {t.version}, expected {o.version}",
                )
        if not (d_o == d_t if exact_versions else _version_ok(step, d_o, d_t)):
            return found("version", [i], d_o, d_t, f"t{i}'s version moved by {d_t}, expected {d_o}")
    for i in live:
        o, t = ours[i], theirs[i]
        if (d := _attribute_differs(number, i, o, t, _AUTOGRAD_FLAGS)) is not None:
            return d
        if (o.base is None) != (t.base is None) or (o.base not in (None, -1) and o.base != t.base):
            return found(
                "base",
                [i],
                o.base,
                t.base,
                f"t{i}._base is {_base_name(t.base)}, expected {_base_name(o.base)}",
            )
    path: list[Observed] | None = None  # what the gradients were computed through
    divisors: list[np.ndarray] = []  # and what their formulas divide by
    for i in live:
        o, t = ours[i], theirs[i]
        if o.grad is RAISES or t.grad is RAISES:
            if o.grad is not t.grad:
                return found("grad", [i], o.grad, t.grad, f"reading t{i}.grad raised")
            continue
        if (o.grad is None) != (t.grad is None):
            return found(
                "grad",
                [i],
                o.grad,
                t.grad,
                f"t{i}.grad is {'None' if t.grad is None else 'set'}, expected "
                f"{'None' if o.grad is None else o.grad.tolist()}",
            )
        if o.grad is None:
            continue
        if o.grad_meta != t.grad_meta:
            return found(
                "grad_meta",
                [i],
                o.grad_meta,
                t.grad_meta,
                f"t{i}.grad is (shape, dtype, device) {t.grad_meta}, expected {o.grad_meta}",
            )
        if path is None:
            fed = feeding(run, step)
            path = [ours[k] for k in fed if k < len(ours)]
            divisors = divisors_on_path(run, step, fed, ours)
        tolerated = grad_tolerance(o.dtype, path, divisors)
        if (cancelled := cancelled_atol(run, step, i, fed)) is not None:
            tolerated = (tolerated[0], tolerated[1] + cancelled)
        prior = before_o[i].grad if i < len(before_o) else None
        if isinstance(prior, np.ndarray) and prior.shape == o.grad.shape and o.dtype in _UNIT:
            # accumulating adds the new gradient to the old: where they cancel
            # (backward with g, then with -g), a few units of |old .grad| are left
            old = np.where(np.isfinite(prior), np.abs(prior), 0.0)
            tolerated = (tolerated[0], tolerated[1] + 8 * _UNIT[o.dtype] * old)
        if (
            not skip_values
            and not close(t.grad, o.grad, o.dtype, tolerated)
            and not _overflow_excuses(t.grad, o.grad, o.dtype, tolerated, path)
        ):
            return found(
                "grad",
                [i],
                o.grad,
                t.grad,
                f"t{i}.grad is {t.grad.tolist()!r}, expected {o.grad.tolist()!r}",
            )
    for i in live:
        o, t = ours[i], theirs[i]
        if run.origins[i].strides_documented and not _same_strides(o, t):
            return found(
                "strides",
                [i],
                o.strides,
                t.strides,
                f"t{i} has strides {t.strides}, expected {o.strides}",
            )
    _resync(run, ours, theirs, live)
    return None


def _value_tolerance(run: Run, step: Step, number: int, i: int, dtype: str) -> tuple:
    """(rtol, atol) for pool tensor i's values after step `number`
    (oracle.tolerances): a result cast into another dtype takes the coarser
    tolerance of the two, in every tensor of its memory; this step's sum of
    terms, and a float part of complex memory, an absolute part besides."""
    tensor = run.oracle_pool[i]
    # an out= cast written through a view lands in its base too
    computed = {t.computed_in for t in run.oracle_pool if t.storage is tensor.storage}
    rtol, atol = max([tolerance(dtype), *(tolerance(c) for c in computed if c)])
    spec = OPS.get(step.op)
    if spec is not None and spec.sums and _summed_into(run, spec, step, number, i):
        # (an in-place sum's self is read after the write: at most twice its terms)
        operands = [np.abs(run.oracle_pool[k].values()) for k in step.tensors[: spec.arity]]
        with suite_code(f"the magnitude of {step.op}'s terms"):
            terms = np.abs(spec.fwd(operands, tuple(step.params), dtype))
        finite = terms[np.isfinite(terms)] if np.ndim(terms) else np.array([terms])
        atol += summed_atol(dtype, float(finite.max())) if finite.size else 0.0
    if dtype in PART_OF and _read_as_complex(run, tensor):
        buf = tensor.storage.buf
        parts = np.abs(buf[np.isfinite(buf)])
        # (|z| is at most twice its largest part; a complex buffer gives |z| itself)
        largest = float(parts.max()) * (1 if buf.dtype.kind == "c" else 2) if parts.size else 0.0
        atol += part_atol(PART_OF[dtype], largest)
    return rtol, atol


def _summed_into(run: Run, spec: OpSpec, step: Step, number: int, i: int) -> bool:
    """Whether pool tensor i holds this step's sums: its result, or for an
    in-place sum (index_add_), any tensor of the memory it wrote."""
    if spec.inplace:
        return run.oracle_pool[i].storage is run.oracle_pool[step.tensors[0]].storage
    return run.origins[i].step == number


def _read_as_complex(run: Run, tensor: OTensor) -> bool:
    """Whether the tensor's memory holds complex numbers (x.real of a complex
    x) or is read as such (x of torch.view_as_complex(x)): a complex op may
    have written its parts."""
    storage = tensor.storage
    if storage.buf.dtype.kind == "c":
        return True
    return any(t.storage is storage and t.dtype in COMPLEX for t in run.oracle_pool)


# The complex dtype whose parts a float dtype is.
PART_OF = {"float32": "complex64", "float64": "complex128"}
COMPLEX = frozenset(PART_OF.values())


def _resync(run: Run, ours: list[Observed], theirs: list[Observed], live: list[int]) -> None:
    """Take torch's floating values (and gradients) where they are within
    tolerance but not equal: rounding then never drifts over many steps."""
    for i in live:
        o, t = ours[i], theirs[i]
        if o.values.dtype.kind in "fc" and (
            not _equal_nan(o.values, t.values) or _zero_signs_differ(o.values, t.values)
        ):  # (x.view(dtype) reads the sign of a zero)
            run.oracle_pool[i].overwrite(t.values)
        if o.grad is not None and t.grad is not None and o.grad.dtype.kind in "fc":
            if not _equal_nan(o.grad, t.grad):
                run.oracle_pool[i].grad = np.array(t.grad, dtype=o.grad.dtype)


def _zero_signs_differ(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values with a zero of another sign somewhere."""
    if a.dtype.kind == "c":
        a, b = np.stack([a.real, a.imag]), np.stack([b.real, b.imag])
    zero = a == 0
    return bool(zero.any()) and not np.array_equal(np.signbit(a[zero]), np.signbit(b[zero]))


def _equal_nan(a: np.ndarray, b: np.ndarray) -> bool:
    """np.array_equal(a, b, equal_nan=True), a quarter of its cost when the
    arrays are equal (as they mostly are): equal everywhere means no nan."""
    if a.shape == b.shape and bool((a == b).all()):
        return True
    return np.array_equal(a, b, equal_nan=True)


# Machine epsilon (twice the unit roundoff) per floating dtype. Gradient
# formulas fuse several operations that torch rounds one by one in the dtypes
# along the path (float16 backward runs in float16), where the model rounds
# once: a gradient that cancels (x * c / x) keeps a residue of a few units of
# the size of its terms, not of its result, and a float64 leaf fed through a
# bfloat16 copy carries bfloat16 errors.
_UNIT = EPS  # (2**(1 - precision): twice the unit roundoff)
_SCALE_CAP = 1e3  # beyond that, overflowing chains: their gradients are compared at the cap


def feeding(run: Run, step: Step) -> set[int]:
    """The pool tensors a backward from `step`'s first operand computes through:
    its origins' operands, and whatever was written into them in place."""
    if step.op not in BACKWARD_OPS:
        return set()
    writes: dict[int, list[int]] = {}
    for earlier in run.program.steps:
        if earlier is step:
            break
        if earlier.op != "leaf" and (OPS[earlier.op].inplace or earlier.op == "set_data"):
            writes.setdefault(earlier.tensors[0], []).extend(earlier.tensors[1:])
    seen, stack = set(), [step.tensors[0]]
    while stack:
        j = stack.pop()
        if j in seen or j >= len(run.origins):
            continue
        seen.add(j)
        stack.extend(run.origins[j].parents)
        stack.extend(writes.get(j, ()))
    return seen


def grad_tolerance(
    dtype: str, pool: list[Observed], divisors: Iterable[np.ndarray] = ()
) -> tuple[float, float]:
    """(rtol, atol) for a gradient: the tolerance of the least precise floating
    dtype on its path (`pool`: the tensors it was computed through), with an
    absolute part of a few units of the size of the gradient's terms.

    A term is a product of values and gradients, bounded by the square of
    the largest magnitude on the path; where the path divides (`divisors`:
    what div, log, sqrt and pow with an exponent below 1 divide by), also by
    the reciprocal of the smallest nonzero divisor. `x / x` at x = 0.0067 in
    float32 has terms of 558 that cancel to a residue of 6e-5, not to 0."""
    floating = [o.dtype for o in pool if o.dtype in _UNIT] + [dtype]
    coarsest = max((d for d in floating if d in _UNIT), key=lambda d: _UNIT[d], default=dtype)
    rtol, atol = tolerance(coarsest if coarsest in _UNIT else dtype)
    if coarsest not in _UNIT:
        return rtol, atol
    largest = max(1.0, _largest_magnitude(pool))
    smallest = 1.0
    for divisor in divisors:
        magnitude = np.abs(divisor[np.isfinite(divisor)])
        nonzero = magnitude[magnitude > 0]
        if nonzero.size:
            smallest = min(smallest, float(nonzero.min()))
    terms = min(largest * largest / smallest, _SCALE_CAP * _SCALE_CAP)
    return rtol, atol + 8 * _UNIT[coarsest] * terms


def cancelled_atol(run: Run, step: Step, i: int, fed: set[int]) -> np.ndarray | None:
    """Per element, the absolute part for t{i}'s gradient that the backward
    formulas which cancel (OpSpec.grad_terms: tanh's 1 - r * r) add where
    they read t{i} itself: a few units of the terms they summed, which the
    oracle recorded. grad_tolerance's bound is one number for the whole
    path, capped where the path's magnitudes overflow; theirs is taken
    where each element's terms are."""
    shape = run.oracle_pool[i].shape
    atol: np.ndarray | None = None
    for k in fed:
        number, steps = run.origins[k].step, run.program.steps
        earlier = steps[number] if 0 <= number < len(steps) else None
        if earlier is None or earlier is step or earlier.tensors[:1] != (i,):
            continue
        spec = OPS.get(earlier.op)
        node = run.oracle_pool[k]._fn
        if spec is None or spec.grad_terms is None or spec.inplace or node is None:
            continue
        terms = getattr(node, "terms", None)
        if node.name != earlier.op or terms is None or terms.shape != shape:
            continue  # (rebased by a later write, or not run by this backward)
        unit = _UNIT.get(run.oracle_pool[k].dtype, 0.0)
        added = 8 * unit * np.where(np.isfinite(terms), terms, 0.0)
        atol = added if atol is None else atol + added
    return atol


def _largest_magnitude(pool: list[Observed]) -> float:
    """The largest finite magnitude among the floating values and gradients of `pool`."""
    largest = 0.0
    for seen in pool:
        for array in (seen.values, seen.grad):
            if array is not None and array.size and array.dtype.kind in "fc":
                finite = np.abs(array[np.isfinite(array)])
                if finite.size:
                    largest = max(largest, float(finite.max()))
    return largest


def _overflow_excuses(actual, expected, dtype: str, tolerated, path: list[Observed]) -> bool:
    """Whether torch's gradient differs only where it is not finite, on a path
    whose terms can overflow its narrowest dtype. torch computes float16
    gradients in float16: 3 * x**2 * g at x = 421.875 is inf there, and nan
    where g is 0, while the model, computing in float64, rounds 0 once."""
    floating = [o.dtype for o in path if o.dtype in LARGEST_FINITE] + [dtype]
    narrowest = min((LARGEST_FINITE[d] for d in floating if d in LARGEST_FINITE), default=None)
    if narrowest is None:
        return False
    largest = _largest_magnitude(path)
    if largest * largest <= narrowest:
        return False
    finite = np.isfinite(actual)
    rtol, atol = tolerated
    if np.ndim(atol):
        atol = np.broadcast_to(atol, np.shape(actual))[finite]
    return not finite.all() and close(actual[finite], expected[finite], dtype, (rtol, atol))


def divisors_on_path(run: Run, step: Step, fed: set[int], ours: list[Observed]) -> list:
    """What the gradient formulas on the path divide by: for each step
    before `step` that reads a tensor of `fed` and divides in its backward
    (div: by the divisor; log: by x; sqrt: by sqrt(x); pow(x, p < 1): by x)."""
    found: list[np.ndarray] = []
    for earlier in run.program.steps:
        if earlier is step:
            break
        if earlier.op not in _QUOTIENTS or not fed.intersection(earlier.tensors):
            continue
        operands = [ours[i].values for i in earlier.tensors if i < len(ours)]
        if earlier.op in ("div", "div_") and len(operands) == 2:
            found.append(operands[1])
        elif earlier.op in ("div_s", "div_s_"):
            found.append(np.asarray([earlier.params[0]], dtype=np.complex128))
        elif earlier.op == "sqrt" and operands:
            found.append(np.sqrt(np.abs(operands[0])))
        elif earlier.op == "log" and operands:
            found.append(operands[0])
        elif earlier.op == "pow_s" and operands and np.real(earlier.params[0]) < 1:
            found.append(operands[0])
    return found


_QUOTIENTS = ("div", "div_", "div_s", "div_s_", "sqrt", "log", "pow_s")


def _base_name(base: int | None) -> str:
    return "None" if base is None else ("a tensor outside the pool" if base < 0 else f"t{base}")


def _strides_documented(run: Run, step: Step) -> bool:
    """Leaves and views have documented strides; a clone keeps a dense source's."""
    if step.op == "leaf":
        return True
    if OPS[step.op].view and step.op != "reshape":
        return True
    if step.op == "clone":
        source = run.oracle_pool[step.tensors[0]]
        return dense(source.shape, source.strides)
    return False


def _same_strides(o: Observed, t: Observed) -> bool:
    if math.prod(o.shape) == 0:
        return True
    return all(a == b for a, b, n in zip(o.strides, t.strides, o.shape, strict=False) if n > 1)
