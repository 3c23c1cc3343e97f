"""Known crashes: a crash on the known-failure list (torch's own bug, on an
input the suite draws) is still reported crashed, with its input and repro,
but does not fail the run; any other crash still does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.known_failures import KnownFailuresError, load
from tests.conftest import run_suite

PROPERTY = "test_detach.py::test_detach_shares_storage"
SEED = "test_seeds.py::test_seed000_detach[cpu]"


def _list(tmp_path: Path, **fields) -> Path:
    entry = {
        "status": "crashed",
        "test": PROPERTY,
        "reason": "planted by the project's tests",
        "link": "https://example.invalid/issue/2",
        **fields,
    }
    lines = ["[[known]]"] + [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
    path = tmp_path / "known.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_known_crash_is_matched_by_test_target_message_and_example(tmp_path):
    (entry,) = load(
        _list(
            tmp_path,
            test="test_compiled.py::test_compiled_agrees_with_eager",
            target="aot_eager",
            message="Segmentation fault",
            example=["retain_grad()", ".backward("],
        )
    )
    node = "test_compiled.py::test_compiled_agrees_with_eager[aot_eager-cpu-0]"
    example = "t5.retain_grad()\nt7.div_(2)\nt7.backward(t9)"
    fatal = "Fatal Python error: Segmentation fault"
    assert entry.covers_crash(node, example, fatal)
    assert not entry.covers_crash(node.replace("aot_eager", "eager"), example, fatal)
    # inductor is built on aot_eager: aot_eager's known crashes are its own
    assert entry.covers_crash(node.replace("aot_eager", "inductor"), example, fatal)
    assert not entry.covers_crash(node, example, "Fatal Python error: Aborted")
    assert not entry.covers_crash(node, "t7.backward(t9)", fatal)  # no retain_grad()
    assert not entry.covers_crash("test_detach.py::test_detach_shares_storage[cpu]", example, fatal)
    # a crash entry never turns a violation into an xfail
    assert not entry.covers("", "cpu/aot_eager")
    assert entry.label == "crash in test_compiled.py::test_compiled_agrees_with_eager [aot_eager]"


@pytest.mark.parametrize(
    "fields, needle",
    [
        ({"status": "hung"}, "status can only be 'crashed'"),
        ({"test": None}, "missing ['test']"),
        ({"example": "retain_grad()"}, "example must be a list of strings"),
    ],
)
def test_a_bad_crash_entry_is_refused(tmp_path, fields, needle):
    path = _list(tmp_path, **{k: v for k, v in fields.items() if v is not None})
    if fields.get("test", "") is None:
        path.write_text("\n".join(ln for ln in path.read_text().splitlines() if "test =" not in ln))
    with pytest.raises(KnownFailuresError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        load(path)


@pytest.mark.slow
@pytest.mark.parametrize(
    "example, listed", [(["Draw 1 (source)"], True), (["no such input"], False)]
)
def test_a_listed_crash_does_not_fail_the_run_and_another_still_does(tmp_path, example, listed):
    known = _list(tmp_path, message="Segmentation fault", example=example)
    run = run_suite(
        "--invariants", "detach.shares_storage",
        "-k", "test_detach_shares_storage or seed",
        "--profile", "ci", "--devices", "cpu", "--workers", "2",
        "--no-known-failures", "--known-failures", str(known),
        "--report-dir", str(tmp_path / "out"),
        plant="segfault@rank3", report=True,
    )  # fmt: skip
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    (problem,) = report["unfinished"]
    assert problem["status"] == "crashed" and "Draw 1 (source)" in problem["example"]
    assert {t["nodeid"]: t["status"] for t in report["tests"]}[SEED] == "passed"
    if listed:
        assert run.returncode == 0, run.stdout[-3000:]
        assert "planted by the project's tests" in problem["known"]
        assert f"{PROPERTY}[cpu] known" in report["summary"]["text"]
        assert report["invariants"]["detach.shares_storage"]["status"] == "xfailed"
        assert (
            "A known failure, expected on this build"
            in (tmp_path / "out" / "report.html").read_text()
        )
    else:
        assert run.returncode == 1, run.stdout[-3000:]
        assert problem["known"] == ""
        assert report["invariants"]["detach.shares_storage"]["status"] == "crashed"
