"""The run's summary in pytest's terminal: the violated rules, the expected
failures, the tests that crashed, hung or hit an internal error, and the
count line."""

from __future__ import annotations

import pytest
import torch

from conformance import argument_coverage, not_in_build, repro_check
from conformance.marking import unexpectedly_holding
from conformance.outcomes import (
    CRASHED,
    HUNG,
    INTERNAL,
    VIOLATED,
    XFAILED,
    TestOutcome,
    overall,
    tally,
)
from conformance.run_state import OUTCOMES
from conformance.schema.summary import schema_summary


def write_summary(terminalreporter, config: pytest.Config) -> None:
    counted = tally(OUTCOMES.values(), torch.__version__)
    cells = counted.cells
    write = terminalreporter.write_line
    terminalreporter.section("invariants")
    strict = config.getoption("strict_xfail")
    for entry in unexpectedly_holding(config):
        verdict = "ERROR (--strict-xfail)" if strict else "warning"
        write(
            f"{verdict}: known failure {entry.label} unexpectedly holds ({entry.where})",
            red=strict,
            yellow=not strict,
        )
    for invariant, by_device in cells.items():
        if overall(by_device) != VIOLATED:
            continue
        for device, cell in by_device.items():
            if cell.status == VIOLATED:
                broken = [t for t in cell.tests if invariant in t.broken]
                first = next((t for t in broken if t.reproduced), broken[0])
                checked = f" ({repro_check.label(first.reproduced[0])})" if first.reproduced else ""
                write(f"VIOLATED {invariant} [{device}]{checked}: {first.message}", red=True)
    for invariant, by_device in cells.items():
        for device, cell in by_device.items():
            for reason in cell.known if cell.status == XFAILED else ():
                write(f"XFAILED {invariant} [{device}]: {reason}", yellow=True)
    _write_unfinished(terminalreporter, counted.unfinished)
    parts = [f"{n} {status}" for status, n in counted.counts.items() if n]
    line = "invariants: " + ", ".join(parts)
    unreproduced = sorted(
        {i for t in OUTCOMES.values() if t.reproduced[:1] == (repro_check.NO,) for i in t.broken}
    )
    if unreproduced:  # counted apart: the violation was seen, its repro passes
        line += f" ({len(unreproduced)} of them not reproduced in a fresh process)"
    tests = counted.tests_line
    write(f"{line}; {tests}" if tests else line, bold=True)
    for line in not_in_build.lines(not_in_build.tally(OUTCOMES.values())):
        write(line, yellow=True)
    for line in schema_summary(OUTCOMES.values()):
        write(line)
    differential = [t for t in OUTCOMES.values() if t.coverage.get("steps")]
    if differential:
        steps = sum(t.coverage["steps"] for t in differential)
        chains = sum(t.coverage.get("examples", 0) for t in differential)
        seconds = sum(t.duration for t in differential)
        write(
            f"differential: {chains} chains, {steps} steps checked in lockstep, "
            f"{seconds:.1f} s of test time: {steps / max(seconds, 1e-9):.0f} steps/s per worker"
        )
    arguments = argument_coverage.tally(OUTCOMES.values())
    if arguments:
        declared = sum(len(classes) for classes in arguments.values())
        never = argument_coverage.never_drawn(arguments)
        line = f"argument classes: {declared - len(never)} of {declared} drawn"
        write(line + (f"; never: {', '.join(never)}" if never else ""), yellow=bool(never))


def _write_unfinished(terminalreporter, by_status: dict[str, list[TestOutcome]]) -> None:
    """One block per test that crashed or hung (the input it ran, its repro
    in the report), then the internal errors with their tracebacks."""
    write = terminalreporter.write_line
    for status in (CRASHED, HUNG):
        for test in by_status[status]:
            known = test.problem.get("known")
            head = f"{status.upper()} {test.nodeid}: {test.message.partition(': ')[2]}"
            write(head + (f" ({known})" if known else ""), red=not known, yellow=bool(known))
            for line in test.example.splitlines()[:12]:
                write(f"    {line}")
            if test.repro:
                write("    (a repro script is in the report)")
    if by_status[INTERNAL]:
        terminalreporter.section("internal error", red=True)
        for test in by_status[INTERNAL]:
            write(f"INTERNAL ERROR in {test.nodeid}: {test.problem.get('detail', '')}", red=True)
            write(test.problem.get("traceback", "").rstrip())
