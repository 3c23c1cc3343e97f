"""Compare torch with the model after a step: its outcome (the error class it
raised, the tensor it returned), then the pool (storage, sharing, metadata,
values, versions, autograd flags and bases, gradients, documented strides),
each a check of its own; where they agree, the model takes torch's rounding."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from operator import attrgetter

import numpy as np

from conformance.check import close
from conformance.differential.observe import (
    RAISES,
    Observed,
    error_kind,
    observe_oracle,
    observe_torch,
)
from conformance.differential.run import Discrepancy, Run
from conformance.differential.tolerated import (
    accumulated_atol,
    cancelled_atol,
    divisors_on_path,
    feeding,
    grad_tolerance,
    overflow_excuses,
    parts_atol,
    value_tolerance,
)
from conformance.internal import suite_code
from oracle import OPS
from strategies.programs import Step


def compare_outcome(run, number, step, t_result, t_error, o_result, o_error):
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
            return _differs(number, i, o, t, name, message)
    return None


def _differs(number: int, i: int, o: Observed, t: Observed, name: str, message: str) -> Discrepancy:
    """t{i}'s `name` differs: the oracle's (`o`) and torch's (`t`), and `message`."""
    return Discrepancy(number, name, (i,), getattr(o, name), getattr(t, name), message)


@cache
def _reader(names: tuple[str, ...]) -> Callable[[Observed], tuple]:
    return attrgetter(*names) if len(names) > 1 else lambda seen: (getattr(seen, names[0]),)


def _observe(run: Run, scope: list[int] | None) -> tuple[list[Observed], list[Observed]]:
    """Both sides' observations: read afresh for `scope` (None: all), kept
    from the last step for the others."""
    reads = run.program.reads
    theirs = observe_torch(run.torch_pool, scope, run.resizes, reads)
    with suite_code("reading the reference model's tensors"):
        ours = observe_oracle(run.oracle_pool, scope, reads)
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


@dataclass
class _Seen:
    """Both sides' observations after a step, those before it, and which
    pool tensors to compare: `live` (the step's scope), `everyone` (all
    not retired), each with the tensors the step acted on first."""

    ours: list[Observed]
    theirs: list[Observed]
    before_o: list[Observed]
    before_t: list[Observed]
    live: list[int]
    everyone: list[int]


def compare_pool(
    run: Run,
    number: int,
    step: Step,
    skip_values: bool,
    scope: list[int] | None = None,
    exact_versions: bool = False,
) -> Discrepancy | None:
    """Compare the pool after `step`: the tensors of `scope` (None: all);
    with `exact_versions`, every version change must be the predicted one.
    Where they agree, the model takes torch's rounding (resync)."""
    seen = _observe_step(run, step, scope)
    for check in (_storage_moved, _sharing, _metadata):
        if (found := check(number, seen)) is not None:
            return found
    if (found := _values(run, number, step, seen, skip_values)) is not None:
        return found
    if (found := _versions(run, number, step, seen, exact_versions)) is not None:
        return found
    if (found := _flags_and_base(number, seen)) is not None:
        return found
    if (found := _grads(run, number, step, seen, skip_values)) is not None:
        return found
    if (found := _strides(run, number, seen)) is not None:
        return found
    resync(run, seen.ours, seen.theirs, seen.live)
    return None


def _observe_step(run: Run, step: Step, scope: list[int] | None) -> _Seen:
    """Observe both sides, keeping what was observed before (run.previous)."""
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
    return _Seen(ours, theirs, before_o, before_t, live, everyone)


def _storage_moved(number: int, seen: _Seen) -> Discrepancy | None:
    """A tensor keeps its memory unless the oracle says it moved (x.data = y)."""
    ours, theirs, before_o, before_t = seen.ours, seen.theirs, seen.before_o, seen.before_t
    for i in (i for i in seen.live if i < len(before_o)):
        moved_o = ours[i].storage != before_o[i].storage
        moved_t = theirs[i].storage != before_t[i].storage
        if moved_o != moved_t:
            return Discrepancy(
                number,
                "storage_moved",
                (i,),
                moved_o,
                moved_t,
                f"t{i} {'kept' if moved_o else 'changed'} its storage",
            )
    return None


def _sharing(number: int, seen: _Seen) -> Discrepancy | None:
    ours, theirs = seen.ours, seen.theirs
    sharing = seen.everyone if _sharing_differs(ours, theirs, seen.everyone) else []
    for a, i in enumerate(sharing):
        for j in sharing[a + 1 :]:
            shared_o = ours[i].storage == ours[j].storage
            shared_t = theirs[i].storage == theirs[j].storage
            if shared_o != shared_t:
                return Discrepancy(
                    number,
                    "sharing",
                    (i, j),
                    shared_o,
                    shared_t,
                    f"t{i} and t{j} {'share' if shared_t else 'do not share'} storage; "
                    f"expected {'shared' if shared_o else 'separate'} memory",
                )
    return None


def _metadata(number: int, seen: _Seen) -> Discrepancy | None:
    for i in seen.live:
        found = _attribute_differs(number, i, seen.ours[i], seen.theirs[i], _METADATA)
        if found is not None:
            return found
    return None


def _values(run: Run, number: int, step: Step, seen: _Seen, skip: bool) -> Discrepancy | None:
    for i in seen.live:
        o, t = seen.ours[i], seen.theirs[i]
        tolerated = value_tolerance(run, step, number, i, o.dtype)
        if step.op in ("autograd_grad", "grad_cg") and run.origins[i].step == number:
            fed = feeding(run, step)  # a gradient it returned: a .grad's tolerance
            on_path = [seen.ours[k] for k in fed if k < len(seen.ours)]
            divisors = divisors_on_path(run, step, fed, seen.ours)
            tolerated = grad_tolerance(o.dtype, on_path, divisors)
        if not skip and not close(t.values, o.values, o.dtype, tolerated):
            message = f"t{i} holds {t.values.tolist()!r}, expected {o.values.tolist()!r}"
            return _differs(number, i, o, t, "values", message)
    return None


def _versions(run: Run, number: int, step: Step, seen: _Seen, exact: bool) -> Discrepancy | None:
    before_o, before_t = seen.before_o, seen.before_t
    for i in seen.live:
        o, t = seen.ours[i], seen.theirs[i]
        if RAISES in (o.version, t.version):
            d_o, d_t = o.version, t.version  # no counter: only that must agree
        elif i < len(before_o) and RAISES not in (before_o[i].version, before_t[i].version):
            d_o, d_t = o.version - before_o[i].version, t.version - before_t[i].version
        else:
            d_o = d_t = 0
            if _adopts_version(run, step, t):
                # (updating the model: its aliases follow the counter)
                run.oracle_pool[i].counter.value = o.version = t.version
            elif step.op == "leaf" or o.version == t.version:
                pass
            elif not _version_ok(step, o.version, t.version):
                message = f"new t{i} is at version {t.version}, expected {o.version}"
                return _differs(number, i, o, t, "version", message)
        if not (d_o == d_t if exact else _version_ok(step, d_o, d_t)):
            message = f"t{i}'s version moved by {d_t}, expected {d_o}"
            return Discrepancy(number, "version", (i,), d_o, d_t, message)
    return None


def _adopts_version(run: Run, step: Step, t: Observed) -> bool:
    """Whether the model takes torch's version for a new tensor: some ops on
    inference tensors finish with an internal in-place step (version 1), so
    only results of ordinary tensors are checked."""
    from_inference = any(run.oracle_pool[k].inference for k in step.tensors)
    return from_inference and isinstance(t.version, int)


def _flags_and_base(number: int, seen: _Seen) -> Discrepancy | None:
    for i in seen.live:
        o, t = seen.ours[i], seen.theirs[i]
        if (found := _attribute_differs(number, i, o, t, _AUTOGRAD_FLAGS)) is not None:
            return found
        if (o.base is None) != (t.base is None) or (o.base not in (None, -1) and o.base != t.base):
            message = f"t{i}._base is {_base_name(t.base)}, expected {_base_name(o.base)}"
            return _differs(number, i, o, t, "base", message)
    return None


def _grads(run: Run, number: int, step: Step, seen: _Seen, skip: bool) -> Discrepancy | None:
    ours, theirs, before_o = seen.ours, seen.theirs, seen.before_o
    path: list[Observed] | None = None  # what the gradients were computed through
    divisors: list[np.ndarray] = []  # and what their formulas divide by
    for i in seen.live:
        o, t = ours[i], theirs[i]
        if o.grad is RAISES or t.grad is RAISES:
            if o.grad is not t.grad:
                message = f"reading t{i}.grad raised"
                return _differs(number, i, o, t, "grad", message)
            continue
        if (o.grad is None) != (t.grad is None):
            message = (
                f"t{i}.grad is {'None' if t.grad is None else 'set'}, expected "
                f"{'None' if o.grad is None else o.grad.tolist()}"
            )
            return _differs(number, i, o, t, "grad", message)
        if o.grad is None:
            continue
        if o.grad_meta != t.grad_meta:
            message = f"t{i}.grad is (shape, dtype, device) {t.grad_meta}, expected {o.grad_meta}"
            return _differs(number, i, o, t, "grad_meta", message)
        if path is None:
            fed = feeding(run, step)
            path = [ours[k] for k in fed if k < len(ours)]
            divisors = divisors_on_path(run, step, fed, ours)
        tolerated = grad_tolerance(o.dtype, path, divisors)
        tolerated = (tolerated[0], tolerated[1] + parts_atol(o.dtype, o.grad, path))
        if (cancelled := cancelled_atol(run, step, i, fed)) is not None:
            tolerated = (tolerated[0], tolerated[1] + cancelled)
        prior = before_o[i].grad if i < len(before_o) else None
        if (accumulated := accumulated_atol(prior, o.grad, o.dtype)) is not None:
            tolerated = (tolerated[0], tolerated[1] + accumulated)
        if (
            not skip
            and not close(t.grad, o.grad, o.dtype, tolerated)
            and not overflow_excuses(t.grad, o.grad, o.dtype, tolerated, path)
        ):
            message = f"t{i}.grad is {t.grad.tolist()!r}, expected {o.grad.tolist()!r}"
            return _differs(number, i, o, t, "grad", message)
    return None


def _strides(run: Run, number: int, seen: _Seen) -> Discrepancy | None:
    for i in seen.live:
        o, t = seen.ours[i], seen.theirs[i]
        documented = run.origins[i].strides_documented and i not in run.adopted_unknown_layout
        if documented and not _same_strides(o, t):
            message = f"t{i} has strides {t.strides}, expected {o.strides}"
            return _differs(number, i, o, t, "strides", message)
    return None


def resync(run: Run, ours: list[Observed], theirs: list[Observed], live: list[int]) -> None:
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


def _base_name(base: int | None) -> str:
    return "None" if base is None else ("a tensor outside the pool" if base < 0 else f"t{base}")


def _same_strides(o: Observed, t: Observed) -> bool:
    if math.prod(o.shape) == 0:
        return True
    return all(a == b for a, b, n in zip(o.strides, t.strides, o.shape, strict=False) if n > 1)
