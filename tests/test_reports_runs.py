"""Reports of real suite runs: under xdist, with a worker killed mid-test,
interrupted with Ctrl-C, and switched off. Each run checks one invariant on
the ci profile, so that it takes seconds."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest
import torch

from tests.conftest import ROOT, run_suite
from tests.report_helpers import sabotage

pytestmark = pytest.mark.slow

# The differential test checks nearly every invariant and runs for minutes;
# these tests are about the report, so they leave it out.
FAST = ("--profile", "ci", "--invariants", "clone.new_storage", "-k", "not differential")
PROPERTY_TEST = "test_clone.py::test_clone_has_new_storage[cpu]"
SEED_TEST = "test_seeds.py::test_seed000_clone[cpu]"
SABOTAGED = ("-p", "tests.report_helpers.sabotage")


def pytest_counts(stdout: str) -> dict[str, int]:
    """The outcome counts of pytest's last line: "== 2 failed, 4 skipped in 1.6s ==" """
    line = next(ln for ln in reversed(stdout.splitlines()) if re.search(r" in [\d.]+s", ln))
    counts: dict[str, int] = {}
    for number, word in re.findall(r"(\d+) (\w+)", line.split(" in ")[0]):
        word = {"errors": "error", "warnings": "warning"}.get(word, word)
        if word not in ("deselected", "warning"):
            counts[word] = int(number)
    return counts


def load(folder: Path, name: str = "report") -> dict:
    return json.loads((folder / f"{name}.json").read_text())


def into(folder: Path, name: str = "report") -> tuple[str, ...]:
    return ("--report-dir", str(folder), "--report-name", name)


def test_xdist_run_with_a_violation(tmp_path):
    run = run_suite(
        *FAST, "--workers", "2", *into(tmp_path, "cpu"), plant="clone_aliases", report=True
    )
    assert run.returncode == 1, run.stdout[-3000:]
    assert run.stdout.splitlines()[-2:] == [
        f"report: {tmp_path / 'cpu.html'}",
        f"report json: {tmp_path / 'cpu.json'}",
    ]
    report = load(tmp_path, "cpu")
    assert report["counts"] == pytest_counts(run.stdout)
    assert sum(report["counts"].values()) == len(report["tests"]) == report["collected"]
    assert report["complete"] is True and report["exit_status"] == 1
    assert report["build"]["torch"] == torch.__version__
    run_info = report["run"]
    assert (run_info["profile"], run_info["seed"], run_info["workers"]) == ("ci", 0, 2)
    assert {"name": "cpu", "present": True, "reason": ""} in run_info["devices"]

    entry = report["invariants"]["clone.new_storage"]
    assert entry["status"] == "violated" and entry["devices"]["cpu"]["status"] == "violated"
    assert entry["devices"]["cpu"]["examples"] > 0 and entry["devices"]["cpu"]["dtypes"]
    failures = {f["nodeid"]: f for f in entry["failures"]}
    assert set(failures) == {PROPERTY_TEST, SEED_TEST}
    shrunk = failures[PROPERTY_TEST]
    assert "[clone.new_storage]" in shrunk["message"] and "Draw 1" in shrunk["example"]
    assert "InvariantViolation" in shrunk["traceback"]
    assert (tmp_path / "cpu.html").read_text().count("clone.new_storage") > 2


def test_report_counts_a_crashed_worker(tmp_path):
    # One worker: when it dies, xdist starts another for the tests left.
    run = run_suite(
        *FAST,
        "--workers",
        "1",
        *into(tmp_path),
        *SABOTAGED,
        env={sabotage.CRASH: PROPERTY_TEST},
        report=True,
    )
    assert run.returncode == 1, run.stdout[-3000:]
    assert "crashed" in run.stdout
    report = load(tmp_path)
    assert report["counts"] == pytest_counts(run.stdout)
    assert report["counts"]["failed"] == 1
    assert report["complete"] is True
    # a crash is the test's own status, never a violation of its rule
    assert report["invariants"]["clone.new_storage"]["failures"] == []
    (crash,) = report["unfinished"]
    assert crash["nodeid"] == PROPERTY_TEST and crash["status"] == "crashed"
    assert crash["when"] == "???" and crash["device"] == "cpu"
    assert report["invariants"]["clone.new_storage"]["status"] == "crashed"
    assert report["invariants"]["clone.new_storage"]["unfinished"] == [PROPERTY_TEST]
    outcomes = {t["nodeid"]: t["outcome"] for t in report["tests"]}
    assert outcomes[SEED_TEST] == "passed"  # the run went on after the crash


def test_ctrl_c_still_writes_the_report_marked_incomplete(tmp_path):
    suite = [*FAST, "--workers", "1", *into(tmp_path / "out"), *SABOTAGED]
    returncode, stdout, _ = sabotage.interrupt_stalled_run(
        suite,
        SEED_TEST,
        tmp_path / "stalled",
        lambda pid: os.killpg(pid, signal.SIGINT),
        ROOT,
        wait=120,
    )
    assert returncode == 2, stdout[-3000:]
    assert f"report: {tmp_path / 'out' / 'report.html'}" in stdout
    report = load(tmp_path / "out")
    assert report["complete"] is False and "KeyboardInterrupt" in report["incomplete_reason"]
    assert report["exit_status"] == 2
    assert SEED_TEST in report["not_run"]
    assert report["counts"] == pytest_counts(stdout)
    assert "Incomplete run" in (tmp_path / "out" / "report.html").read_text()


def test_no_report_writes_nothing(tmp_path):
    run = run_suite(*FAST, "--workers", "0", *into(tmp_path / "out"), "--no-report")
    assert run.returncode == 0, run.stdout[-3000:]
    assert not (tmp_path / "out").exists()
    assert "report:" not in run.stdout
