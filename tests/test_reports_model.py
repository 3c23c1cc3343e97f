"""The JSON report's shape and counts, from made-up outcomes (no suite run)."""

from __future__ import annotations

import json

import pytest

from conformance.failures import minimal_example, traceback_summary
from conformance.invariants import CATALOGUE
from conformance.nodeids import device_of, invariants_of
from conformance.report_outcomes import record_of
from conformance.report_records import build_report, counts, summary_line
from conformance.results import Build, Run
from reports import FORMAT, SCHEMA_VERSION
from reports.files import ReportError, dumps, load
from tests.conftest import ROOT
from tests.report_helpers import samples

TOP_LEVEL = {
    "format",
    "schema_version",
    "complete",
    "incomplete_reason",
    "exit_status",
    "build",
    "run",
    "summary",
    "counts",
    "collected",
    "not_run",
    "invariants",
    "not_in_build",
    "tests",
    "operators",
    "unfinished",
    "arguments",
}
PER_INVARIANT = {
    "id",
    "family",
    "statement",
    "quote",
    "source",
    "versions",
    "applies",
    "status",
    "reasons",
    "known",
    "examples",
    "dtypes",
    "devices",
    "failures",
    "unfinished",
}
PER_CELL = {"status", "examples", "dtypes", "reasons", "known", "outcomes", "tests"}
PER_FAILURE = {
    "nodeid",
    "device",
    "outcome",
    "when",
    "crashed",
    "message",
    "example",
    "repro",
    "reproduced",
}
BUILD_KEYS = {"torch", "git_version", "build", "backend", "debug", "python", "platform"}
RUN_KEYS = {"devices", "dtypes", "profile", "seed", "suite_version", "started", "duration_s"}


@pytest.fixture(scope="module")
def report():
    return samples.report(example="Draw 1: <float64 0-d on cpu: 1.0>", repro="import torch\n")


def test_top_level_and_per_invariant_keys(report):
    assert set(report) == TOP_LEVEL
    assert report["format"] == FORMAT and report["schema_version"] == SCHEMA_VERSION
    assert BUILD_KEYS <= set(report["build"]) and RUN_KEYS <= set(report["run"])
    assert list(report["invariants"]) == [inv.id for inv in CATALOGUE]
    for entry in report["invariants"].values():
        assert set(entry) == PER_INVARIANT
        for cell in entry["devices"].values():
            assert set(cell) == PER_CELL
        for failure in entry["failures"]:
            assert PER_FAILURE | {"traceback"} == set(failure)


def test_each_status_overall_and_per_device(report):
    inv = report["invariants"]
    assert inv["clone.new_storage"]["status"] == "held"
    assert inv["clone.same_values"]["status"] == "violated"
    assert inv["detach.shares_storage"]["status"] == "skipped"
    assert inv["copy.values_copied"]["status"] == "xfailed"
    assert inv["grad.retain_grad"]["status"] == "not run"
    assert inv["grad.retain_grad"]["devices"] == {}
    assert inv["detach.shares_storage"]["reasons"] == sorted(
        [samples.SKIP_REASON, samples.CUDA_REASON]
    )
    cuda = inv["clone.new_storage"]["devices"]["cuda"]
    assert cuda["status"] == "skipped" and cuda["reasons"] == [samples.CUDA_REASON]


def test_dtypes_and_examples_per_device(report):
    cpu = report["invariants"]["clone.new_storage"]["devices"]["cpu"]
    assert cpu["examples"] == 5
    assert list(cpu["dtypes"].items()) == [("float32", 3), ("int64", 2)]  # catalogue order
    assert report["invariants"]["clone.new_storage"]["examples"] == 5


def test_counts_are_one_per_counted_outcome(report):
    assert report["counts"] == {"failed": 1, "passed": 1, "skipped": 5, "xfailed": 1}
    assert sum(report["counts"].values()) == len(report["tests"])
    summary = report["summary"]
    assert summary["invariants"] == len(CATALOGUE)
    assert (summary["held"], summary["violated"], summary["skipped"], summary["xfailed"]) == (
        1,
        1,
        1,
        1,
    )
    assert summary["text"].endswith("on torch 2.13.0+cpu")


def test_failure_carries_example_repro_and_traceback(report):
    (failure,) = report["invariants"]["clone.same_values"]["failures"]
    assert failure["example"] == "Draw 1: <float64 0-d on cpu: 1.0>"
    assert failure["repro"] == "import torch\n"
    assert "InvariantViolation" in failure["traceback"]
    assert failure["nodeid"] == "test_clone.py::test_values[cpu]"
    assert (failure["outcome"], failure["crashed"]) == ("failed", False)


def test_summary_line_names_every_nonzero_status():
    line = summary_line({"held": 49, "violated": 1, "xfailed": 0, "skipped": 1}, "2.13.0")
    assert line == "51 invariants: 49 held, 1 violated, 1 skipped on torch 2.13.0"


def test_counts_keep_pytest_order_then_others():
    records = samples.records()
    records[0].category = "rerun"
    assert list(counts(records)) == ["failed", "skipped", "xfailed", "rerun"]


# Importing the suite's module here, outside its own plugin, meets its marks unregistered.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")
def test_a_crashed_worker_is_the_tests_own_status_not_a_violation():
    nodeid = "test_clone.py::test_clone_has_new_storage[cpu]"
    crash = pytest.TestReport(
        nodeid=nodeid,
        location=("test_clone.py", None, "test_clone.py"),
        keywords={},
        outcome="failed",
        longrepr=f"worker 'gw0' crashed while running {nodeid!r}",
        when="???",
    )
    record = record_of(crash, "failed", [ROOT / "conformance"])
    assert record.crashed and record.category == "failed"
    assert record.outcome.invariants == ("clone.new_storage",)
    assert record.outcome.outcome == "crashed" and record.outcome.broken == ()
    assert record.outcome.unfinished_on == ("clone.new_storage",)  # a focused test
    assert record.outcome.device == "cpu"
    assert "crashed" in record.outcome.message


def _unfinished_report():
    from conformance.invariants import INVARIANTS

    every = tuple(INVARIANTS)
    return build_report(
        [
            samples.record("test_clone.py::test_new", ("clone.new_storage",), "failed",
                           outcome_status="crashed"),
            samples.record("test_differential.py::test_wide", every, "failed",
                           outcome_status="hung"),
            samples.record("test_detach.py::test_x", ("detach.shares_storage",), "failed",
                           outcome_status="internal error"),
            samples.record("test_clone.py::test_values", ("clone.same_values",), "passed"),
        ],
        build=Build(**samples.BUILD),
        run=Run.from_json(samples.RUN),
        exit_status=3,
    ).to_json()  # fmt: skip


def test_crashed_hung_and_internal_errors_are_counted_apart_from_violations():
    report = _unfinished_report()
    inv = report["invariants"]
    assert inv["clone.new_storage"]["status"] == "crashed"
    assert inv["detach.shares_storage"]["status"] == "internal error"
    # the wide test's hang marks none of the rules it names
    assert inv["clone.same_values"]["status"] == "held"
    assert inv["grad.retain_grad"]["status"] == "not run"
    assert report["summary"]["violated"] == 0
    assert report["summary"]["tests"] == {"crashed": 1, "hung": 1, "internal error": 1}
    assert "; tests: 1 crashed (test_clone.py::test_new[cpu]), 1 hung" in report["summary"]["text"]
    statuses = {u["nodeid"]: u["status"] for u in report["unfinished"]}
    assert statuses == {
        "test_clone.py::test_new[cpu]": "crashed",
        "test_differential.py::test_wide[cpu]": "hung",
        "test_detach.py::test_x[cpu]": "internal error",
    }
    assert all(t["violated"] == [] for t in report["tests"])


@pytest.mark.parametrize(
    "nodeid, device",
    [
        ("t.py::test[cpu]", "cpu"),
        ("t.py::test[cuda:1-float32]", "cuda:1"),
        ("t.py::test[x-mps]", "mps"),
        ("t.py::test", "cpu"),
    ],
)
def test_device_from_a_node_id(nodeid, device):
    assert device_of(nodeid) == device


def test_invariants_of_a_test_that_cannot_be_found_are_none():
    roots = [ROOT / "conformance"]
    assert invariants_of("test_nowhere.py::test_x[cpu]", roots) == ()
    assert invariants_of("test_clone.py::test_no_such_test[cpu]", roots) == ()


def test_minimal_example_is_hypothesis_block_without_advice():
    text = (
        "[clone.new_storage] shares storage\n"
        "Falsifying example: test_x(\n    device='cpu',\n)\n"
        "Draw 1 (source): <uint8 0-d plain contiguous on cpu: 0>\n"
        "Explanation:\n    These lines were always and only run by failing test cases:\n"
        "You can reproduce this test case by temporarily adding @reproduce_failure(...)"
    )
    example = minimal_example(text)
    assert example.startswith("Falsifying example: test_x(")
    assert example.endswith("<uint8 0-d plain contiguous on cpu: 0>")
    assert minimal_example("no hypothesis here") == ""


def test_traceback_summary_of_plain_text_keeps_the_last_lines():
    assert traceback_summary("\n".join(str(i) for i in range(40))).splitlines()[-1] == "39"


def test_incomplete_report_says_why():
    report = build_report(
        samples.records(),
        build=Build(**samples.BUILD),
        run=Run.from_json(samples.RUN),
        complete=False,
        incomplete_reason="interrupted by the user (KeyboardInterrupt)",
        collected=["a", "test_clone.py::test_new[cpu]"],
    ).to_json()
    assert report["complete"] is False
    assert report["incomplete_reason"].startswith("interrupted")
    assert (report["collected"], report["not_run"]) == (2, ["a"])


def test_load_round_trips_and_rejects_other_files(tmp_path, report):
    good = tmp_path / "good.json"
    good.write_text(dumps(report))
    assert load(good) == json.loads(dumps(report))
    cases = {
        "missing.json": (None, "no such file"),
        "text.json": ("not json", "not JSON"),
        "other.json": ('{"format": "junit"}', "not a torch-conformance-report file"),
        "future.json": (json.dumps({"format": FORMAT, "schema_version": 99}), "schema version"),
    }
    for name, (content, needle) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_text(content)
        with pytest.raises(ReportError, match=needle):
            load(path)


def test_unfinished_tests_show_on_the_page_and_in_the_merge(tmp_path):
    from reports import cli
    from reports.html import render_report

    report = _unfinished_report()
    page = render_report(report)
    assert "Crashed and hung tests" in page and 'id="internal-errors"' in page
    assert 'data-status="crashed"' in page and "st-internal-error" in page
    path = tmp_path / "a.json"
    path.write_text(dumps(report))
    assert cli.main(["merge", str(path), "-o", str(tmp_path / "m.html")]) == 0
    matrix = (tmp_path / "m.html").read_text()
    assert "1 test crashed" in matrix and "1 test internal error" in matrix


def test_a_test_of_many_rules_is_xfailed_only_for_the_listed_rule_it_broke():
    from conformance.outcomes import HELD, XFAILED, table

    many = ("grad.nonscalar_needs_gradient", "clone.new_storage", "view.write_visible")
    differential = samples.record(
        "test_differential.py::test_agrees",
        many,
        "xfailed",
        violated=("grad.nonscalar_needs_gradient",),
    ).outcome
    cells = table([differential])
    assert cells["grad.nonscalar_needs_gradient"]["cpu"].status == XFAILED
    assert cells["clone.new_storage"]["cpu"].status == HELD
    assert cells["view.write_visible"]["cpu"].status == HELD


def test_a_rule_outside_the_builds_versions_is_not_applicable_never_held():
    from conformance.invariants import INVARIANTS
    from conformance.outcomes import HELD, NOT_APPLICABLE, VIOLATED, summary, table

    newer = next(i for i in INVARIANTS.values() if i.versions.startswith(">=2.1"))
    ran = samples.record("test_differential.py::test_agrees", (newer.id,), "passed").outcome
    assert table([ran], "2.13.0")[newer.id]["cpu"].status == HELD
    cells = table([ran], "2.0.1+cu117")
    assert cells[newer.id]["cpu"].status == NOT_APPLICABLE
    counts = summary(cells)
    assert counts[NOT_APPLICABLE] == 1 and counts[HELD] == 0
    # a violation is still shown: something to look at, not a rule checked
    broke = samples.record("test_x.py::test_y", (newer.id,), "failed", violated=(newer.id,))
    assert table([broke.outcome], "2.0.1")[newer.id]["cpu"].status == VIOLATED
    old = Build(**dict(samples.BUILD, torch="2.0.1+cu117"))
    ran_on_old = samples.record("t.py::t", (newer.id,), "passed")
    report = build_report([ran_on_old], build=old, run=Run()).to_json()
    assert report["invariants"][newer.id]["status"] == NOT_APPLICABLE
    assert (
        report["summary"]["not applicable"] >= 1 and "not applicable" in report["summary"]["text"]
    )


def test_the_report_lists_what_the_build_lacks():
    outcome = samples.record("test_ops.py::test_values", ("ops.values",), "passed").outcome
    outcome.coverage["not_in_build"] = {"not in this build: x.exp() for float16 on cpu": 3}
    other = samples.record("test_ops.py::test_grad", ("grad.formula",), "passed").outcome
    other.coverage["not_in_build"] = {"not in this build: x.exp() for float16 on cpu": 2}
    from conformance.not_in_build import tally

    assert tally([outcome, other]) == {"not in this build: x.exp() for float16 on cpu": 5}


def test_the_model_serialises_to_plain_json():
    # What the plugin writes and what `reports` renders is the same document:
    # no tuple or dataclass survives `to_json` to differ after a round trip.
    document = samples.report()
    assert json.loads(dumps(document)) == document
    assert Run.from_json(document["run"]) == Run.from_json(json.loads(dumps(document))["run"])
