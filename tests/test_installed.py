"""The suite installed as a package: the wheel built from this checkout, in a
fresh virtual environment (no system site-packages), gives the
`torch-conformance` command that runs from any folder with the same results as
`python -m conformance` in the checkout."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_suite

# clone.* and its tests alone (not the differential, which checks every rule
# and would only make this slower): the same selection in both places
ARGS = ("--invariants", "clone.*", "--profile", "ci", "--seed", "1", "--workers", "0")
ARGS += ("-k", "not differential")


def _pins() -> list[str]:
    """The exact versions the project's tests use (requirements-dev.txt and
    requirements-torch.txt): the installed suite draws the same examples."""
    pins = []
    for name in ("requirements-dev.txt", "requirements-torch.txt"):
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if "==" in line:
                pins.append(line)
    return pins


def _summary(stdout: str) -> tuple[list[str], str, str]:
    """VIOLATED lines, the invariants line and pytest's counts (no timing)."""
    lines = stdout.splitlines()
    violated = sorted(line for line in lines if line.startswith("VIOLATED "))
    invariants = next((line for line in lines if line.startswith("invariants: ")), "")
    counts = next((line for line in reversed(lines) if " in " in line and "passed" in line), "")
    return violated, invariants, re.sub(r" in [0-9.]+s.*", "", counts).strip("= ")


@pytest.mark.slow
def test_installed_command_runs_anywhere_like_the_checkout(tmp_path: Path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("torch_conformance-*.whl")
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True, system_site_packages=False)
    python = env_dir / "bin" / "python"
    subprocess.run(
        # --no-compile: byte-compiling torch's files would take most of the time
        [str(python), "-m", "pip", "install", "-q", "--no-compile", *_pins(), str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "CONFORMANCE_PLANT", "HYPOTHESIS_PROFILE")
    }
    installed = subprocess.run(
        [str(env_dir / "bin" / "torch-conformance"), *ARGS, "--report-dir", "out"],
        cwd=elsewhere,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    # it ran the installed copy, not this checkout, and wrote its report here
    assert str(env_dir) in installed.stdout, installed.stdout[-3000:]
    assert (elsewhere / "out" / "report.json").is_file()
    checkout = run_suite(*ARGS)
    assert checkout.returncode == installed.returncode, checkout.stdout[-3000:]
    ours, theirs = _summary(checkout.stdout), _summary(installed.stdout)
    assert ours == theirs
    assert ours[1] and ours[2], checkout.stdout[-3000:]  # the summary was found
