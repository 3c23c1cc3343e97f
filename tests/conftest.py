"""Helpers for the project's own tests: running the suite the way a user
does, in a fresh interpreter, optionally against a planted violation."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance import children

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "tests" / "site"


@dataclass
class SuiteRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def violated(self) -> set[str]:
        return {
            line.split()[1] for line in self.stdout.splitlines() if line.startswith("VIOLATED ")
        }


def run_suite(
    *args: str,
    plant: str | None = None,
    timeout: float = 600,
    env: dict[str, str | None] | None = None,
    report: bool = False,
) -> SuiteRun:
    """`python -m conformance ARGS` from the project root, in a new process.

    Without `report`, the run writes no report (tests that want one pass
    `report=True` and their own --report-dir)."""
    environment = dict(os.environ)
    environment.pop("CONFORMANCE_PLANT", None)
    environment.pop("HYPOTHESIS_PROFILE", None)
    if plant is not None:
        environment["CONFORMANCE_PLANT"] = plant
        environment["PYTHONPATH"] = os.pathsep.join(
            [str(SITE), environment.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
    for name, value in (env or {}).items():  # None: unset
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    result = subprocess.run(
        [sys.executable, "-m", "conformance", *args, *([] if report else ["--no-report"])],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return SuiteRun(result.returncode, result.stdout, result.stderr)


def run_repro(
    script: str, folder: Path, plant: str | None, timeout: float = 120
) -> subprocess.CompletedProcess[str] | None:
    """A repro script on its own, written to `folder`: with the plant (as the
    broken build) or without (a sound one). None if it did not finish in
    `timeout` seconds."""
    env = {k: v for k, v in os.environ.items() if k not in ("CONFORMANCE_PLANT", "PYTHONPATH")}
    if plant is not None:
        env.update(CONFORMANCE_PLANT=plant, PYTHONPATH=str(SITE))
    return children.run_script(script, timeout, folder, env)


@pytest.fixture
def suite():
    return run_suite
