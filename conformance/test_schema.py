"""Every ATen operator against its own schema (aten/src/ATen/native/README.md,
"Annotations"): a `Tensor(a)` result is a view of the input in set `a`; a
result with no annotation is new memory; an input without `!` is left as it
was; a written `Tensor(a!)` input has its version counter bumped; an out=
call returns `out` and writes into it; an in-place variant returns `self`.

Each operator is called with arguments drawn from its schema's types, under
a dispatch mode that records every ATen call (the operator's own and those
of its decomposition) and checks each against the callee's schema. The
verdicts go to the report's operator table; `--schema` chooses the
operators (docs/schema.md).
"""

from __future__ import annotations

import random
import warnings

import pytest

from conformance import harness
from conformance.check import InvariantViolation
from conformance.run_state import known_failures_of
from conformance.schema import operators
from conformance.schema.isolated import sweep_isolated
from conformance.schema.operators import name_of
from conformance.schema.rules import RULES
from conformance.schema.sweep import HELD, VIOLATED, sweep_here
from conformance.selection import current

# Each shard checks every SHARDS-th selected operator, so that xdist spreads
# a run over `--schema all` across its workers.
SHARDS = 4
ATTEMPTS = {"thorough": 10}  # drawn calls per operator; 3 otherwise
ISOLATE_ABOVE = 60  # selections larger than the default sample run in a child process
_RUN_SEED: list[int] = []


def _run_seed() -> int:
    """The run's seed (--seed), or one random seed per process."""
    selection = current()
    if selection.seed is not None:
        return selection.seed
    if not _RUN_SEED:
        _RUN_SEED.append(random.randrange(2**31))
    return _RUN_SEED[0]


def _spec(config: pytest.Config) -> str:
    chosen = config.getoption("schema", None)
    if chosen:
        return chosen
    return "all" if current().profile == "thorough" else "sample"


class KnownOperatorWarning(UserWarning):
    """An operator's known failure that did not show in this run."""


@pytest.mark.invariant(*RULES)
@pytest.mark.parametrize("shard", range(SHARDS))
def test_operators_keep_their_schemas(device, shard, request):
    config = request.config
    spec = _spec(config)
    run_seed = _run_seed()
    try:
        selected = operators.select(spec, run_seed)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    mine = selected[shard::SHARDS]
    if not mine:
        pytest.skip(f"--schema {spec!r} selects {len(selected)} operators, none for this shard")
    known = {
        (e.operator, e.invariant): e.xfail_reason()
        for e in known_failures_of(config)
        if e.operator is not None and e.device in (None, device)
    }
    job = {
        "device": device,
        "dtypes": list(current().dtypes_on(device)),
        "attempts": ATTEMPTS.get(current().profile, 3),
        "run_seed": run_seed,
        "known": [[list(k), why] for k, why in known.items()],
        "ops": [name_of(op) for op in mine],
    }
    # every operator (internal ones too) in a child process that may crash;
    # the default sample's public operators in this one
    swept = sweep_isolated(job) if len(selected) > ISOLATE_ABOVE else sweep_here(job)
    _record_coverage(swept, spec, run_seed, device)
    _warn_known_holding(swept, known)
    broken = {
        (op, rule): InvariantViolation(
            rule,
            v["message"],
            example=v.get("example", ""),
            repro=v.get("repro", ""),
            repro_asserts=False,  # it makes the call and prints what the kernels return
        )
        for op, verdict in swept["ops"].items()
        if verdict["status"] == VIOLATED
        for rule, v in verdict.get("violations", {}).items()
        if "known" not in v
    }
    if len(broken) == 1:
        raise next(iter(broken.values()))
    if broken:
        by_rule: dict[str, list[str]] = {}
        for op, rule in sorted(broken):
            by_rule.setdefault(rule, []).append(op)
        listed = "; ".join(f"{rule}: {', '.join(ops)}" for rule, ops in sorted(by_rule.items()))
        raise SchemaViolations(f"{len(broken)} schema violations ({listed})", list(broken.values()))


class SchemaViolations(AssertionError):
    """Several operators broke their schemas; the plugin reads `exceptions`
    (as it does an ExceptionGroup's) for the rules they broke."""

    def __init__(self, message: str, exceptions: list[InvariantViolation]) -> None:
        super().__init__(message + "".join(f"\n  {e}" for e in exceptions))
        self.exceptions = exceptions


def _record_coverage(swept: dict, spec: str, run_seed: int, device: str) -> None:
    harness.COVERAGE.examples = sum(v["checked"] for v in swept["ops"].values())
    for dtype, count in swept["dtypes"].items():
        harness.COVERAGE.dtypes[dtype] += count
    harness.COVERAGE.operators = {
        "device": device,
        "spec": spec,
        "seed": run_seed,
        "seconds": round(swept["seconds"], 3),
        "driven": swept["driven"],
        "schemas": len(operators.all_overloads()),
        "annotated_schemas": operators.annotated_count(),
        "ops": swept["ops"],
    }


def _warn_known_holding(swept: dict, known: dict[tuple[str, str], str]) -> None:
    for (op, rule), reason in known.items():
        verdict = swept["ops"].get(op)
        if verdict is not None and verdict["status"] == HELD:
            warnings.warn(
                KnownOperatorWarning(f"{op} kept {rule} in this run, known failure: {reason}"),
                stacklevel=1,
            )
