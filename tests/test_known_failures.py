"""Known-failure lists, end to end: a listed violation is an xfail, a stale
entry warns, a listed invariant that holds is an error under --strict-xfail,
and a list that cannot be read is a usage error."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import known_failures
from tests.conftest import run_suite

pytestmark = pytest.mark.slow

PLANT = "detach_copies@float64"  # detach() of float64 returns a copy
INVARIANT = "detach.shares_storage"


def _entries(tmp_path: Path, *entries: dict[str, str]) -> str:
    lines = []
    for entry in entries:
        lines.append("[[known]]")
        lines += [f"{key} = {value!r}" for key, value in entry.items()]
    path = tmp_path / "known.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _entry(**fields: str) -> dict[str, str]:
    return {
        "invariant": INVARIANT,
        "reason": "planted by the project's tests",
        "link": "https://example.invalid/issue/1",
        **fields,
    }


def _run(known: str, *extra: str, plant: str | None = PLANT, report: bool = False):
    return run_suite(
        "--invariants", INVARIANT,
        "-k", "not differential",
        "--profile", "planted",
        "--workers", "0",
        "--no-known-failures",  # the shipped list off: only the one under test
        "--known-failures", known,
        *extra,
        plant=plant,
        report=report,
    )  # fmt: skip


def _summary(run) -> str:
    return run.stdout.split("== invariants ==")[-1]


def test_the_plant_is_a_violation_without_the_entry(tmp_path):
    run = _run(_entries(tmp_path, _entry(invariant="clone.new_storage")))
    assert run.returncode == 1, run.stdout[-3000:]
    assert INVARIANT in run.violated


@pytest.mark.parametrize("scope", [{}, {"dtype": "float64"}, {"device": "cpu"}])
def test_a_listed_violation_is_an_xfail(tmp_path, scope):
    run = _run(_entries(tmp_path, _entry(**scope)))
    assert run.returncode == 0, run.stdout[-3000:]
    assert not run.violated
    assert "xfailed" in _summary(run), run.stdout[-3000:]


def test_a_fixed_bug_says_which_release_fixed_it(tmp_path):
    """Older releases' bugs: "known failure ..., fixed in X" in the summary and
    the JSON report; a release at or after X is not excused."""
    known = _entries(tmp_path, _entry(versions=">=2.0,<99", fixed="99.0"))
    run = _run(known, "--report-dir", str(tmp_path / "report"), report=True)
    assert run.returncode == 0, run.stdout[-3000:]
    assert f"known failure {INVARIANT}, fixed in 99.0: planted" in run.stdout, run.stdout[-3000:]
    report = (tmp_path / "report" / "report.json").read_text()
    assert "fixed in 99.0" in report
    excused_before = _run(_entries(tmp_path, _entry(versions="<2.0", fixed="2.0")))
    assert excused_before.returncode == 1 and INVARIANT in excused_before.violated


def test_an_entry_for_another_dtype_does_not_hide_the_violation(tmp_path):
    run = _run(_entries(tmp_path, _entry(dtype="float32")))
    assert run.returncode == 1, run.stdout[-3000:]
    assert INVARIANT in run.violated


@pytest.mark.parametrize(
    "entry, why",
    [
        (_entry(invariant="detach.no_such_rule"), "no invariant is called"),
        (_entry(device="cuda:3"), "device cuda:3 is not in this run"),
        (_entry(dtype="float16"), "dtype float16 is not in this run"),
    ],
)
def test_an_entry_that_matches_nothing_warns(tmp_path, entry, why):
    known = _entries(tmp_path, entry)
    run = run_suite(
        "--invariants", INVARIANT,
        "-k", "not differential",  # every release breaks a differential rule (pytorch#34082)
        "--dtypes", "float32,float64",
        "--profile", "ci",
        "--no-known-failures",
        "--known-failures", known,
        "-q",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    output = run.stdout + run.stderr
    assert "matches nothing" in output and why in output, output[-3000:]


def test_a_listed_invariant_that_holds_warns_and_fails_under_strict_xfail(tmp_path):
    known = _entries(tmp_path, _entry())
    lenient = _run(known, plant=None)
    assert lenient.returncode == 0, lenient.stdout[-3000:]
    assert f"warning: known failure {INVARIANT} unexpectedly holds" in lenient.stdout
    strict = _run(known, "--strict-xfail", plant=None)
    assert strict.returncode == 1, strict.stdout[-3000:]
    assert f"ERROR (--strict-xfail): known failure {INVARIANT} unexpectedly holds" in strict.stdout


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[[known]]\ninvariant = 'clone.new_storage'\n", "missing ['link', 'reason']"),
        ("[[known]\n", "cannot be read"),
        (
            "[[known]]\ninvariant='a'\nreason='r'\nlink='l'\nversions='two'\n",
            "is not a version specifier",
        ),
        (
            "[[known]]\ninvariant='a'\nreason='r'\nlink='l'\nversions='<2.2'\nfixed='2.1'\n",
            "fixed in 2.1, but its versions '<2.2' include that release",
        ),
        (
            "[[known]]\ninvariant='a'\nreason='r'\nlink='l'\nversions='<2.1'\nfixed='soon'\n",
            "fixed 'soon' is not a release",
        ),
    ],
)
def test_a_list_that_cannot_be_read_is_a_usage_error(tmp_path, text, needle):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    run = run_suite("--known-failures", str(path), "--invariants", INVARIANT)
    assert run.returncode == 4, run.stdout[-2000:] + run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], run.stderr


def test_a_message_may_list_alternatives(tmp_path):
    path = tmp_path / "known.toml"
    path.write_text(
        "[[known]]\ninvariant = 'copy.values_copied'\nreason = 'r'\nlink = 'l'\n"
        "message = ['.conj()', '.adjoint()']\n"
    )
    (entry,) = known_failures.load(path)
    assert entry.covers("copy.values_copied", "cpu", text="t2 = t1.adjoint()")
    assert entry.covers("copy.values_copied", "cpu", text="t2 = t1.conj()")
    assert not entry.covers("copy.values_copied", "cpu", text="t2 = t1.t()")
    path.write_text(path.read_text().replace("['.conj()', '.adjoint()']", "[]"))
    with pytest.raises(known_failures.KnownFailuresError, match="message must be"):
        known_failures.load(path)


def test_an_entry_may_name_a_glob_of_rules(tmp_path):
    """One bug seen through several rules: `*` with a message narrows to it."""
    path = tmp_path / "known.toml"
    path.write_text(
        "[[known]]\ninvariant = 'view.*'\nreason = 'r'\nlink = 'l'\nmessage = 'torch._foreach_'\n"
        "[[known]]\ninvariant = 'nothing.*'\nreason = 'r'\nlink = 'l'\n"
    )
    views, nothing = known_failures.load(path)
    text = "torch._foreach_mul_([t1, t3], [t4, t5])"
    assert views.covers("view.inplace_updates_base_grad", "cpu", text=text)
    assert not views.covers("copy.values_copied", "cpu", text=text)
    assert not views.covers("view.inplace_updates_base_grad", "cpu", text="t1.mul_(t4)")
    stale = known_failures.stale([views, nothing], "2.13.0", ("cpu",), ("float32",))
    assert [entry for entry, _ in stale] == [nothing]


def test_a_backend_that_builds_on_another_inherits_its_known_failures():
    from conformance.known_failures import KnownFailure

    # the planted backends need a torch whose Dynamo has them (not 2.0)
    pytest.importorskip("tests.compile_plants", exc_type=ImportError)

    entry = KnownFailure("compile.raises", "r", "l", "test", target="aot_eager")
    assert entry.covers("compile.raises", "cpu/aot_eager")
    assert entry.covers("compile.raises", "cpu/tests.compile_plants:rounds_float64")
    assert not entry.covers("compile.raises", "cpu/eager")
    assert not entry.covers("compile.raises", "cpu/tests.site.nothing:here")  # no such backend
