"""Which classes of each op's arguments a run drew (issue 33): every class a
row of the op registry declares (strategies.argspace), with how often the
run's tests drew it, so that a region no test draws shows as a 0. Gathered
from the tests' coverage for the summary and the reports; imports no torch."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from conformance.outcomes import TestOutcome
from oracle import OPS


def tally(outcomes: Iterable[TestOutcome]) -> dict[str, dict[str, int]]:
    """op -> {"argument: class": times drawn} for every row with an argument
    space, in the table's order; empty when no test drew arguments at all."""
    total: Counter[tuple[str, str]] = Counter()
    for outcome in outcomes:
        for op, classes in outcome.coverage.get("args", {}).items():
            total.update({(op, name): n for name, n in classes.items()})
    if not total:
        return {}
    return {
        name: {c: total[(name, c)] for c in spec.args.declared}
        for name, spec in OPS.items()
        if spec.args is not None
    }


def never_drawn(counts: dict[str, dict[str, int]]) -> list[str]:
    """The declared classes no test drew, as "op: argument: class"."""
    return [f"{op}: {c}" for op, classes in counts.items() for c, n in classes.items() if not n]
