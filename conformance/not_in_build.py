"""What a run skipped because the build lacks a kernel (conformance.build),
gathered from the tests' coverage for the summary and the reports. Imports
no torch: the reports read it from JSON alone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from conformance.outcomes import TestOutcome


def tally(outcomes: Iterable[TestOutcome]) -> dict[str, int]:
    """Reason ("not in this build: x.exp() for float16 on cpu") -> how many
    times a test or a chain skipped that combination, most frequent first."""
    total: Counter[str] = Counter()
    for outcome in outcomes:
        total.update(outcome.coverage.get("not_in_build", {}))
    return dict(sorted(total.items(), key=lambda item: (-item[1], item[0])))


def lines(counts: dict[str, int]) -> list[str]:
    """The summary's lines: one per missing kernel, with its count."""
    return [f"{reason} (skipped {n}x)" for reason, n in counts.items()]
