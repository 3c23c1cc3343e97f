"""A violation's repro, run in a fresh process before it is shown
(conformance/repro_check.py): a script that fails reproduces, one that
passes does not, and the run says which."""

from __future__ import annotations

from conformance import repro_check


def test_a_failing_script_reproduces_and_a_passing_one_does_not():
    failing = "import torch\nassert torch.zeros(1).sum() == 1, 'sum of zeros is 0'\n"
    verdict, said = repro_check.reproduces(failing)
    assert verdict == repro_check.YES and "sum of zeros is 0" in said
    passing = "import torch\nprint('ok: torch keeps clone.new_storage')\n"
    assert repro_check.reproduces(passing)[0] == repro_check.NO


def test_a_script_that_hangs_is_unclear():
    verdict, said = repro_check.reproduces("import time\ntime.sleep(30)\n", timeout=1)
    assert verdict == repro_check.UNCLEAR and "did not finish" in said


def test_the_script_runs_outside_the_project_with_torch_alone():
    # the fresh process must not import the project's modules by accident
    script = (
        "import importlib.util, sys\n"
        "sys.exit(importlib.util.find_spec('conformance') is not None)\n"
    )
    assert repro_check.reproduces(script)[0] == repro_check.NO
