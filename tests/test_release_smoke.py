"""The release smoke's own logic (tools/release_smoke.py): what it asks for,
the table it writes and where; the runs themselves are CI's (.ci/run)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("release_smoke", ROOT / "tools/release_smoke.py")
smoke = importlib.util.module_from_spec(_spec)
sys.modules["release_smoke"] = smoke  # (its dataclasses look their module up)
_spec.loader.exec_module(smoke)


def _result(**fields) -> object:
    defaults = dict(
        leg="2.0.1", seed=0, exit_status=0, seconds=91.6, torch="2.0.1+cu117",
        counts={"held": 95, "xfailed": 4, "skipped": 7}, tests={}, not_in_build=3015,
    )  # fmt: skip
    return smoke.Result(**(defaults | fields))


def test_the_legs_are_the_oldest_releases_and_the_newest():
    pins = {name: leg.pins for name, leg in smoke.LEGS.items()}
    assert pins["2.0.1"] == ["torch==2.0.1", "numpy==1.26.*"]
    assert pins["2.4.1-numpy1"] == ["torch==2.4.1", "numpy==1.26.*"]
    assert pins["2.14.1"][0] == "torch==2.14.1"
    # the project's tests' Hypothesis: a seed draws what it draws there
    assert smoke._hypothesis_pin().startswith("hypothesis==")


def test_a_row_says_every_count_and_the_tests_that_did_not_finish():
    row = _result(tests={"crashed": 0, "internal error": 1}).row
    assert row == (
        "| 2.0.1 | 2.0.1+cu117 | 0 | 0 | 95 held, 4 xfailed, 7 skipped, 0 not applicable, "
        "0 violated; tests: 1 internal error | 3015 | 92 |"
    )


def test_the_table_goes_between_the_markers_and_nowhere_else(tmp_path):
    target = tmp_path / "releases.md"
    target.write_text(f"# t\n\nbefore\n{smoke.BEGIN}\nold\n{smoke.END}\nafter\n")
    text = smoke.table([_result(), _result(seed=1, exit_status=1)])
    smoke.write_table(text, target)
    page = target.read_text()
    assert page.startswith("# t\n\nbefore\n") and page.endswith(f"{smoke.END}\nafter\n")
    assert "old" not in page and "| 2.0.1 | 2.0.1+cu117 | 1 | 1 |" in page
    assert "commit " in page and "Measured by `python tools/release_smoke.py` on " in page
    # docs/releases.md has the markers the smoke writes between
    assert smoke.TABLE_PAGE == ROOT / "docs" / "releases.md"
    page = smoke.TABLE_PAGE.read_text()
    assert smoke.BEGIN in page and smoke.END in page
    assert smoke._parse(["--write-table"]).write_table and smoke._parse(["--readme"]).write_table


def test_an_unknown_leg_or_a_bad_seed_is_one_line_and_exit_2(capsys):
    for argv in (["--legs", "2.3.0"], ["--seeds", "zero"]):
        with pytest.raises(SystemExit) as stopped:
            smoke.main(argv)
        assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "unknown leg 2.3.0: the legs are 2.0.1, 2.4.1-numpy1, 2.14.1" in err
    assert "--seeds 'zero' is not a comma-separated list of integers" in err
