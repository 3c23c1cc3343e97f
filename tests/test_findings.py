"""The findings registry (conformance/findings.toml): its entries are sound,
docs/findings.md and the README's count are what it renders, and each repro,
run on the installed torch in a process of its own, does what the registry
says of that release (bad, good, or not applicable).

The repros run in one server per xdist worker, which imports torch once and
forks a child per repro (conformance/findings.py, `ReproRunner`): a repro
that segfaults takes only its child down."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import version

import pytest

from conformance import findings
from conformance.invariants import INVARIANTS
from conformance.known_failures import SHIPPED
from conformance.known_failures import load as load_known

FINDINGS = findings.load()
RELEASE = version("torch").split("+")[0]


@pytest.fixture(scope="module")
def runner() -> Iterator[findings.ReproRunner]:
    with findings.ReproRunner() as server:
        yield server


@pytest.mark.parametrize("finding", FINDINGS, ids=[f.id for f in FINDINGS])
def test_repro_does_what_the_registry_says(
    finding: findings.Finding, runner: findings.ReproRunner
) -> None:
    claim = finding.claim(RELEASE)
    if claim == findings.NOT_APPLICABLE:
        pytest.skip(f"not applicable on torch {RELEASE} (versions {finding.versions})")
    result = runner.run(finding)
    verdict = finding.verdict(result)
    seen = f"{result.status} {result.code} after {result.seconds:.1f} s:\n{result.output}"
    assert verdict != findings.BROKEN, (
        f"the repro of {finding.id} failed without showing {finding.shows!r}: {seen}"
    )
    if claim is None:
        pytest.skip(f"torch {RELEASE} is not triaged for {finding.id}: its repro says {verdict}")
    assert verdict == claim, (
        f"{finding.id} is {claim} on torch {RELEASE} in the registry, the repro says "
        f"{verdict} ({seen}): record the release with `python tools/findings.py --run --record`"
    )


def test_every_finding_names_known_rules_and_a_kind() -> None:
    for f in FINDINGS:
        assert f.kind in findings.KINDS, f.id
        assert set(f.invariants) <= set(INVARIANTS), f"{f.id}: unknown rules"
        assert f.upstream.startswith("https://") or f.relation == "none found", f.id
        assert f.searched, f"{f.id}: say what was searched upstream"
        assert f.bad or f.good, f"{f.id}: run on no release (tools/findings.py --run --record)"


def test_known_failures_point_at_findings_that_exist() -> None:
    ids = {f.id for f in FINDINGS}
    pointing = [k for k in load_known(SHIPPED) if k.finding is not None]
    assert pointing, "no known-failure entry names its finding"
    for k in pointing:
        assert k.finding in ids, f"{k.where}: finding {k.finding!r} is not in the registry"


def test_the_page_and_the_readme_are_generated_from_the_registry() -> None:
    assert not findings.stale(FINDINGS), "stale: run `python tools/findings.py --write`"


def test_the_counts_count_bugs_apart() -> None:
    line = findings.count_line(FINDINGS)
    bugs = sum(f.is_bug for f in FINDINGS)
    assert line.startswith(f"{bugs} torch bugs (")
    assert f"{len(FINDINGS) - bugs} findings that are not bugs" in line


def test_a_broken_repro_is_neither_bad_nor_good(runner: findings.ReproRunner) -> None:
    """A repro that fails without showing its output is broken: a typo or a
    missing API never passes for the bug."""
    base = FINDINGS[0]
    broken = findings.Finding(**{**base.__dict__, "repro": "import torch\ntorch.no_such_api()\n"})
    good = findings.Finding(**{**base.__dict__, "repro": "import torch\n"})
    segfault = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"
    crash = findings.Finding(**{**base.__dict__, "shows": ("SIGSEGV",), "repro": segfault})
    assert broken.verdict(runner.run(broken)) == findings.BROKEN
    assert good.verdict(runner.run(good)) == findings.GOOD
    assert crash.verdict(runner.run(crash)) == findings.BAD
