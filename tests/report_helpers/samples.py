"""Reports built from made-up test outcomes, for tests that need no suite run.

Each status appears once, on real catalogue IDs: clone.new_storage held,
clone.same_values violated (with an example and a repro), detach.shares_storage
skipped, copy.values_copied xfailed; the rest are not run. cuda is absent.
"""

from __future__ import annotations

from typing import Any

from conformance.invariants import CATALOGUE
from conformance.outcomes import TestOutcome
from conformance.report_records import Record, build_report
from conformance.results import Build, Run

BUILD: dict[str, Any] = {
    "torch": "2.13.0+cpu",
    "git_version": "0123456789abcdef0123456789abcdef01234567",
    "build": "CPU",
    "backend": "CPU",
    "debug": False,
    "cuda": None,
    "hip": None,
    "python": "3.11.7",
    "python_implementation": "CPython",
    "executable": "/usr/bin/python3",
    "platform": "Linux-6.1-x86_64-with-glibc2.36",
    "machine": "x86_64",
}

RUN: dict[str, Any] = {
    "suite_version": "0.1.0",
    "devices": [
        {"name": "cpu", "present": True, "reason": ""},
        {"name": "cuda", "present": False, "reason": "torch 2.13.0+cpu was built without CUDA"},
    ],
    "dtypes": ["float32", "float64", "int64"],
    "profile": "ci",
    "seed": 0,
    "invariants": None,
    "started": "2026-01-01T00:00:00+00:00",
    "finished": "2026-01-01T00:00:10+00:00",
    "duration_s": 10.0,
    "workers": 2,
    "args": [],
}

__all__ = ["BUILD", "CATALOGUE", "RUN", "record", "records", "report"]

CUDA_REASON = RUN["devices"][1]["reason"]
SKIP_REASON = "detach.shares_storage applies to torch >=9.0; this is 2.13.0+cpu"


def record(
    nodeid: str,
    invariants: tuple[str, ...],
    category: str,
    *,
    device: str = "cpu",
    dtypes: dict[str, int] | None = None,
    **fields: Any,
) -> Record:
    coverage = {"examples": sum((dtypes or {}).values()), "dtypes": dtypes or {}}
    status = fields.pop("outcome_status", category)  # crashed, hung, internal error
    outcome = TestOutcome(
        nodeid=f"{nodeid}[{device}]",
        invariants=invariants,
        device=device,
        outcome=status,
        coverage=coverage,
        **fields,
    )
    when = "setup" if category == "skipped" else "call"
    return Record(outcome, category, when, traceback=fields.get("longrepr", ""))


def records(message: str = "x.clone() differs", **failure: Any) -> list[Record]:
    """One record per status on cpu, and each test skipped again on cuda."""
    on_cpu = [
        record(
            "test_clone.py::test_new",
            ("clone.new_storage",),
            "passed",
            dtypes={"float32": 3, "int64": 2},
        ),
        record(
            "test_clone.py::test_values",
            ("clone.same_values",),
            "failed",
            dtypes={"float64": 1},
            violated=("clone.same_values",),
            message=message,
            longrepr=f"test_clone.py:12: InvariantViolation\n{message}",
            **failure,
        ),
        record(
            "test_detach.py::test_shares",
            ("detach.shares_storage",),
            "skipped",
            message=SKIP_REASON,
        ),
        record("test_copy.py::test_values", ("copy.values_copied",), "xfailed"),
    ]
    on_cuda = [
        record(r.outcome.nodeid.split("[")[0], r.outcome.invariants, "skipped", device="cuda")
        for r in on_cpu
    ]
    for r in on_cuda:
        r.outcome.message = CUDA_REASON
    return on_cpu + on_cuda


def report(message: str = "x.clone() differs", **failure: Any) -> dict[str, Any]:
    """A whole report document, as the plugin would write it."""
    return build_report(
        records(message, **failure), build=Build(**BUILD), run=Run.from_json(RUN), exit_status=1
    ).to_json()
