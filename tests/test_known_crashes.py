"""Known crashes: a crash on the known-failure list (torch's own bug, on an
input the suite draws) is still reported crashed, with its input and repro,
but does not fail the run; any other crash still does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from packaging.version import Version

from conformance import evidence, harness, outcomes, watch
from conformance.differential import crash_patterns, isolation
from conformance.differential.crash_repro import crash_script, run_script
from conformance.differential.lockstep import execute
from conformance.differential.program_check import check_program
from conformance.known_failures import SHIPPED, KnownFailuresError, load
from conformance.known_search import reports_known_at_the_end
from strategies.programs import Program, Step
from tests.conftest import run_suite
from tests.test_lazy_reads import HOOKED, STALE

PROPERTY = "test_detach.py::test_detach_shares_storage"
SEED = "test_seeds.py::test_seed000_detach[cpu]"


def _list(tmp_path: Path, **fields) -> Path:
    entry = {
        "status": "crashed",
        "test": PROPERTY,
        "reason": "planted by the project's tests",
        "link": "https://example.invalid/issue/2",
        **fields,
    }
    lines = ["[[known]]"] + [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
    path = tmp_path / "known.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_known_crash_is_matched_by_test_target_message_and_example(tmp_path):
    (entry,) = load(
        _list(
            tmp_path,
            test="test_compiled.py::test_compiled_agrees_with_eager",
            target="aot_eager",
            message="Segmentation fault",
            example=["retain_grad()", ".backward("],
        )
    )
    node = "test_compiled.py::test_compiled_agrees_with_eager[aot_eager-cpu-0]"
    example = "t5.retain_grad()\nt7.div_(2)\nt7.backward(t9)"
    fatal = "Fatal Python error: Segmentation fault"
    assert entry.covers_crash(node, example, fatal)
    assert not entry.covers_crash(node.replace("aot_eager", "eager"), example, fatal)
    # inductor is built on aot_eager: aot_eager's known crashes are its own
    assert entry.covers_crash(node.replace("aot_eager", "inductor"), example, fatal)
    assert not entry.covers_crash(node, example, "Fatal Python error: Aborted")
    assert not entry.covers_crash(node, "t7.backward(t9)", fatal)  # no retain_grad()
    assert not entry.covers_crash("test_detach.py::test_detach_shares_storage[cpu]", example, fatal)
    # a crash entry never turns a violation into an xfail
    assert not entry.covers("", "cpu/aot_eager")
    assert entry.label == "crash in test_compiled.py::test_compiled_agrees_with_eager [aot_eager]"


@pytest.mark.parametrize(
    "fields, needle",
    [
        ({"status": "hung"}, "status can only be 'crashed'"),
        ({"test": None}, "missing ['test']"),
        ({"example": "retain_grad()"}, "example must be a list of strings"),
    ],
)
def test_a_bad_crash_entry_is_refused(tmp_path, fields, needle):
    path = _list(tmp_path, **{k: v for k, v in fields.items() if v is not None})
    if fields.get("test", "") is None:
        path.write_text("\n".join(ln for ln in path.read_text().splitlines() if "test =" not in ln))
    with pytest.raises(KnownFailuresError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        load(path)


@pytest.mark.slow
@pytest.mark.parametrize(
    "example, listed", [(["Draw 1 (source)"], True), (["no such input"], False)]
)
def test_a_listed_crash_does_not_fail_the_run_and_another_still_does(tmp_path, example, listed):
    known = _list(tmp_path, message="Segmentation fault", example=example)
    run = run_suite(
        "--invariants", "detach.shares_storage",
        "-k", "test_detach_shares_storage or seed",
        "--profile", "ci", "--devices", "cpu", "--workers", "2",
        "--no-known-failures", "--known-failures", str(known),
        "--report-dir", str(tmp_path / "out"),
        plant="segfault@rank3", report=True,
    )  # fmt: skip
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    (problem,) = report["unfinished"]
    assert problem["status"] == "crashed" and "Draw 1 (source)" in problem["example"]
    assert {t["nodeid"]: t["status"] for t in report["tests"]}[SEED] == "passed"
    if listed:
        assert run.returncode == 0, run.stdout[-3000:]
        assert "planted by the project's tests" in problem["known"]
        assert f"{PROPERTY}[cpu] known" in report["summary"]["text"]
        assert report["invariants"]["detach.shares_storage"]["status"] == "xfailed"
        assert (
            "A known failure, expected on this build"
            in (tmp_path / "out" / "report.html").read_text()
        )
    else:
        assert run.returncode == 1, run.stdout[-3000:]
        assert problem["known"] == ""
        assert report["invariants"]["detach.shares_storage"]["status"] == "crashed"


# --- A differential program that reaches a known crash pattern runs in a child
# (conformance/differential/crash_patterns.py, isolation.py)

DIFFERENTIAL = "test_differential.py::test_torch_agrees_with_the_reference_model[cpu-0]"
# torch up to 2.14.1 segfaults on HOOKED's register_hook (findings.toml `bad`)
CRASHES_HERE = Version(torch.__version__).release < (2, 15)


def _search(monkeypatch, programs: list[Program]) -> tuple[list[int], BaseException | None]:
    """The differential's search over `programs`, as its test runs it (as one
    of its node IDs: pytest sets its own as each phase starts): the steps
    counted after each program, and what the search raised at the end."""
    monkeypatch.setenv("PYTEST_CURRENT_TEST", f"{DIFFERENTIAL} (call)")
    counted: list[int] = []

    def search() -> None:
        for program in programs:
            check_program(program, "cpu")
            counted.append(harness.COVERAGE.steps)

    harness.reset_coverage()
    try:
        reports_known_at_the_end(search)()
    except BaseException as error:  # noqa: BLE001 - the verdict under test
        return counted, error
    return counted, None


@pytest.fixture
def in_the_differential(monkeypatch):
    shipped = load(SHIPPED)
    monkeypatch.setattr(isolation, "known_failure_entries", lambda: shipped)
    return monkeypatch


def test_a_known_crash_in_a_program_is_reported_and_the_search_goes_on(in_the_differential):
    hooked = Program(HOOKED, reads="lazy")
    following = [Program(STALE, reads=reads) for reads in ("", "no_grad", "lazy")]
    steps = [execute(p)[0].steps_checked for p in following]
    assert all(steps), steps
    counted, raised = _search(in_the_differential, [hooked, *following])
    assert len(counted) == 1 + len(following)  # every program after the crash ran
    if not CRASHES_HERE:  # a build with the fix: the child's lockstep check counts
        assert raised is None
        assert counted[0] == len(HOOKED)
        return
    assert isinstance(raised, watch.CrashedInChild), raised
    problem = raised.problem
    assert problem["status"] == "crashed" and "Segmentation fault" in problem["detail"]
    assert "register_hook on a view whose base was written" in problem["known"]
    assert "1 program(s) crashed this way" in problem["note"]
    # the crashed program counts no step; each following one is checked in full
    assert counted == [0, *(sum(steps[: i + 1]) for i in range(len(steps)))]
    # the step running when it crashed is the hook (HOOKED's step 4), and the
    # repro script crash_repro.py makes of it crashes a fresh interpreter too
    example = evidence.example_text(problem["entries"])
    running = [line for line in example.splitlines() if "<- running when it happened" in line]
    hooked = "register_hook(lambda g: g if g is None else g * 2.0)"
    assert len(running) == 1 and hooked in running[0]
    script, program = evidence.repro_for(
        outcomes.TestOutcome(DIFFERENTIAL, (), "cpu", "crashed"), problem["entries"]
    )
    assert len(program.steps) == 5
    assert run_script(script, 60)[0] == "crashed"


@pytest.mark.skipif(not CRASHES_HERE, reason="torch has the fix for pytorch/pytorch#196459")
def test_a_crash_no_entry_covers_ends_the_search_as_a_crash(in_the_differential):
    in_the_differential.setattr(isolation, "known_failure_entries", lambda: [])
    counted, raised = _search(in_the_differential, [Program(HOOKED, reads="lazy"), Program(STALE)])
    assert isinstance(raised, watch.CrashedInChild), raised
    assert "known" not in raised.problem and counted == []


# the second output of aminmax, retained, written through a view, then backward:
# segfaults torch 2.4.1 to 2.14.1 (findings.toml: 2.0.1 computes)
SECOND_OUTPUT = [
    STALE[0],
    Step("aminmax_k", (0,), (1, False, 1)),
    Step("retain_grad", (1,)),
    Step("select", (1,), (0, 0)),
    Step("mul_s_", (2,), (2.0,)),
    Step("sum", (1,)),
    Step("backward", (3,), (False,)),
]


def test_a_retained_second_output_written_through_a_view_is_flagged():
    assert crash_patterns.reached(Program(SECOND_OUTPUT)) == (
        "retain-grad-second-output-view-write-segfault",
    )
    first = [SECOND_OUTPUT[0], Step("aminmax_k", (0,), (1, False, 0)), *SECOND_OUTPUT[2:]]
    assert not crash_patterns.reached(Program(first))  # output 0: no crash
    unwritten = [*SECOND_OUTPUT[:4], *SECOND_OUTPUT[5:]]
    assert not crash_patterns.reached(Program(unwritten))


@pytest.mark.parametrize("piece, flagged", [(1, True), (0, False), (-1, True), (-2, False)])
def test_a_retained_later_piece_of_unsafe_split_written_through_a_view_is_flagged(piece, flagged):
    # x.unsafe_split_with_sizes([1, 2], 1)[1], retained, written through a view,
    # then backward: segfaults torch 2.13.0 as aminmax's second output does
    # (piece 1 is output 1 of UnsafeSplitWithSizesBackward0); 2.0.1 computes.
    # Counted from the end, [-1] is output 1 too (the seed-1 default run crashed
    # in-process on x.unsafe_split(2, 1)[-1] while the model said output -1)
    split = Step("unsafe_split_with_sizes_k", (0,), ([1, 2], 1, piece))
    program = Program([SECOND_OUTPUT[0], split, *SECOND_OUTPUT[2:]])
    expected = ("retain-grad-second-output-view-write-segfault",) if flagged else ()
    assert crash_patterns.reached(program) == expected


def test_a_crashing_second_output_program_is_reported_and_the_search_goes_on(
    in_the_differential,
):
    following = [Program(STALE)]
    counted, raised = _search(in_the_differential, [Program(SECOND_OUTPUT), *following])
    steps = execute(following[0])[0].steps_checked
    if Version(torch.__version__).release < (2, 1):  # 2.0.1 computes: checked in full
        assert raised is None and counted == [len(SECOND_OUTPUT), len(SECOND_OUTPUT) + steps]
        return
    assert isinstance(raised, watch.CrashedInChild), raised
    assert "retain_grad" in raised.problem["known"] or "second output" in raised.problem["known"]
    assert counted == [0, steps]


def test_a_crash_repro_defines_the_custom_functions_its_chain_calls(tmp_path):
    # a crash repro runs on its own: AddDirty.apply needs AddDirty's class
    steps = [
        STALE[0],
        Step("leaf", leaf=STALE[0].leaf),
        Step("mul_s", (0,), (2.0,)),
        Step("fn_add_dirty_", (2, 1), (2.0,)),
    ]
    script = crash_script(Program(steps), "a planted crash")
    assert "class AddDirty(torch.autograd.Function):" in script
    assert run_script(script, 60.0) == ("ok", "")
