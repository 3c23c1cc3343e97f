"""Known-failure lists: invariants a build is known to violate.

A list is a TOML file of `[[known]]` entries, each naming an invariant ID (or
a glob of IDs, for a bug that shows through several rules, narrowed by a
`message`),
optionally narrowed to a device, a dtype and a range of torch versions, with
the reason and an upstream link:

    [[known]]
    invariant = "dtype.inplace_keeps_int_out_of_graph"
    versions = ">=2.9"
    reason = "int_tensor.fill_(t) with a 0-d t that requires grad records FillBackward"
    link = "https://github.com/pytorch/pytorch/issues/76008"

A bug of older releases that a later one fixed names that release in `fixed`
("2.1"): the run then says "known failure, fixed in 2.1", and a build at or
after it that still fails is not excused (`versions` must end before it).

Entries for torch.compile (--compile) may also name a `target` (a backend:
the entry holds for that report column only, and for every backend built on
that one: `inductor`, a user's backend declared as `--compile
my_pkg:backend=aot_eager`, or in a list's `[builds_on]` table, or whose
function says `fn.builds_on = "aot_eager"`), `ops` (op names the failing
minimal program must all use) and `message` (a substring of the failure's
message, or a list of them, any of which will do): the last two narrow an
entry to one class of divergence.

A crash is known too, when torch's own bug takes the process down on an
input the suite draws: `status = "crashed"` with the `test` (its node ID
without parameters) instead of an invariant, narrowed by `example` (strings
the example that crashed must all contain), `message` (a substring of what
the crashed process left: "Segmentation fault"), a `target` or a device:

    [[known]]
    status = "crashed"
    test = "test_compiled.py::test_compiled_agrees_with_eager"
    target = "aot_eager"
    example = ["retain_grad()", "backward"]
    reason = "..."
    link = "..."

The test is still reported crashed, with its input and repro, but as a known
failure: it does not fail the run.

A list may say which backend a user's backend is built on, so that the
base's entries hold for it:

    [builds_on]
    "my_pkg.backends:mine" = "aot_eager"

A test whose invariants are all listed is reported as xfailed and runs
without shrinking; a violation of a listed invariant found by a test that
checks more than that is turned into an xfail too. An entry that matches
nothing gives a warning; one whose invariant unexpectedly holds gives a
warning, or an error under --strict-xfail.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from conformance.invariants import INVARIANTS, Invariant

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SHIPPED = Path(__file__).resolve().parent / "known-failures.toml"


class KnownFailuresError(ValueError):
    """A list that cannot be read: one line, usage error."""


@dataclass(frozen=True)
class KnownFailure:
    invariant: str
    reason: str
    link: str
    where: str  # file and entry number, for messages
    device: str | None = None
    dtype: str | None = None
    versions: str | None = None
    # schema.* entries name the ATen operator ("aten::foo.out") they excuse:
    # the schema sweep applies them op by op, never to the whole invariant
    operator: str | None = None
    # a torch.compile backend (--compile): the entry holds for that target
    # only; without one, for eager and every target
    target: str | None = None
    # ops the failing (minimal) program uses: the entry holds only where all do
    # (unknown ops, dtypes or message match: a test is expected to fail only by
    # entries that are not narrowed, see `narrowed`)
    ops: tuple[str, ...] | None = None
    # substrings of the failure's message, any of which marks it: one class of
    # divergence only
    message: tuple[str, ...] | None = None
    # a known crash ("crashed"): of `test`, where the example holds all of `example`
    status: str | None = None
    test: str | None = None
    example: tuple[str, ...] | None = None
    # the release that fixed the bug ("2.1"), where known
    fixed: str | None = None
    # the id of the finding that explains it (conformance/findings.toml)
    finding: str | None = None

    def __post_init__(self) -> None:
        # one substring is the common case: a bare string is one alternative
        if isinstance(self.message, str):
            object.__setattr__(self, "message", (self.message,))

    def applies_to_build(self, torch_version: str) -> bool:
        if self.versions is None:
            return True
        check = Invariant(self.invariant, "", "", "", self.versions)
        return check.applies_to(torch_version)

    def covers(
        self,
        invariant: str,
        device: str,
        dtypes: set[str] | None = None,
        ops: set[str] | None = None,
        text: str | None = None,
    ) -> bool:
        """Whether a violation of `invariant` on `device` (a report column:
        `cpu`, or `cpu/aot_eager` compiled; by an example that used `dtypes`
        and `ops`, when known) is this known failure."""
        device, _, target = device.partition("/")
        if not fnmatchcase(invariant, self.invariant) or self.operator or self.status:
            return False
        if self.device is not None and self.device != device:
            return False
        if self.target is not None and self.target not in _known_as(target):
            return False
        if self.dtype is not None and dtypes is not None and self.dtype not in dtypes:
            return False
        if self.ops is not None and ops is not None and not set(self.ops) <= ops:
            return False
        if self.message is not None and text is not None and not self._says(text):
            return False
        return True

    def covers_crash(self, nodeid: str, example: str, detail: str) -> bool:
        """Whether the crash of `nodeid` (its parameters name the device and
        any compile target), running `example`, is this known crash."""
        if self.status != CRASHED or nodeid.partition("[")[0] != self.test:
            return False
        params = nodeid.partition("[")[2].removesuffix("]").split("-")
        if self.device is not None and self.device not in params:
            return False
        if self.target is not None and not any(self.target in _known_as(p) for p in params):
            return False
        if self.message is not None and not self._says(detail):
            return False
        return all(part in example for part in self.example or ())

    def _says(self, text: str) -> bool:
        return any(m in text for m in self.message or ())

    @property
    def narrowed(self) -> bool:
        """Whether the entry holds for some failures of its invariant only."""
        return self.dtype is not None or self.ops is not None or self.message is not None

    @property
    def label(self) -> str:
        return self.label_for(self.invariant)

    def label_for(self, invariant: str) -> str:
        """The entry's name, as seen through `invariant` (an entry that names
        a glob of rules is shown by the rule it excused)."""
        scope = "".join(
            f" [{x}]" for x in (self.operator, self.device, self.target, self.dtype) if x
        )
        subject = f"crash in {self.test}" if self.status == CRASHED else invariant
        return f"{subject}{scope}"

    def xfail_reason(self, invariant: str | None = None) -> str:
        fixed = f", fixed in {self.fixed}" if self.fixed else ""
        label = self.label_for(invariant or self.invariant)
        return f"known failure {label}{fixed}: {self.reason} ({self.link})"


_FIELDS = {
    "invariant",
    "reason",
    "link",
    "device",
    "dtype",
    "versions",
    "operator",
    "target",
    "ops",
    "message",
    "status",
    "test",
    "example",
    "fixed",
    "finding",
}
CRASHED = "crashed"


def _document(path: Path) -> dict:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KnownFailuresError(f"known-failure list {path} does not exist") from None
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise KnownFailuresError(f"known-failure list {path} cannot be read: {error}") from None
    bases = document.get("builds_on", {})
    if not isinstance(bases, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k and v for k, v in bases.items()
    ):
        raise KnownFailuresError(
            f'{path}: builds_on must be a table of backend = "base" ("my_pkg:mine" = "aot_eager")'
        )
    return document


def load_bases(paths: list[Path]) -> dict[str, str]:
    """The backends the lists say are built on others (`[builds_on]`); a
    later list overrides an earlier one."""
    return {k: v for path in paths for k, v in _document(path).get("builds_on", {}).items()}


def load(path: Path) -> list[KnownFailure]:
    document = _document(path)
    entries = document.get("known", [])
    if not isinstance(entries, list):
        raise KnownFailuresError(f"{path}: 'known' must be an array of tables ([[known]])")
    found = []
    for number, entry in enumerate(entries, 1):
        where = f"{path}, entry {number}"
        if not isinstance(entry, dict):
            raise KnownFailuresError(f"{where}: not a table")
        unknown = set(entry) - _FIELDS
        if entry.get("status", CRASHED) != CRASHED:
            raise KnownFailuresError(f"{where}: status can only be {CRASHED!r}")
        subject = "test" if "status" in entry else "invariant"
        missing = {subject, "reason", "link"} - set(entry)
        if unknown or missing:
            problem = f"unknown keys {sorted(unknown)}" if unknown else f"missing {sorted(missing)}"
            raise KnownFailuresError(f"{where}: {problem}")
        if "versions" in entry:
            try:
                SpecifierSet(entry["versions"])
            except InvalidSpecifier:
                raise KnownFailuresError(
                    f"{where}: versions {entry['versions']!r} is not a version specifier"
                ) from None
        if "fixed" in entry:
            _check_fixed(where, entry)
        lists = {}
        for key in ("ops", "example"):
            value = entry.pop(key, None)
            if value is not None and (
                not isinstance(value, list) or not all(isinstance(o, str) for o in value)
            ):
                raise KnownFailuresError(f"{where}: {key} must be a list of strings")
            lists[key] = None if value is None else tuple(value)
        if "message" in entry:  # one substring, or a list of them
            said = entry.pop("message")
            said = [said] if isinstance(said, str) else said
            if not isinstance(said, list) or not said or not all(isinstance(m, str) for m in said):
                raise KnownFailuresError(f"{where}: message must be a string or a list of strings")
            lists["message"] = tuple(said)
        fields = {k: str(v) for k, v in entry.items()}
        fields.setdefault("invariant", "")
        found.append(KnownFailure(where=where, **lists, **fields))
    return found


def _check_fixed(where: str, entry: dict) -> None:
    """`fixed` is a release, and the entry's `versions` stop before it."""
    try:
        fixed = Version(str(entry["fixed"]))
    except InvalidVersion:
        raise KnownFailuresError(f"{where}: fixed {entry['fixed']!r} is not a release") from None
    if fixed in SpecifierSet(entry.get("versions", "")):
        raise KnownFailuresError(
            f"{where}: fixed in {entry['fixed']}, but its versions "
            f"{entry.get('versions', '(all)')!r} include that release"
        )


def load_all(paths: list[Path]) -> list[KnownFailure]:
    return [entry for path in paths for entry in load(path)]


def stale(
    entries: list[KnownFailure],
    torch_version: str,
    devices: tuple[str, ...],
    dtypes: tuple[str, ...],
) -> list[tuple[KnownFailure, str]]:
    """Entries that cannot match any test of this run, with why."""
    out = []
    for entry in entries:
        if entry.status == CRASHED:
            continue  # a crash is known by its test and input, not by a rule
        if not any(fnmatchcase(i, entry.invariant) for i in INVARIANTS):
            out.append((entry, f"no invariant is called {entry.invariant!r}"))
        elif not entry.applies_to_build(torch_version):
            continue  # written for other builds: not stale, just not this one's
        elif entry.device is not None and entry.device not in devices:
            out.append((entry, f"device {entry.device} is not in this run"))
        elif entry.dtype is not None and entry.dtype not in dtypes:
            out.append((entry, f"dtype {entry.dtype} is not in this run"))
    return out


def _known_as(target: str) -> tuple[str, ...]:
    """The target, and the backends it says it builds on (their known
    failures are its own)."""
    if not target:
        return (target,)
    from conformance.compiled.targets import builds_on  # (imports torch: compiled runs only)

    names = [target]
    while (base := builds_on(names[-1])) is not None and base not in names:
        names.append(base)
    return tuple(names)
