"""The report's data model: what one run found, as plain data.

The suite fills it (conformance.report_records, from pytest's reports and
the catalogue) and `Report.to_json` writes the JSON document; `reports`
renders and merges that document and imports nothing else from the suite, so
a page can be rebuilt, and builds compared, from the JSON files alone. This
module imports only the standard library: neither torch, nor pytest, nor the
rest of the suite.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

FORMAT = "torch-conformance-report"
# Bumped whenever a key is renamed or removed, so that a merge of old and new
# files fails loudly instead of showing empty cells.
SCHEMA_VERSION = 3  # 2: crashed, hung and internal-error statuses; "unfinished"; 3: not applicable

# A rule's status on a device, and over devices.
HELD, VIOLATED, SKIPPED, XFAILED, NOT_RUN = "held", "violated", "skipped", "xfailed", "not run"
# A rule whose catalogue `versions` leave the build out: nothing was checked
# (its API may not exist), so it is never held, whatever wide tests ran.
NOT_APPLICABLE = "not applicable"
# Tests that did not finish: their own statuses, as outcomes and as cell statuses.
CRASHED, HUNG, INTERNAL = "crashed", "hung", "internal error"
UNFINISHED = (CRASHED, HUNG, INTERNAL)
# Every status, in the order the pages list them (the legend's)
STATUSES = (HELD, VIOLATED, *UNFINISHED, SKIPPED, XFAILED, NOT_APPLICABLE, NOT_RUN)


@dataclass
class Build:
    """The installed torch, and the interpreter and machine it ran on."""

    torch: str
    git_version: str = "unknown"
    build: str = ""  # "CPU", "CUDA 12.4", "ROCm 6.2"
    backend: str = ""
    debug: bool = False
    cuda: str | None = None
    hip: str | None = None
    python: str = ""
    python_implementation: str = ""
    executable: str = ""
    platform: str = ""
    machine: str = ""


@dataclass
class Device:
    """A device the run asked for; `reason` says why one is absent."""

    name: str
    present: bool
    reason: str = ""


@dataclass
class Target:
    """A torch.compile target (--compile); `reason` says why one was skipped."""

    name: str
    available: bool
    reason: str = ""


@dataclass
class Run:
    """The choices a run was made with, so two reports can be told apart."""

    suite_version: str = ""
    devices: list[Device] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    profile: str | None = None
    seed: int | None = None
    invariants: str | None = None  # the --invariants pattern
    targets: list[Target] = field(default_factory=list)
    started: str = ""
    finished: str = ""
    duration_s: float | None = None
    workers: int | str | None = None
    args: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Run:
        fields = dict(data)
        fields["devices"] = [Device(**d) for d in fields.get("devices", [])]
        fields["targets"] = [Target(**t) for t in fields.get("targets", [])]
        return cls(**fields)


@dataclass
class Rule:
    """A catalogue entry: the invariant, and the sentence of the docs it rests on."""

    id: str
    family: str
    statement: str
    quote: str  # the source's own sentence
    source: str  # where it is
    versions: str  # the torch releases it applies to


@dataclass
class Cell:
    """One rule on one device."""

    status: str
    examples: int
    dtypes: dict[str, int]  # examples per dtype, in the catalogue's dtype order
    reasons: list[str]  # skip reasons
    known: list[str]  # the known failures it was xfailed by
    outcomes: dict[str, int]  # its tests' outcomes, counted
    tests: list[str]  # node IDs


@dataclass
class Evidence:
    """A test that showed a rule violated: what it said, its input, a repro."""

    nodeid: str
    device: str
    outcome: str  # pytest's category
    when: str
    crashed: bool
    message: str
    example: str
    repro: str
    # [verdict, what the process said]: its repro, run in a fresh process
    reproduced: list[str]
    traceback: str


@dataclass
class Verdict:
    """One rule over the run: its status, and what shows it."""

    rule: Rule
    applies: bool
    status: str
    reasons: list[str]
    known: list[str]
    examples: int
    dtypes: dict[str, int]
    devices: dict[str, Cell]
    failures: list[Evidence]
    # focused tests of this rule that crashed, hung or hit an internal error
    unfinished: list[str]

    def to_json(self) -> dict[str, Any]:
        entry = asdict(self)
        return {**entry.pop("rule"), **entry}


@dataclass
class TestResult:
    """One test outcome pytest counted (a test may have several: setup, call, teardown)."""

    __test__ = False  # a data class, not a test, for pytest's collection

    nodeid: str
    outcome: str  # pytest's category
    when: str  # setup, call, teardown; "???" for a crashed worker
    device: str
    invariants: list[str]
    violated: list[str]
    status: str  # the suite's: passed, failed, ...; crashed, hung, internal error
    message: str
    crashed: bool
    examples: int
    dtypes: dict[str, int]
    not_in_build: dict[str, int]
    duration_s: float


@dataclass
class Unfinished:
    """A test that crashed, hung or hit an internal error: what it ran, a
    repro, and what happened."""

    nodeid: str
    status: str
    device: str
    invariants: list[str]
    message: str
    detail: str
    example: str
    repro: str
    repro_note: str
    known: str  # a crash on the known-failure list: its entry
    minimized: str
    traceback: str
    when: str


@dataclass
class Summary:
    """The run in numbers: rules per status, and tests that did not finish."""

    text: str
    invariants: int
    statuses: dict[str, int]  # status -> rules
    tests: dict[str, int]  # crashed, hung, internal error -> tests

    def to_json(self) -> dict[str, Any]:
        # The statuses sit beside the totals, as the pages and old files read them.
        return {
            "text": self.text,
            "invariants": self.invariants,
            **self.statuses,
            "tests": dict(self.tests),
        }


@dataclass
class Report:
    """One run's report."""

    build: Build
    run: Run
    summary: Summary
    counts: dict[str, int]  # pytest's categories, in its summary line's order
    collected: int | None
    not_run: list[str]  # collected tests that did not run
    invariants: dict[str, Verdict]  # in catalogue order
    # combinations skipped because the build lacks a kernel, never violations
    not_in_build: dict[str, int]
    tests: list[TestResult]
    # tests that crashed, hung or hit an internal error, each with its input and repro
    unfinished: list[Unfinished]
    # the schema sweep's verdicts per device (conformance.schema.summary), and its lines
    operators: dict[str, Any]
    complete: bool = True
    incomplete_reason: str | None = None
    exit_status: int | None = None
    # op -> {"argument: class": times drawn} for the rows with an argument space
    # (conformance.argument_coverage), 0 for a class no test drew
    arguments: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON document (`reports` reads it back as a dict)."""
        return {
            "format": FORMAT,
            "schema_version": SCHEMA_VERSION,
            "complete": self.complete,
            "incomplete_reason": self.incomplete_reason,
            "exit_status": self.exit_status,
            "build": asdict(self.build),
            "run": asdict(self.run),
            "summary": self.summary.to_json(),
            "counts": dict(self.counts),
            "collected": self.collected,
            "not_run": list(self.not_run),
            "invariants": {key: v.to_json() for key, v in self.invariants.items()},
            "not_in_build": dict(self.not_in_build),
            "tests": [asdict(t) for t in self.tests],
            "unfinished": [asdict(u) for u in self.unfinished],
            "operators": self.operators,
            "arguments": {op: dict(classes) for op, classes in self.arguments.items()},
        }
