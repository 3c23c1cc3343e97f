"""Coverage of the op registry's argument spaces (issue 33): each test's
coverage carries the classes it drew, the report lists every declared class
with how often the run drew it (0: never), in the JSON and the HTML."""

from __future__ import annotations

from random import Random

from conformance import argument_coverage, harness
from conformance.outcomes import TestOutcome
from conformance.report_records import build_report
from conformance.results import Build, Run
from oracle import OPS
from reports.html import render_report
from strategies.argspace import DRAWN, Operand, RandomPick
from strategies.view_args import SPACES
from tests.report_helpers import samples

REGISTRY = {name for name, spec in OPS.items() if spec.args is not None}


def _outcome(args: dict) -> TestOutcome:
    return TestOutcome("test_x.py::test[cpu]", (), "cpu", "passed", coverage={"args": args})


def test_a_tests_coverage_carries_the_classes_it_drew():
    harness.reset_coverage()
    SPACES["narrow"].draw(RandomPick(Random(0)), Operand((2, 3)))
    drawn = harness.COVERAGE.as_dict()["args"]["narrow"]
    assert sum(drawn.values()) == 3  # one class per argument here
    assert set(drawn) <= set(SPACES["narrow"].declared)
    harness.reset_coverage()
    assert not DRAWN and "args" not in harness.COVERAGE.as_dict()


def test_every_declared_class_is_listed_and_the_undrawn_ones_named():
    counts = argument_coverage.tally(
        [
            _outcome({"narrow": {"dim: counted from the start": 2}}),
            _outcome({"narrow": {"dim: counted from the start": 1, "start: 0": 4}}),
        ]
    )
    assert set(counts) == REGISTRY
    assert counts["narrow"]["dim: counted from the start"] == 3
    assert counts["narrow"]["start: 0"] == 4
    assert counts["narrow"]["dim: counted from the end"] == 0
    assert list(counts["narrow"]) == list(SPACES["narrow"].declared)
    never = argument_coverage.never_drawn(counts)
    assert "narrow: dim: counted from the end" in never
    assert "narrow: start: 0" not in never
    assert argument_coverage.tally([_outcome({})]) == {}  # no test drew arguments


def test_the_json_and_the_html_show_the_classes_drawn():
    records = samples.records()
    records[0].outcome.coverage["args"] = {"narrow": {"dim: counted from the start": 5}}
    report = build_report(
        records, build=Build(**samples.BUILD), run=Run.from_json(samples.RUN)
    ).to_json()
    assert report["arguments"]["narrow"]["dim: counted from the start"] == 5
    assert report["arguments"]["narrow"]["dim: counted from the end"] == 0
    page = render_report(report)
    assert 'id="argument-table"' in page
    assert '<span class="never">dim: counted from the end (0)</span>' in page
    assert "dim: counted from the start (5)" in page
    assert 'id="argument-table"' not in render_report(samples.report())  # none drawn: no table
