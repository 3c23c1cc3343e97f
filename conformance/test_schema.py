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
from conformance.plugin import known_failures_of
from conformance.schema import operators
from conformance.schema.rules import RULES
from conformance.schema.sweep import HELD, VIOLATED, Sweep
from conformance.selection import current

# Each shard checks every SHARDS-th selected operator, so that xdist spreads
# a run over `--schema all` across its workers.
SHARDS = 4
ATTEMPTS = {"thorough": 10}  # drawn calls per operator; 6 otherwise
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
    sweep = Sweep(
        device,
        current().dtypes_on(device),
        attempts=ATTEMPTS.get(current().profile, 6),
        run_seed=run_seed,
        known=known,
    )
    for op in mine:
        sweep.check(op)
    _record_coverage(sweep, spec, run_seed)
    _warn_known_holding(sweep, known)
    broken = {
        (result.op, rule): InvariantViolation(
            rule,
            finding.message,
            example=result.examples.get(rule, ""),
            repro=result.repros.get(rule, ""),
        )
        for result in sweep.results.values()
        if result.status == VIOLATED
        for rule, finding in result.violations.items()
        if rule not in result.known
    }
    if len(broken) == 1:
        raise next(iter(broken.values()))
    if broken:
        ops = ", ".join(sorted({op for op, _ in broken}))
        raise SchemaViolations(f"{len(broken)} schema violations: {ops}", list(broken.values()))


class SchemaViolations(AssertionError):
    """Several operators broke their schemas; the plugin reads `exceptions`
    (as it does an ExceptionGroup's) for the rules they broke."""

    def __init__(self, message: str, exceptions: list[InvariantViolation]) -> None:
        super().__init__(message + "".join(f"\n  {e}" for e in exceptions))
        self.exceptions = exceptions


def _record_coverage(sweep: Sweep, spec: str, run_seed: int) -> None:
    ops = {name: r.as_dict() for name, r in sweep.results.items()}
    harness.COVERAGE.examples = sum(r.checked for r in sweep.results.values())
    for dtype, count in sweep.dtype_counts.items():
        harness.COVERAGE.dtypes[dtype] += count
    harness.COVERAGE.operators = {
        "device": sweep.device,
        "spec": spec,
        "seed": run_seed,
        "seconds": round(sweep.seconds, 3),
        "driven": len(sweep.driven),
        "schemas": len(operators.all_overloads()),
        "annotated_schemas": operators.annotated_count(),
        "ops": ops,
    }


def _warn_known_holding(sweep: Sweep, known: dict[tuple[str, str], str]) -> None:
    for (op, rule), reason in known.items():
        result = sweep.results.get(op)
        if result is not None and result.status == HELD and op in sweep.driven:
            warnings.warn(
                KnownOperatorWarning(f"{op} kept {rule} in this run, known failure: {reason}"),
                stacklevel=1,
            )
