"""The schema sweep, in process: each kernel-level plant (tests/plants.py,
installed with torch.library) is caught and named by the rule it breaks;
the same operators hold on a clean torch; the pieces read schemas and
record calls as documented. (tests/test_planted.py runs the same plants
through `python -m conformance`.)"""

from __future__ import annotations

import pytest
import torch

from conformance.schema.arguments import uncoverable_reason
from conformance.schema.operators import by_name, composite_implicit, functional_twin, select
from conformance.schema.recorder import Recorder
from conformance.schema.rules import RULES
from conformance.schema.signature import Signature
from conformance.schema.sweep import HELD, NOT_COVERED, VIOLATED, Sweep
from tests.plants import PLANTS, SCHEMA_KERNELS, override_kernel

DTYPES = ("float32", "float64", "int64")


def _sweep(op: str, attempts: int = 4) -> Sweep:
    sweep = Sweep("cpu", DTYPES, attempts=attempts, run_seed=0)
    sweep.check(by_name()[op])
    return sweep


def _operator(name: str) -> str:
    op = SCHEMA_KERNELS[name][0]
    return "aten::" + op.removesuffix(".default")


@pytest.mark.parametrize("name", sorted(SCHEMA_KERNELS))
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


@pytest.mark.parametrize("name", sorted(SCHEMA_KERNELS))
def test_the_planted_operators_hold_on_a_clean_torch(name):
    op = _operator(name)
    result = _sweep(op).results[op]
    assert result.status == HELD, result.as_dict()


def test_every_schema_rule_has_a_kernel_plant():
    assert {PLANTS[n].breaks for n in SCHEMA_KERNELS} == set(RULES)


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
