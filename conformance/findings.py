"""The findings: torch behaviours the suite reported, as data.

`conformance/findings.toml` holds one `[[finding]]` per behaviour, with its
kind (a bug, or one of the kinds that are not), the rules it breaks, its
upstream link and how that link relates, the releases seen bad and good, and
its repro. docs/findings.md is rendered from it (`python tools/findings.py
--write`) and `tests/test_findings.py` runs every repro on the installed
torch. The known-failure entries a finding explains point at it
(`finding = "id"` in conformance/known-failures.toml); the registry reads
that link back rather than keeping a copy.

The repro contract: a repro is a script that imports torch (and the
standard library, NumPy) only and exits 0 when torch behaves as it should:
as documented, as eager does for a compiled call, as the rule says. It shows
the finding ("bad") by failing: an assertion, an uncaught error or a signal,
whose output holds the entry's `shows`. Any other failure is a broken repro,
never a verdict. Where the finding is not a bug, "bad" means only that the
behaviour described is there.

    >>> f = by_id()["int-fill-requires-grad"]
    >>> f.claim("2.13.0")
    'bad'
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from conformance.known_failures import SHIPPED
from conformance.known_failures import load as load_known

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

REGISTRY = Path(__file__).resolve().parent / "findings.toml"
SERVER = Path(__file__).resolve().parent / "findings_server.py"

# What a finding is. The first five are bugs (a missing error too: a
# promised error that does not come lets a wrong program run on); the others
# are findings a reviewer should know of that break no promise torch makes.
BUG_KINDS = (
    "bug: silent wrong result",
    "bug: crash",
    "bug: internal assert",
    "bug: valid program refused",
    "bug: missing error",
)
OTHER_KINDS = (
    "error class differs",
    "undefined behaviour",
    "schema annotation gap",
    "documentation contradicts behaviour",
    "limitation torch states",
)
KINDS = BUG_KINDS + OTHER_KINDS
RELATIONS = ("same bug", "related", "none found")
AREAS = {
    "eager": "Eager autograd, views and writes",
    "schema": "Operators against their schemas (`schema.*`)",
    "compile": "torch.compile",
}
BAD, GOOD, NOT_APPLICABLE, BROKEN = "bad", "good", "n.a.", "broken"
DEFAULT_TIMEOUT = 60.0


class FindingsError(ValueError):
    """A registry that cannot be read: one line, naming the entry."""


@dataclass(frozen=True)
class Finding:
    id: str
    title: str
    kind: str
    area: str
    invariants: tuple[str, ...]
    upstream: str  # a link, or "" where none was found
    relation: str  # RELATIONS
    searched: str  # what was searched upstream, and what came closest
    bad: tuple[str, ...]  # releases seen bad ("2.13.0")
    good: tuple[str, ...]  # releases seen good
    # substrings of a bad run's output, any one ("SIGSEGV" for the signal)
    shows: tuple[str, ...]
    repro: str
    notes: str = ""
    versions: str | None = None  # PEP 440: releases outside it are not applicable
    timeout: float = DEFAULT_TIMEOUT

    @property
    def is_bug(self) -> bool:
        return self.kind in BUG_KINDS

    @property
    def fixed_later(self) -> bool:
        """Seen bad on a release, and good on the newest release it was run on."""
        seen = sorted(self.bad + self.good, key=Version)
        return bool(self.bad) and bool(seen) and seen[-1] in self.good

    def claim(self, release: str) -> str | None:
        """What the registry says of `release` ("2.13.0", local label and
        all): bad, good, not applicable, or None where it was never run."""
        release = release.split("+")[0]
        if self.versions is not None and Version(release) not in SpecifierSet(self.versions):
            return NOT_APPLICABLE
        if release in self.bad:
            return BAD
        if release in self.good:
            return GOOD
        return None

    def verdict(self, result: RunResult) -> str:
        """The verdict a run gives: good (exit 0), bad (failed, showing
        `shows`), broken (anything else)."""
        if result.status == "exit" and result.code == 0:
            return GOOD
        if result.status in ("exit", "signal") and any(s in result.output for s in self.shows):
            return BAD
        return BROKEN


_REQUIRED = {"id", "title", "kind", "area", "upstream", "relation", "searched", "repro"}
_OPTIONAL = {"invariants", "bad", "good", "shows", "notes", "versions", "timeout"}


def load(path: Path = REGISTRY) -> list[Finding]:
    """The findings of `path`, checked field by field."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise FindingsError(f"findings registry {path} cannot be read: {error}") from None
    found: list[Finding] = []
    seen: set[str] = set()
    for number, entry in enumerate(document.get("finding", []), 1):
        where = f"{path.name}, finding {number} ({entry.get('id', '?')})"
        unknown = set(entry) - _REQUIRED - _OPTIONAL
        missing = _REQUIRED - set(entry)
        if unknown or missing:
            problem = f"unknown keys {sorted(unknown)}" if unknown else f"missing {sorted(missing)}"
            raise FindingsError(f"{where}: {problem}")
        if entry["id"] in seen:
            raise FindingsError(f"{where}: id {entry['id']!r} is used twice")
        seen.add(entry["id"])
        for key, allowed in (("kind", KINDS), ("relation", RELATIONS), ("area", tuple(AREAS))):
            if entry[key] not in allowed:
                raise FindingsError(f"{where}: {key} {entry[key]!r} is not one of {allowed}")
        if "versions" in entry:
            try:
                SpecifierSet(entry["versions"])
            except InvalidSpecifier:
                raise FindingsError(f"{where}: versions {entry['versions']!r}") from None
        bad, good = tuple(entry.get("bad", ())), tuple(entry.get("good", ()))
        if set(bad) & set(good):
            raise FindingsError(f"{where}: a release both bad and good: {set(bad) & set(good)}")
        if bad and not entry.get("shows"):
            raise FindingsError(f"{where}: seen bad, but no `shows` to tell bad from broken")
        found.append(
            Finding(
                id=entry["id"],
                title=entry["title"],
                kind=entry["kind"],
                area=entry["area"],
                invariants=tuple(entry.get("invariants", ())),
                upstream=entry["upstream"],
                relation=entry["relation"],
                searched=entry["searched"].strip(),
                bad=bad,
                good=good,
                shows=_strings(entry.get("shows", ())),
                repro=entry["repro"].strip() + "\n",
                notes=entry.get("notes", "").strip(),
                versions=entry.get("versions"),
                timeout=float(entry.get("timeout", DEFAULT_TIMEOUT)),
            )
        )
    return found


def _strings(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def by_id(path: Path = REGISTRY) -> dict[str, Finding]:
    return {f.id: f for f in load(path)}


def counts(findings: list[Finding]) -> dict[str, int]:
    """How many findings of each kind, in the order of KINDS."""
    return {k: n for k in KINDS if (n := sum(f.kind == k for f in findings))}


# --- running repros ---------------------------------------------------------


@dataclass(frozen=True)
class RunResult:
    status: str  # "exit", "signal" or "timeout"
    code: int  # the exit status, or the signal's number
    output: str  # stdout and stderr together (a signal adds its name)
    seconds: float


class ReproRunner:
    """One server process per runner: it imports torch once (and warms
    Dynamo and the dispatch modes up), then forks a child per repro, so that a
    repro that crashes takes only its child down and each starts from a
    clean torch. `python` is the interpreter whose torch is tested."""

    def __init__(self, python: str = sys.executable) -> None:
        self.python = python
        self._server: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self._server is None or self._server.poll() is not None:
            env = dict(os.environ, PYTHONFAULTHANDLER="1")
            self._server = subprocess.Popen(
                [self.python, str(SERVER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
        return self._server

    def run(self, finding: Finding) -> RunResult:
        server = self._start()
        assert server.stdin is not None and server.stdout is not None
        request = {"code": finding.repro, "name": finding.id, "timeout": finding.timeout}
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        ready, _, _ = select.select([server.stdout], [], [], finding.timeout + 120)
        line = server.stdout.readline() if ready else ""
        if not line:
            self.close()
            return RunResult("timeout", -1, "the repro server stopped answering", 0.0)
        answer = json.loads(line)
        return RunResult(answer["status"], answer["code"], answer["output"], answer["seconds"])

    def close(self) -> None:
        if self._server is not None:
            if self._server.poll() is None:
                self._server.kill()
            self._server.wait()
            for pipe in (self._server.stdin, self._server.stdout):
                if pipe is not None:
                    pipe.close()
            self._server = None

    def __enter__(self) -> ReproRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_all(findings: list[Finding], python: str = sys.executable) -> dict[str, tuple[str, float]]:
    """Each finding's verdict and seconds, run on `python`'s torch."""
    out = {}
    start = time.perf_counter()
    with ReproRunner(python) as runner:
        for f in findings:
            result = runner.run(f)
            out[f.id] = (f.verdict(result), result.seconds)
    out["(total)"] = ("", time.perf_counter() - start)
    return out


# --- the document -----------------------------------------------------------

DOC = Path(__file__).resolve().parent.parent / "docs" / "findings.md"
README = Path(__file__).resolve().parent.parent / "README.md"
# Sections not yet moved into the registry, kept verbatim (issue 30)
UNMIGRATED = Path(__file__).resolve().parent / "findings-unmigrated.md"
_README_LINE = "- [docs/findings.md](docs/findings.md): "

_INTRO = """\
<!-- Generated by `python tools/findings.py --write` from conformance/findings.toml:
     edit the registry, not this page. -->

# What the suite found

Behaviours of torch that the suite reported, each an entry of
`conformance/findings.toml` with its kind, the rules it breaks, its upstream
link and how that link relates, the releases it was seen bad and good on,
and its repro. `tests/test_findings.py` runs every repro on the installed
torch, each in a process of its own, and checks what the registry says of
that release (`tox -e findings` does so on every release of the matrix). A
repro exits 0 where torch behaves as it should; it shows the finding by
failing (an assertion, an error or a signal) with the entry's output.

{counts}

Only the first part counts as bugs: a silent wrong result, a crash, an
internal assert, a valid program refused, or a missing error. The second
part holds what a reviewer should know of but breaks no promise torch makes:
an error of another class where both refuse, behaviour the documentation
leaves undefined, an annotation the schema rules do not bind, documentation
that contradicts torch. How the suite copes with what is not a bug (kernels
a build lacks, error classes and behaviours that changed between releases):
[docs/releases.md](releases.md).
"""


def count_line(findings: list[Finding]) -> str:
    """The counts, bugs first: the one sentence the README and the page share."""
    bugs = [f for f in findings if f.is_bug]
    others = [f for f in findings if not f.is_bug]

    def listed(group: list[Finding]) -> str:
        return "; ".join(f"{kind.removeprefix('bug: ')} {n}" for kind, n in counts(group).items())

    return (
        f"{len(bugs)} torch bugs ({listed(bugs)}), and {len(others)} findings that "
        f"are not bugs ({listed(others)})"
    )


def _known_of(finding_id: str) -> list[str]:
    return [k.label for k in load_known(SHIPPED) if k.finding == finding_id]


def _releases(f: Finding) -> str:
    parts = []
    if f.bad:
        parts.append("seen bad on " + ", ".join(f.bad))
    if f.good:
        parts.append("good on " + ", ".join(f.good))
    if f.versions:
        parts.append(f"not applicable outside `{f.versions}`")
    return "; ".join(parts) or "not run on any release yet"


def _entry(f: Finding) -> str:
    upstream = f"{f.relation}: <{f.upstream}>" if f.upstream else f"{f.relation}"
    lines = [
        f"### {f.title}",
        "",
        f"- **Kind**: {f.kind} (`{f.id}`)",
    ]
    if f.invariants:
        lines.append("- **Rules**: " + ", ".join(f"`{i}`" for i in f.invariants))
    known = _known_of(f.id)
    if known:
        lines.append(
            "- **Known failures**: "
            + ", ".join(f"`{k}`" for k in known)
            + " (conformance/known-failures.toml)"
        )
    lines += [
        f"- **Releases**: {_releases(f)}",
        f"- **Upstream**: {upstream}. Searched: {f.searched}",
        "",
        "```python",
        f.repro.rstrip(),
        "```",
    ]
    if f.notes:
        lines += ["", f.notes]
    return "\n".join(lines)


def release_table(findings: list[Finding]) -> str:
    """Each finding against each release it was run on: bad, good, n.a., or
    - (not run), bugs first."""
    releases = sorted({r for f in findings for r in f.bad + f.good}, key=Version)
    lines = [
        "| finding | kind | " + " | ".join(releases) + " |",
        "|---|---|" + "---|" * len(releases),
    ]
    for f in sorted(findings, key=lambda f: not f.is_bug):
        cells = " | ".join(f.claim(r) or "-" for r in releases)
        lines.append(f"| `{f.id}` | {f.kind.removeprefix('bug: ')} | {cells} |")
    return "\n".join(lines)


def render(findings: list[Finding] | None = None) -> str:
    """docs/findings.md, from the registry (and, until issue 30 is done,
    the sections not yet moved into it)."""
    findings = load() if findings is None else findings
    out = [_INTRO.format(counts=f"The registry holds {count_line(findings)}.")]
    out.append("## By release\n")
    out.append(
        "What each repro showed on each release it was run on (`-`: not run; "
        "n.a.: the finding cannot be reached there):\n"
    )
    out.append(release_table(findings) + "\n")
    for part, bug in (("Bugs", True), ("Not bugs", False)):
        out.append(f"# {part}\n")
        part_of = [f for f in findings if f.is_bug == bug]
        groups = [
            (heading, [f for f in part_of if f.area == area and not f.fixed_later])
            for area, heading in AREAS.items()
        ]
        groups.append(("Fixed in a later release", [f for f in part_of if f.fixed_later]))
        for heading, group in groups:
            if group:
                out.append(f"## {heading}{'' if bug else ' (not bugs)'}\n")
                out.extend(_entry(f) + "\n" for f in group)
    if UNMIGRATED.exists():
        out.append(UNMIGRATED.read_text(encoding="utf-8").rstrip() + "\n")
    out.append(_page().get("appendix", "").strip() + "\n")
    return "\n".join(out)


def _page(path: Path = REGISTRY) -> dict[str, str]:
    """The registry's [page] table: prose the page carries besides findings."""
    return tomllib.loads(path.read_text(encoding="utf-8")).get("page", {})


def readme_line(findings: list[Finding] | None = None) -> str:
    findings = load() if findings is None else findings
    return f"{_README_LINE}{count_line(findings)}, each with a repro run on every release"


def write(findings: list[Finding] | None = None) -> list[Path]:
    """Rewrite docs/findings.md and the README's line about it; the paths
    that changed."""
    findings = load() if findings is None else findings
    changed = []
    page = render(findings)
    if DOC.read_text(encoding="utf-8") != page:
        DOC.write_text(page, encoding="utf-8")
        changed.append(DOC)
    readme = README.read_text(encoding="utf-8")
    lines = [readme_line(findings) if x.startswith(_README_LINE) else x for x in readme.split("\n")]
    if "\n".join(lines) != readme:
        README.write_text("\n".join(lines), encoding="utf-8")
        changed.append(README)
    return changed


def stale(findings: list[Finding] | None = None) -> list[Path]:
    """The generated files that differ from what the registry renders."""
    findings = load() if findings is None else findings
    found = []
    if DOC.read_text(encoding="utf-8") != render(findings):
        found.append(DOC)
    if readme_line(findings) not in README.read_text(encoding="utf-8").split("\n"):
        found.append(README)
    return found
