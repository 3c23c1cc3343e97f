"""The differential alone catches every planted violation and names the rule
it breaks; the repro script it writes fails on the patched torch and passes
on a clean one."""

from __future__ import annotations

import json

import pytest
import torch

from conformance import known_failures
from tests.conftest import run_repro, run_suite
from tests.plants import PLANTS

pytestmark = pytest.mark.slow


# The differential holds torch to the reference model; the schema.* rules are
# the schema sweep's (tests/test_schema.py catches those plants at the kernel).
# Plants of a case the model does not build, each with why (the property tests
# catch them: tests/test_planted.py):
UNDRAWN = {
    # oracle.gradapi.double_node models create_graph through one op of SECOND;
    # through a write into a view (CopySlices) it is NotModelled, never drawn
    "create_graph_detached@view_writes": "create_graph through CopySlices is not modelled",
}
_DIFFERENTIAL_PLANTS = sorted(
    n for n, p in PLANTS.items() if not p.breaks.startswith("schema.") and n not in UNDRAWN
)


def _known_failures_for(rule: str) -> list[str]:
    """The shipped list stays on, so that torch's own known bugs (pytorch#34082
    on every release) are kept aside while the search goes on to the plant;
    a plant of a rule the list excuses outright runs without it."""
    entries = known_failures.load(known_failures.SHIPPED)
    excused = any(
        e.applies_to_build(torch.__version__) and e.covers(rule, "cpu") and not e.narrowed
        for e in entries
    )
    return ["--no-known-failures"] if excused else []


# As in test_planted.py: a plant met only where a seed draws it (one dtype,
# one op family) is looked for at the first seeds in turn.
SEEDS = (0, 1, 2)


@pytest.mark.parametrize("name", _DIFFERENTIAL_PLANTS)
def test_differential_catches_planted_violation(name, tmp_path):
    plant = PLANTS[name]
    for seed in SEEDS:
        run = run_suite(
            "-k", "differential",  # the property tests deselected
            "--profile", "ci",
            "--seed", str(seed),
            "--workers", "0",
            *_known_failures_for(plant.breaks),
            "--report-dir", str(tmp_path),
            "--report-name", "planted",
            "-q",
            plant=name,
            report=True,
        )  # fmt: skip
        if plant.breaks in run.violated:
            break
    assert run.returncode == 1, f"{name} ({plant.what}) went unnoticed:\n{run.stdout[-3000:]}"
    assert plant.breaks in run.violated, (
        f"{name} should break {plant.breaks}, the differential reported {sorted(run.violated)}"
    )
    report = json.loads((tmp_path / "planted.json").read_text())
    failures = report["invariants"][plant.breaks]["failures"]
    scripts = [f["repro"] for f in failures if f.get("repro")]
    assert scripts, f"no repro script for {plant.breaks}"
    # checked in a fresh process (on the planted build) before it was shown
    checked = [f["reproduced"] for f in failures if f.get("reproduced")]
    assert checked and all(c[:1] == ["yes"] for c in checked), checked
    assert f"VIOLATED {plant.breaks} [cpu] (reproduced in a fresh process: yes)" in run.stdout
    imports = [line for line in scripts[0].splitlines() if line.startswith(("import ", "from "))]
    assert imports == ["import torch"], f"the repro imports more than torch: {imports}"
    patched = run_repro(scripts[0], tmp_path, name)
    assert patched is not None, f"the repro did not finish on the patched torch:\n{scripts[0]}"
    assert patched.returncode != 0, f"the repro passed on the patched torch:\n{scripts[0]}"
    clean = run_repro(scripts[0], tmp_path, None)
    assert clean is not None and clean.returncode == 0 and "ok: torch keeps" in clean.stdout, (
        f"the repro failed on a clean torch:\n{clean.stdout}{clean.stderr}\n{scripts[0]}"
    )
