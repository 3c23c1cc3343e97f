"""A backend declared as built on aot_eager, and changing nothing, reports
what aot_eager reports at the same seed: aot_eager's known failures are its
own, and nothing beyond the shipped list fails the run."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_suite

pytest.importorskip("tests.compile_wrappers", exc_type=ImportError)  # a Dynamo with aot_eager

WRAPPER = "tests.compile_wrappers:passthrough"


@pytest.mark.slow
def test_a_wrapper_declared_on_aot_eager_reports_what_aot_eager_reports(tmp_path):
    run = run_suite(
        "--compile",
        f"aot_eager,{WRAPPER}=aot_eager",
        "-k",
        "test_compiled_agrees_with_eager",
        "--profile",
        "ci",
        "--seed",
        "0",
        "--report-dir",
        str(tmp_path),
        report=True,
    )
    assert run.returncode == 0, run.stdout[-4000:]
    assert f"{WRAPPER} (built on aot_eager)" in run.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    compiled = [v for v in report["invariants"].values() if "cpu/aot_eager" in v["devices"]]
    assert compiled
    for verdict in compiled:
        base, wrapper = (verdict["devices"][f"cpu/{t}"] for t in ("aot_eager", WRAPPER))
        assert (wrapper["status"], wrapper["known"]) == (base["status"], base["known"]), verdict[
            "id"
        ]
    # the run meets aot_eager's known failures, or the comparison says little
    assert any(v["devices"]["cpu/aot_eager"]["known"] for v in compiled)
