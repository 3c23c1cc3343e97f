"""What the schema cannot say (conformance/schema/semantics.py): results an
`output_mask` does not ask for, and pseudoinverses and least-squares
solutions of matrices at their rank cut-off, are not compared; the asked-for
results and the well-conditioned matrices still are."""

from __future__ import annotations

import torch

from conformance.schema.operators import by_name
from conformance.schema.rules import OUT
from conformance.schema.semantics import broken_contract, unasked_outputs, unstable_reason
from conformance.schema.signature import Signature
from conformance.schema.sweep import HELD, VIOLATED, Sweep


def _sig(name: str) -> Signature:
    return Signature.of(by_name()[name]._schema)


def test_output_mask_names_the_unasked_out_arguments():
    sig = _sig("aten::grid_sampler_2d_backward.out")
    assert unasked_outputs(sig, {"output_mask": [True, False]}) == {"out1"}
    assert unasked_outputs(sig, {"output_mask": [False, True]}) == {"out0"}
    assert unasked_outputs(sig, {"output_mask": [True, True]}) == set()
    assert unasked_outputs(_sig("aten::add.out"), {}) == set()


def test_a_matrix_at_its_rank_cut_off_is_unstable_and_a_well_conditioned_one_is_not():
    sig = _sig("aten::linalg_pinv.out")
    well = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
    assert unstable_reason(sig, {"self": well}) is None
    singular = torch.tensor([[1.0, 2.0], [2.0, 4.0]])
    assert "rank-deficient" in unstable_reason(sig, {"self": singular})
    nearly = torch.tensor([[1.0, 0.0], [0.0, 1e-6]])  # cond 1e6: float32 cannot tell
    assert unstable_reason(sig, {"self": nearly}) is not None
    assert unstable_reason(sig, {"self": nearly.double()}) is None  # float64 can
    assert "cut-off given" in unstable_reason(sig, {"self": well, "rtol": 0.5})
    assert unstable_reason(_sig("aten::add.out"), {"self": singular}) is None


def test_the_values_of_well_conditioned_calls_are_still_compared(monkeypatch):
    """With every comparison failing, pinv.out is reported (its stable calls
    are compared) and only its unstable calls are counted apart."""
    from conformance.schema import sweep as sweep_module

    name = "aten::linalg_pinv.out"
    clean = Sweep("cpu", ("float32", "float64"), attempts=20, run_seed=0)
    clean.check(by_name()[name])
    assert clean.results[name].status == HELD, clean.results[name].as_dict()

    monkeypatch.setattr(sweep_module, "_same_result", lambda a, b: False)
    broken = Sweep("cpu", ("float32", "float64"), attempts=20, run_seed=0)
    broken.check(by_name()[name])
    result = broken.results[name]
    assert result.status == VIOLATED, result.as_dict()
    assert "does not hold the result" in result.violations[OUT].message


def test_a_backward_given_a_grad_output_of_another_shape_is_not_called():
    """grid_sampler_2d_backward trusts grad_output's shape: on another one it
    reads memory it does not own, and its results vary from call to call."""
    sig = _sig("aten::grid_sampler_2d_backward")
    inp, grid = torch.zeros(2, 4, 4, 2), torch.zeros(2, 3, 5, 2)
    right = {"grad_output": torch.zeros(2, 4, 3, 5), "input": inp, "grid": grid}
    assert broken_contract(sig, right) is None
    wrong = {**right, "grad_output": torch.zeros(2, 4, 4, 2)}
    assert "contract" in broken_contract(sig, wrong)
    assert broken_contract(_sig("aten::grid_sampler_2d"), {"input": inp, "grid": grid}) is None
