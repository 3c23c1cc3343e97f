"""The sweep: every selected operator called with drawn arguments under the
recorder, every call it and its decomposition make checked against the
callee's own schema, and one verdict per operator.

An operator is `held` when at least one call of it was checked and none
broke a rule; `violated` when a call broke one (`xfailed` when a known
failure lists it); `not covered` when no strategy makes its arguments, when
it is on the list of operators that cannot be called safely, or when every
drawn call raised (arguments the kernel refused), with the reason.
"""

from __future__ import annotations

import time
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from conformance import watch
from conformance.schema.arguments import ArgumentDrawer, Drawn, Uncoverable, uncoverable_reason
from conformance.schema.operators import (
    by_name,
    composite_implicit,
    functional_twin,
    is_public,
    unsafe_reason,
)
from conformance.schema.recorder import (
    Call,
    Recorder,
    signature_of,
    state_of,
    storage_of,
    tensors_in,
)
from conformance.schema.rules import OUT, Finding, check_call
from conformance.schema.semantics import broken_contract, unasked_outputs, unstable_reason
from conformance.schema.signature import Signature

HELD, VIOLATED, XFAILED, NOT_COVERED = "held", "violated", "xfailed", "not covered"

_SENTINEL = 123  # what a pre-sized out= tensor holds before the call


@dataclass
class OpResult:
    """One operator on one device."""

    op: str
    annotated: bool
    checked: int = 0  # calls checked against the schema (the sweep's own and decomposed ones)
    raised: int = 0  # drawn calls the operator refused (it raised)
    violations: dict[str, Finding] = field(default_factory=dict)  # first per rule
    examples: dict[str, str] = field(default_factory=dict)  # rule -> the call, in words
    repros: dict[str, str] = field(default_factory=dict)  # rule -> a torch script
    reason: str = ""  # not covered: why; xfailed: the known failure
    last_error: str = ""
    known: dict[str, str] = field(default_factory=dict)  # rule -> known-failure reason
    # out= values not compared, and why (semantics.py: unasked or unstable results)
    not_compared: Counter[str] = field(default_factory=Counter)

    @property
    def status(self) -> str:
        if self.violations:
            return XFAILED if set(self.violations) <= set(self.known) else VIOLATED
        if self.checked:
            return HELD
        return NOT_COVERED

    @property
    def why_not_covered(self) -> str:
        if self.reason:
            return self.reason
        if self.raised:
            return f"every drawn call raised ({self.raised}); last: {self.last_error}"
        return "never called"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "annotated": self.annotated,
            "checked": self.checked,
            "raised": self.raised,
        }
        if self.status == NOT_COVERED:
            out["reason"] = self.why_not_covered
        if self.not_compared:
            out["values_not_compared"] = dict(self.not_compared)
        if self.violations:
            out["violations"] = {
                rule: {
                    "message": f.message,
                    "example": self.examples.get(rule, ""),
                    "repro": self.repros.get(rule, ""),
                    **({"known": self.known[rule]} if rule in self.known else {}),
                }
                for rule, f in self.violations.items()
            }
        return out


def call_op(op: Any, sig: Signature, kwargs: dict[str, Any]) -> Any:
    """Call an operator overload with the schema's positional arguments in
    place, the rest by name: torch 2.0's OpOverload.__call__(self, ...) takes
    an argument named `self` for its own."""
    args = []
    named = dict(kwargs)
    for param in sig.params:
        if param.kwarg_only or param.name not in named:
            break
        args.append(named.pop(param.name))
    return op(*args, **named)


def _tensor_values(value: Any) -> list[torch.Tensor]:
    return tensors_in(value)


def _states(kwargs: dict[str, Any]) -> dict[str, list]:
    return {n: [state_of(t) for t in _tensor_values(v)] for n, v in kwargs.items()}


def _full_like(t: torch.Tensor) -> torch.Tensor:
    return torch.full_like(t, True if t.dtype == torch.bool else _SENTINEL)


class Sweep:
    """Checks operators on one device and keeps one OpResult per operator.

    `known`: (operator, rule) -> reason, the known failures to expect.
    """

    def __init__(
        self,
        device: str,
        dtypes: tuple[str, ...],
        *,
        attempts: int = 6,
        run_seed: int = 0,
        known: dict[tuple[str, str], str] | None = None,
    ) -> None:
        self.device = device
        self.dtypes = dtypes
        self.attempts = attempts
        self.run_seed = run_seed
        self.known = known or {}
        self.results: dict[str, OpResult] = {}
        self.driven: list[str] = []  # the operators the sweep called itself
        self.seconds = 0.0
        self.dtype_counts: Counter[str] = Counter()  # operators that drew each dtype

    # -- results ----------------------------------------------------------------

    def _result(self, sig: Signature) -> OpResult:
        found = self.results.get(sig.name)
        if found is None:
            found = self.results[sig.name] = OpResult(sig.name, sig.annotated)
            found.known = {rule: why for (op, rule), why in self.known.items() if op == sig.name}
        return found

    def _record(
        self, findings: Iterable[Finding], drawn: Drawn, driver: str, outs: dict[str, Any]
    ) -> None:
        for f in findings:
            result = self.results[f.op]
            if f.invariant in result.violations:
                continue
            result.violations[f.invariant] = f
            via = "" if f.op == driver else f" (reached through {driver})"
            result.examples[f.invariant] = f"{driver}({drawn.describe()}){via}"
            result.repros[f.invariant] = drawn.source(driver, outs, mode=f.recorded)

    # -- one operator ---------------------------------------------------------

    def check(self, op: torch._ops.OpOverload) -> OpResult:
        started = time.perf_counter()
        try:
            return self._check(op)
        finally:
            self.seconds += time.perf_counter() - started

    def _check(self, op: torch._ops.OpOverload) -> OpResult:
        sig = signature_of(op)
        result = self._result(sig)
        self.driven.append(sig.name)
        reason = unsafe_reason(sig.name) or uncoverable_reason(sig)
        if reason:
            result.reason = reason
            return result
        drawer = ArgumentDrawer(sig, self.device, self.dtypes)
        composite = composite_implicit(op)
        twin = functional_twin(op)

        @settings(
            max_examples=self.attempts,
            database=None,
            deadline=None,
            phases=(Phase.generate,),
            suppress_health_check=list(HealthCheck),
            derandomize=False,
        )
        @seed(zlib.crc32(f"{self.run_seed}:{sig.name}:{self.device}".encode()))
        @given(data=st.data())
        def attempt(data: st.DataObject) -> None:
            drawn = drawer.draw(data)
            used.add(drawn.dtype)
            self._call(op, sig, drawn, composite, twin)

        used: set[str] = set()
        try:
            attempt()
        except Uncoverable as why:
            result.reason = str(why)
        except Exception as error:  # noqa: BLE001 - shown in the table, never passed over
            result.reason = f"the sweep could not check it: {type(error).__name__}: {error}"[:300]
            result.checked = 0
        self.dtype_counts.update(used)
        return result

    def _outs(self, sig: Signature, drawn: Drawn, twin) -> dict[str, Any]:
        """Empty out= tensors of the result's dtype (the twin's, when there is
        one), for the kernel to resize."""
        made: list[Any] = []
        if twin is not None:
            try:
                with torch.no_grad():
                    value = call_op(twin, sig, drawn.kwargs)  # the same arguments, less out=
                made = list(value) if isinstance(value, tuple) else [value]
            except Exception:  # noqa: BLE001 - the twin refusing says nothing about the op
                made = []
        first = next((v for v in drawn.kwargs.values() if isinstance(v, torch.Tensor)), None)
        base = first.dtype if first is not None else torch.float32
        outs: dict[str, Any] = {}
        for i, p in enumerate(q for q in sig.params if q.is_out):
            like = made[i] if i < len(made) else None
            if p.type == "List[Tensor]":
                if not isinstance(like, list | tuple):
                    raise _Refused("an out= list whose length only a working twin tells")
                outs[p.name] = [self._empty(t.dtype) for t in like]
            else:
                dtype = like.dtype if isinstance(like, torch.Tensor) else base
                outs[p.name] = self._empty(dtype)
        return outs

    def _empty(self, dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(0, dtype=dtype, device=self.device)

    def _call(self, op, sig: Signature, drawn: Drawn, composite: bool, twin) -> None:
        result = self.results[sig.name]
        if (outside := broken_contract(sig, drawn.kwargs)) is not None:
            result.raised += 1  # not made: counted with the calls the operator refuses
            result.last_error = outside
            return
        try:
            outs = self._outs(sig, drawn, twin) if sig.is_out else {}
        except _Refused as why:
            result.raised += 1
            result.last_error = str(why)
            return
        # 1. as a user calls it, with no mode: the operator's own schema where
        # autograd and ADInplaceOrView have run (a dispatch mode changes what
        # runs above it: see docs/schema.md)
        top = self._plain(op, sig, {**drawn.kwargs, **outs})
        if top.error:
            result.raised += 1
            result.last_error = top.error
            return
        result.checked += 1
        findings = check_call(top, composite=composite, versions=True)
        # 2. under the recorder: every ATen call that reached the backend, each
        # against its own schema; out= tensors now come with the result's shape
        # and a sentinel in them, so the kernel must write into them in place
        presized = {n: _map(_full_like, t) for n, t in outs.items()}
        storages = {n: [storage_of(t) for t in tensors_in(v)] for n, v in presized.items()}
        recorder = Recorder()
        with recorder:
            try:
                call_op(op, sig, {**drawn.kwargs, **presized})
                error = ""
            except Exception as e:  # noqa: BLE001 - it raised this time: the calls made are checked
                error = _message(e)
        for call in recorder.calls:
            if call.error or not call.after:
                continue
            self._result(call.signature).checked += 1
            findings += [replace(f, recorded=True) for f in check_call(call)]
        if presized and not error:
            findings += self._written_in_place(op, sig, drawn, outs, presized, storages)
        self._record(findings, drawn, sig.name, outs)

    def _plain(self, op, sig: Signature, kwargs: dict[str, Any]) -> Call:
        before = _states(kwargs)
        try:
            value = call_op(op, sig, kwargs)
        except Exception as e:  # noqa: BLE001 - a refused call: its message is kept
            return Call(sig.name, sig, kwargs, before, error=_message(e))
        call = Call(sig.name, sig, kwargs, before, after=_states(kwargs), result=value)
        returned = value if isinstance(value, tuple) else (value,)
        call.outputs = [tensors_in(r) for r in returned]
        return call

    def _written_in_place(self, op, sig, drawn, outs, presized, storages) -> list[Finding]:
        """out= tensors of the right shape must keep their storage and hold
        what the first call wrote (for deterministic operators, and the
        results the call specifies: semantics.py)."""
        result = self.results[sig.name]
        unasked = unasked_outputs(sig, drawn.kwargs)
        unstable = unstable_reason(sig, drawn.kwargs)
        compare_values = not _values_unspecified(op)
        if compare_values and unstable:
            result.not_compared[unstable] += 1
            compare_values = False
        # an internal kernel trusts arguments the schema cannot constrain (a
        # gradient of its forward's output's shape, a Cholesky factor): on
        # drawn ones its values are undefined, but it must still write out=
        only_written = compare_values and not is_public(op)
        problems = []
        for name, value in presized.items():
            if name in unasked:
                result.not_compared[f"`{name}`: output_mask does not ask for it"] += 1
                continue
            tensors, first = tensors_in(value), tensors_in(outs[name])
            if [storage_of(t) for t in tensors] != storages[name]:
                problems.append(f"`{name}` already had the result's shape but got new storage")
            elif only_written:
                if any(_unwritten(a, b) for a, b in zip(tensors, first, strict=False)):
                    problems.append(f"`{name}` still holds what it held before the call")
            elif compare_values and not all(
                _same_result(a, b) for a, b in zip(tensors, first, strict=False)
            ):
                problems.append(
                    f"`{name}` does not hold the result: it holds {tensors[0].tolist()!r} "
                    f"where the same call wrote {first[0].tolist()!r} before"
                )
        if not problems:
            return []
        message = f"{sig.name} did not write into out: {'; '.join(problems)}"
        return [Finding(OUT, sig.name, message, recorded=True)]


class _Refused(Exception):
    """The sweep cannot make this call (counted as a refused call)."""


def _message(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:200] if text else ''}"


def _map(fn, value):
    if isinstance(value, list | tuple):
        return [fn(v) for v in value]
    return fn(value)


def _same_result(a: torch.Tensor, b: torch.Tensor) -> bool:
    """The same values, to rounding: a kernel may take another path (and round
    differently) into an out= tensor of other strides."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.allclose(a, b, rtol=1e-2, atol=1e-3, equal_nan=True))
    return bool(torch.equal(a, b))


def _unwritten(presized: torch.Tensor, first: torch.Tensor) -> bool:
    """The out= tensor still holds the sentinel everywhere, where the same
    call wrote something else into an empty one."""
    if presized.numel() == 0:
        return False
    sentinel = True if presized.dtype == torch.bool else _SENTINEL
    still = bool((presized == sentinel).all())
    return still and not bool((first == sentinel).all())


# Operators whose result holds whatever the memory held: `empty` and kin,
# and the functional resize ("If the number of elements is larger than the
# current storage size, then the underlying storage is resized to fit the
# new number of elements [...] The new elements are uninitialized",
# torch.Tensor.resize_)
_UNINITIALIZED = (
    "resize",
    "resize_as",
    "empty",
    "new_empty",
    "new_empty_strided",
    "empty_like",
    "empty_strided",
    "empty_permuted",
)


def _values_unspecified(op: torch._ops.OpOverload) -> bool:
    """Two calls need not give the same values: random operators (tagged
    nondeterministic_seeded) and the `empty` family."""
    tag = getattr(torch.Tag, "nondeterministic_seeded", None)
    base = op._schema.name.removeprefix("aten::").lstrip("_")
    return (tag is not None and tag in op.tags) or base in _UNINITIALIZED


def sweep_here(job: dict[str, Any]) -> dict[str, Any]:
    """The job `sweep_isolated` takes, run in this process."""
    table = by_name()
    sweep = Sweep(
        job["device"],
        tuple(job["dtypes"]),
        attempts=job["attempts"],
        run_seed=job["run_seed"],
        known={(k[0], k[1]): why for k, why in job["known"]},
    )
    for name in job["ops"]:
        watch.next_unit()
        sweep.check(table[name])
    return {
        "ops": {n: r.as_dict() for n, r in sweep.results.items()},
        "seconds": sweep.seconds,
        "driven": len(sweep.driven),
        "dtypes": dict(sweep.dtype_counts),
    }
