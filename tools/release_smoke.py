"""The release smoke: the suite's ci profile on the oldest supported releases
and the newest, each in a virtual environment of its own outside the
checkout, seed by seed; exit 0 only when every run exits 0.

    python tools/release_smoke.py                           # every leg, seeds 0, 1, 2
    python tools/release_smoke.py --legs 2.0.1,2.4.1-numpy1 --seeds 0
    python tools/release_smoke.py --write-table             # and rewrite docs/releases.md's table

A leg's environment is made once (`--venvs`, by default
~/.cache/torch-conformance/venvs) and reused while it holds the leg's torch
and NumPy; pip's own cache serves the wheels again. The table printed at the
end (and, with --write-table, put into docs/releases.md between its markers,
under "The release smoke") has one
row per leg and seed, with the date and the commit it was measured on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE_PAGE = ROOT / "docs" / "releases.md"
BEGIN, END = "<!-- release-smoke: begin -->", "<!-- release-smoke: end -->"


@dataclass(frozen=True)
class Leg:
    name: str
    torch: str
    numpy: str  # a pip requirement for NumPy

    @property
    def pins(self) -> list[str]:
        return [f"torch=={self.torch}", self.numpy]


# The oldest releases the suite supports, each NumPy major they run with, and
# the newest release (tox.ini has the same legs as environments).
LEGS = {
    leg.name: leg
    for leg in (
        Leg("2.0.1", "2.0.1", "numpy==1.26.*"),  # torch 2.0 cannot import NumPy 2
        Leg("2.4.1-numpy1", "2.4.1", "numpy==1.26.*"),
        Leg("2.14.1", "2.14.1", "numpy>=2,<3"),
    )
}
COUNTED = ("held", "xfailed", "skipped", "not applicable", "violated")


def _hypothesis_pin() -> str:
    """The project's tests' Hypothesis, so that a seed draws the same examples
    on every leg as in the project's tests."""
    for line in (ROOT / "requirements-dev.txt").read_text().splitlines():
        if line.startswith("hypothesis=="):
            return line.strip()
    return "hypothesis"


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _has(venv: Path, leg: Leg) -> bool:
    """Whether the environment already holds the leg's torch and NumPy."""
    if not _python(venv).exists():
        return False
    probe = "import numpy, torch; print(torch.__version__.split('+')[0], numpy.__version__)"
    found = subprocess.run([_python(venv), "-c", probe], capture_output=True, text=True)
    if found.returncode != 0:
        return False
    torch_version, numpy_version = found.stdout.split()
    wants_numpy1 = leg.numpy.startswith("numpy==1")
    return torch_version == leg.torch and numpy_version.startswith("1.") == wants_numpy1


def prepare(leg: Leg, venvs: Path) -> Path:
    """The leg's environment, made or brought up to the suite's requirements."""
    venv = venvs / leg.name
    if not _has(venv, leg):
        subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
    requirements = ["-r", str(ROOT / "requirements.txt"), _hypothesis_pin(), *leg.pins]
    subprocess.run(
        [_python(venv), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         *requirements],
        check=True,
    )  # fmt: skip
    return venv


@dataclass
class Result:
    leg: str
    seed: int
    exit_status: int
    seconds: float
    counts: dict[str, int]
    tests: dict[str, int]  # tests that crashed, hung or hit an internal error
    not_in_build: int  # combinations skipped for a kernel the build lacks
    torch: str

    @property
    def row(self) -> str:
        counts = ", ".join(f"{self.counts.get(k, 0)} {k}" for k in COUNTED)
        tests = ", ".join(f"{n} {status}" for status, n in self.tests.items() if n)
        return (
            f"| {self.leg} | {self.torch} | {self.seed} | {self.exit_status} | {counts}"
            f"{'; tests: ' + tests if tests else ''} | {self.not_in_build} | {self.seconds:.0f} |"
        )


def run(leg: Leg, venv: Path, seed: int, out: Path) -> Result:
    name = f"{leg.name}-seed{seed}"
    started = time.monotonic()
    done = subprocess.run(
        [_python(venv), "-m", "conformance", "--profile", "ci", "--seed", str(seed),
         "--report-dir", str(out), "--report-name", name],
        cwd=ROOT,
    )  # fmt: skip
    seconds = time.monotonic() - started
    report_file = out / f"{name}.json"
    if not report_file.exists():  # the run stopped before writing its report
        return Result(leg.name, seed, done.returncode, seconds, {}, {}, 0, leg.torch)
    report = json.loads(report_file.read_text())
    summary = report["summary"]
    return Result(
        leg=leg.name,
        seed=seed,
        exit_status=done.returncode,
        seconds=seconds,
        counts={k: summary.get(k, 0) for k in COUNTED},
        tests=summary.get("tests", {}),
        not_in_build=sum(report.get("not_in_build", {}).values()),
        torch=report["build"]["torch"],
    )


def _commit() -> str:
    found = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True)
    commit = found.stdout.strip() or "unknown"
    return f"{commit}{' (with uncommitted changes)' if dirty.stdout.strip() else ''}"


def table(results: list[Result]) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    lines = [
        f"Measured by `python tools/release_smoke.py` on {when}, commit {_commit()}: "
        "`python -m conformance --profile ci --seed N` per leg, in its own environment.",
        "",
        "| leg | torch | seed | exit | invariants | kernel skips | seconds |",
        "|---|---|---|---|---|---|---|",
        *(r.row for r in results),
    ]
    return "\n".join(lines)


def write_table(text: str, page_path: Path = TABLE_PAGE) -> None:
    """Put the table between the markers of docs/releases.md (or of page_path)."""
    page = page_path.read_text()
    head, begin, rest = page.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"{page_path} has no {BEGIN} ... {END} markers")
    page_path.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--legs", default=",".join(LEGS), help=f"of {', '.join(LEGS)}")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated (default 0,1,2)")
    parser.add_argument(
        "--venvs",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "torch-conformance" / "venvs",
        help="where each leg's environment is kept (outside the checkout)",
    )  # fmt: skip
    parser.add_argument(
        "--write-table",
        "--readme",  # its name while the table was in README.md
        dest="write_table",
        action="store_true",
        help="rewrite the table in docs/releases.md",
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.legs.split(",") if name not in LEGS]
    if unknown:
        parser.error(f"unknown leg {', '.join(unknown)}: the legs are {', '.join(LEGS)}")
    try:
        args.seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds {args.seeds!r} is not a comma-separated list of integers")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="release-smoke-") as out:
        for name in args.legs.split(","):
            leg = LEGS[name]
            print(f"== {leg.name}: preparing {args.venvs / leg.name}", flush=True)
            venv = prepare(leg, args.venvs)
            for seed in args.seeds:
                print(f"== {leg.name}, seed {seed}", flush=True)
                results.append(run(leg, venv, seed, Path(out)))
    text = table(results)
    print(text)
    if args.write_table:
        write_table(text)
    failed = [f"{r.leg} seed {r.seed} (exit {r.exit_status})" for r in results if r.exit_status]
    if failed:
        print(f"release smoke failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
