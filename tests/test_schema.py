"""The schema sweep, in process: each kernel-level plant (tests/plants/schema.py,
installed with torch.library) is caught and named by the rule it breaks;
the same operators hold on a clean torch; the pieces read schemas and
record calls as documented. (tests/test_planted.py runs the same plants
through `python -m conformance`.)"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from conformance.known_failures import SHIPPED, KnownFailure, load
from conformance.outcomes import TestOutcome as Outcome
from conformance.report_metadata import build_info, run_info
from conformance.report_records import Record, build_report
from conformance.schema.arguments import uncoverable_reason
from conformance.schema.isolated import sweep_isolated
from conformance.schema.operators import by_name, composite_implicit, functional_twin, select
from conformance.schema.recorder import Recorder
from conformance.schema.rules import RULES
from conformance.schema.signature import Signature
from conformance.schema.summary import operator_table, summary_lines
from conformance.schema.sweep import HELD, NOT_COVERED, VIOLATED, XFAILED, Sweep
from conformance.selection import current
from reports.html import render_report
from tests.conftest import SITE
from tests.plants import PLANTS, SCHEMA_KERNELS, override_kernel

DTYPES = ("float32", "float64", "int64")


def _sweep(op: str, attempts: int = 4) -> Sweep:
    sweep = Sweep("cpu", DTYPES, attempts=attempts, run_seed=0)
    sweep.check(by_name()[op])
    return sweep


def _operator(name: str) -> str:
    op = SCHEMA_KERNELS[name][0]
    return "aten::" + op.removesuffix(".default")


RULE_PLANTS = sorted(n for n in SCHEMA_KERNELS if n in PLANTS)


@pytest.mark.parametrize("name", RULE_PLANTS)
def test_each_kernel_plant_is_caught_and_named(name):
    op = _operator(name)
    library = override_kernel(name)
    try:
        sweep = _sweep(op)
    finally:
        library._destroy()
    result = sweep.results[op]
    assert result.status == VIOLATED, f"{name} went unnoticed: {result.as_dict()}"
    assert PLANTS[name].breaks in result.violations, (
        f"{name} should break {PLANTS[name].breaks}, the sweep saw {sorted(result.violations)}"
    )
    finding = result.violations[PLANTS[name].breaks]
    assert finding.op == op and op in finding.message
    assert (
        f"torch.ops.aten.{op.removeprefix('aten::').split('.')[0]}"
        in result.repros[PLANTS[name].breaks]
    )


@pytest.mark.parametrize("name", RULE_PLANTS)
def test_the_planted_operators_hold_on_a_clean_torch(name):
    op = _operator(name)
    result = _sweep(op).results[op]
    assert result.status == HELD, result.as_dict()


def test_every_schema_rule_has_a_kernel_plant():
    assert {PLANTS[n].breaks for n in RULE_PLANTS} == set(RULES)


def test_signature_reads_alias_sets_of_arguments_and_returns():
    split = Signature.of(torch.ops.aten.split.Tensor._schema)
    assert split.params[0].alias == "a" and not split.params[0].write
    assert split.returns[0].alias == "a" and split.returns[0].type == "List[Tensor]"
    max_out = Signature.of(torch.ops.aten.max.dim_max._schema)
    assert [p.name for p in max_out.params if p.is_out] == ["max", "max_values"]
    assert [(r.alias, r.write) for r in max_out.returns] == [("a", True), ("b", True)]
    assert Signature.of(torch.ops.aten.add_.Tensor._schema).is_inplace
    assert not Signature.of(torch.ops.aten.add.Tensor._schema).annotated


def test_uncoverable_schemas_say_why():
    assert "Storage" in uncoverable_reason(Signature.of(torch.ops.aten.set_.source_Storage._schema))
    assert "no tensor" in uncoverable_reason(Signature.of(torch.ops.aten.add.int._schema))
    result = _sweep("aten::set_.source_Storage").results["aten::set_.source_Storage"]
    assert result.status == NOT_COVERED and "Storage" in result.why_not_covered


def test_recorder_sees_the_decomposition_of_composite_operators():
    op = torch.ops.aten.reshape.default
    assert composite_implicit(op)
    x = torch.arange(6.0)
    with Recorder() as seen:
        op(x, (2, 3))
    assert [c.op for c in seen.calls] == ["aten::view"]  # reshape itself never reaches it
    assert x._version == 0  # its clones and reads bump nothing


def test_out_variants_find_their_functional_twin():
    assert functional_twin(torch.ops.aten.abs.out) is torch.ops.aten.abs.default
    assert functional_twin(torch.ops.aten.add.out) is torch.ops.aten.add.Tensor


def test_operator_selection():
    assert len(select("all", 0)) > 3000
    sample = [o.name() for o in select("sample", 0)]
    assert "aten::neg" in sample and len(sample) > 30
    assert [o.name() for o in select("neg,abs.out", 0)] == ["aten::neg", "aten::abs.out"]
    with pytest.raises(ValueError, match="matches no ATen operator"):
        select("aten::no_such_op", 0)


def _shard(ops: dict, seconds: float) -> Outcome:
    sweep = {
        "device": "cpu",
        "spec": "sample",
        "seed": 3,
        "seconds": seconds,
        "driven": len(ops),
        "schemas": 3754,
        "annotated_schemas": 1696,
        "ops": ops,
    }
    return Outcome(
        "conformance/test_schema.py::test_operators_keep_their_schemas[cpu-0]",
        RULES,
        "cpu",
        "passed",
        coverage={"examples": 1, "dtypes": {}, "operators": sweep},
    )


def test_operator_table_merges_shards_into_the_report_and_page():
    held = {"status": "held", "annotated": True, "checked": 3, "raised": 1}
    bad = {
        "status": "violated",
        "annotated": False,
        "checked": 2,
        "raised": 0,
        "violations": {"schema.fresh_output": {"message": "m", "example": "e", "repro": "r"}},
    }
    shards = [_shard({"aten::neg": held}, 1.0), _shard({"aten::neg": bad, "aten::sin": held}, 1.0)]
    table = operator_table(shards)["devices"]["cpu"]
    assert table["ops"]["aten::neg"]["status"] == "violated"  # the worse verdict wins
    assert table["ops"]["aten::neg"]["checked"] == 5
    assert table["counts"] == {"violated": 1, "held": 1} and table["annotated_reached"] == 1
    line = summary_lines(operator_table(shards))[0]
    assert "2 operators checked" in line and "1 violated, 1 held" in line
    assert (
        "1 of the build's 1696 annotated schemas" in line and "3 operators called in 2.0 s" in line
    )
    records = [Record(s, "passed", "call") for s in shards]
    run = dataclasses.replace(
        run_info(current(), None), started="2026-01-01T00:00:00+00:00", duration_s=1.0
    )
    report = build_report(records, build=build_info(), run=run).to_json()
    assert report["operators"]["devices"]["cpu"]["ops"]["aten::neg"]["status"] == "violated"
    page = render_report(json.loads(json.dumps(report)))
    assert 'data-operator="aten::neg" data-status="violated"' in page
    assert page.index("aten::neg") < page.index('data-operator="aten::sin"')


def test_a_crashing_operator_is_not_covered_and_the_sweep_goes_on(monkeypatch):
    monkeypatch.setenv("CONFORMANCE_KERNEL", "crash@sin")
    monkeypatch.setenv("PYTHONPATH", str(SITE))
    job = {
        "device": "cpu",
        "dtypes": ["float32"],
        "attempts": 2,
        "run_seed": 0,
        "known": [],
        "ops": ["aten::neg", "aten::sin", "aten::cos"],
    }
    swept = sweep_isolated(job)
    assert swept["ops"]["aten::sin"]["status"] == NOT_COVERED
    assert "SIGSEGV" in swept["ops"]["aten::sin"]["reason"]
    assert swept["ops"]["aten::neg"]["status"] == HELD
    assert swept["ops"]["aten::cos"]["status"] == HELD  # a new child went on after the crash
    assert swept["driven"] == 3


def test_an_operator_known_failure_excuses_that_operator_only():
    library = override_kernel("schema_fresh@neg")
    try:
        known = {("aten::neg", "schema.fresh_output"): "planted"}
        sweep = Sweep("cpu", DTYPES, attempts=2, run_seed=0, known=known)
        sweep.check(by_name()["aten::neg"])
    finally:
        library._destroy()
    assert sweep.results["aten::neg"].status == XFAILED
    entry = KnownFailure("schema.fresh_output", "r", "l", "here", operator="aten::neg")
    assert not entry.covers("schema.fresh_output", "cpu")  # never the whole invariant
    assert "aten::neg" in entry.label


def test_the_shipped_operator_entries_name_real_operators_and_rules():
    entries = [e for e in load(SHIPPED) if e.operator is not None]
    assert entries and all(e.invariant in RULES for e in entries)
    assert {e.operator for e in entries} <= set(by_name())
