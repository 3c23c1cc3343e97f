"""Facts about the build (conformance.build): kernels a build lacks are
probed narrowly, skipped and counted, never violations; a kernel that exists
and misbehaves stays a violation; release differences by release."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from packaging.version import Version

from conformance import build
from oracle import Release
from tests.conftest import run_suite
from tests.plants import LACKING, PLANTS


def _missing_half_exp(x: torch.Tensor) -> torch.Tensor:
    if x.dtype == torch.float16:
        raise RuntimeError("\"exp_vml_cpu\" not implemented for 'Half'")
    return x.exp()


def test_probe_names_a_kernel_that_says_it_is_missing():
    found = build.probe("x.exp()", _missing_half_exp, [((2, 3), "float16")], "cpu")
    assert found is not None and not found.backward
    assert found.reason == "not in this build: x.exp() for float16 on cpu"
    assert "not implemented for 'Half'" in found.message


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.exp(),  # works
        lambda x: x.view(7),  # raises, but not "not implemented"
        _missing_half_exp,  # float32 is there
    ],
)
def test_probe_finds_nothing_missing_where_the_kernel_is_there(call):
    assert build.probe(f"probe {id(call)}", call, [((2, 3), "float32")], "cpu") is None


def test_backward_probe_blames_the_forward_when_that_is_missing():
    found = build.probe("x.exp() bw", _missing_half_exp, [((2,), "float16")], "cpu", backward=True)
    assert found is not None and not found.backward

    class NoHalfBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise NotImplementedError("no backward for Half")

    found = build.probe("twice", NoHalfBackward.apply, [((2,), "float16")], "cpu", backward=True)
    assert found is not None and found.backward
    assert found.reason == "not in this build: twice backward for float16 on cpu"


def test_lacks_counts_each_skip():
    build.reset_missing()
    for _ in range(3):
        build.lacks("x.exp()", _missing_half_exp, [((2, 3), "float16")], "cpu")
    assert build.MISSING == {"not in this build: x.exp() for float16 on cpu": 3}
    build.reset_missing()


@pytest.mark.parametrize(
    "release, older",
    [("2.0.1", True), ("2.4.1", True), ("2.8.0", True), ("2.9.1", False), ("2.14.1", False)],
)
def test_release_differences_are_picked_by_release(release, older):
    model = build.oracle_release(Version(release))
    assert model.open_slice_is_identity is not older
    assert build.has_older("full_slice_write_is_view_write", Version(release)) is older
    assert model.clamp_grad_at_bounds is (Version(release) < Version("2.14"))


def test_every_release_difference_is_a_documented_change_or_a_wording():
    """A bug of an older release is a known failure, never a difference."""
    for difference in build.DIFFERENCES.values():
        assert difference.kind in build.KINDS, difference.name
        assert difference.changed_by and difference.older and difference.newer
    # what the model follows by release: each field is one of the differences
    followed = {f.name for f in dataclasses.fields(Release)}
    assert followed == {"open_slice_is_identity", "clamp_grad_at_bounds"}


@pytest.mark.slow
def test_a_missing_kernel_is_skipped_and_counted_never_violated(tmp_path):
    run = run_suite(
        "--invariants", "ops.*",
        "--dtypes", "float16,float32",
        "--profile", "planted",
        "--workers", "0",
        "--report-dir", str(tmp_path),
        # the property tests of ops.*, and one shard of the differential
        "-k", "not differential or cpu-0",
        plant="no_exp@float16",
        report=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    assert not run.violated
    # the property tests skip both ops, the differential's chains end at them
    assert "not in this build: x.exp() for float16 on cpu (skipped" in run.stdout
    assert "not in this build: exp for float16 on cpu (skipped" in run.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["not_in_build"].get("not in this build: x.exp() for float16 on cpu", 0) > 0
    assert "not in this build: x.exp() for float16 on cpu" in (tmp_path / "report.html").read_text()


@pytest.mark.slow
def test_a_missing_kernel_a_test_did_not_probe_is_skipped_and_counted(tmp_path):
    # grad.create_graph calls x.exp() without asking the build first: the
    # kernel's own error names it, and the example is skipped, not failed
    run = run_suite(
        "--invariants", "grad.create_graph",
        "--dtypes", "float16,float32",
        "--profile", "planted",
        "--workers", "0",
        plant="no_exp@float16",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    assert not run.violated
    assert "not in this build: exp_vml_cpu for float16 on cpu (skipped" in run.stdout


def test_a_test_whose_every_example_lacked_a_kernel_is_skipped():
    from types import SimpleNamespace

    from conformance import harness, runtest

    harness.reset_coverage()
    build.MISSING["not in this build: exp_vml_cpu for float16 on cpu"] += 2
    harness.COVERAGE.examples = harness.COVERAGE.lacking = 2
    item = SimpleNamespace(location=("conformance/test_hooks.py", 200, "test"))
    report = SimpleNamespace(passed=True, outcome="passed", longrepr=None)
    runtest.skipped_if_nothing_ran(item, report)
    assert report.outcome == "skipped"
    assert report.longrepr[2] == "Skipped: not in this build: exp_vml_cpu for float16 on cpu"
    # one example that ran is a check made: the test keeps its outcome
    harness.COVERAGE.examples = 3
    report = SimpleNamespace(passed=True, outcome="passed", longrepr=None)
    runtest.skipped_if_nothing_ran(item, report)
    assert report.outcome == "passed"
    harness.reset_coverage()


def test_an_escaped_error_names_a_reduced_precision_kernel_the_build_lacks():
    from conformance.check import InvariantViolation

    torch_error = RuntimeError("\"sin_vml_cpu\" not implemented for 'Half'")
    try:
        try:
            raise torch_error
        except RuntimeError as error:
            raise InvariantViolation("grad.create_graph", f"x.sin() raised: {error}") from error
    except InvariantViolation as wrapped:
        found = build.missing_in(wrapped, "cpu")
    assert found is not None and found.reason == "not in this build: sin_vml_cpu for float16 on cpu"
    # a float32 kernel that says it is missing is a broken build, not a lacking one
    assert (
        build.missing_in(RuntimeError("\"sin_vml_cpu\" not implemented for 'Float'"), "cpu") is None
    )
    assert build.missing_in(ValueError("\"sin\" not implemented for 'Half'"), "cpu") is None


@pytest.mark.slow
def test_a_kernel_that_exists_and_says_it_is_missing_is_a_violation():
    # the same error, raised only for non-contiguous inputs: the narrow probe
    # (fresh contiguous operands) finds the kernel, so the rule is broken
    plant = PLANTS["exp_unimplemented@strided"]
    run = run_suite(
        "--invariants", plant.breaks,
        "--profile", "planted",
        "--workers", "0",
        "-k", "not differential or cpu-0",
        plant=plant.name,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout[-3000:]
    assert plant.breaks in run.violated
    assert "not in this build" not in run.stdout


def test_lacking_builds_are_not_plants():
    assert set(LACKING).isdisjoint(PLANTS)
