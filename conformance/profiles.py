"""Hypothesis profiles, registered in one place.

- dev: the default; fast, with the example database on, so a failure found
  once is replayed first on the next run.
- ci: deterministic (a fixed seed, 0 unless --seed), no database, no deadline.
- thorough: many examples, for nightly runs.

`--profile` or the HYPOTHESIS_PROFILE environment variable selects one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    ExampleDatabase,
    GitHubArtifactDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)

DEFAULT_PROFILE = "dev"
CI_DEFAULT_SEED = 0

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
SHARED_DB_VARIABLE = "CONFORMANCE_GITHUB_DB"


def example_database() -> ExampleDatabase:
    """The local example database, plus, when CONFORMANCE_GITHUB_DB names a
    repository (owner/name), the failures CI stored there, read-only: they
    are replayed first here too. See docs/matrix.md, "Sharing failures"."""
    local = DirectoryBasedExampleDatabase(".hypothesis/examples")
    shared = os.environ.get(SHARED_DB_VARIABLE, "")
    if "/" not in shared:
        return local
    owner, repo = shared.split("/", 1)
    return MultiplexedDatabase(local, ReadOnlyDatabase(GitHubArtifactDatabase(owner, repo)))


# Hypothesis loads its own "ci" profile (derandomized) as the default when it
# sees a CI environment variable. Profiles that inherited from it would then
# ignore --seed, so a CI machine would run other examples than a laptop given
# the same seed. Every profile here starts from Hypothesis's plain default.
_BASE = settings.get_profile("default")


# Every phase but explain. The explain phase reruns a shrunk failure some
# thousand times to mark the draws that may vary freely and the lines only
# failing examples run; our tests draw through `data`, which it does not mark,
# and the lines it names are the assertion's own. It cost 34 of a failing
# node-hook test's 37 s and doubled a broken build's run (docs/speed.md).
_PHASES = tuple(p for p in Phase if p is not Phase.explain)


def _profile(**values) -> settings:
    # report_multiple_bugs=False: Hypothesis stops at the first failure and
    # shrinks that one alone. Shrinking every distinct failure a broken build
    # shows made such runs ten times slower than clean ones; one minimal
    # example per test is what the report shows anyway.
    return settings(
        _BASE,
        derandomize=False,
        deadline=None,
        suppress_health_check=_QUIET,
        report_multiple_bugs=False,
        **{"phases": _PHASES, **values},
    )


PROFILES: dict[str, settings] = {
    "dev": _profile(
        max_examples=80,
        database=example_database(),
        print_blob=True,
    ),
    "ci": _profile(
        max_examples=120,
        database=None,
        print_blob=True,
    ),
    "thorough": _profile(
        max_examples=2000,
        database=example_database(),
        print_blob=True,
    ),
    # For the project's own tests of planted violations: find fast, skip shrinking.
    "planted": _profile(
        max_examples=120,
        database=None,
        phases=(Phase.explicit, Phase.reuse, Phase.generate),
    ),
}

for _name, _settings in PROFILES.items():
    settings.register_profile(_name, _settings)


def profile_from_env() -> str:
    return os.environ.get("HYPOTHESIS_PROFILE", DEFAULT_PROFILE)


def default_seed(profile: str) -> int | None:
    """The seed a profile runs with when none is given (None: random)."""
    return CI_DEFAULT_SEED if profile in ("ci", "planted") else None


@contextmanager
def without_local_constants() -> Iterator[None]:
    """Hypothesis's draws without the literals of the modules it finds local.

    Hypothesis (6.131 on) now and then draws a literal read from the source
    of every loaded module that is neither installed nor the standard
    library's. So what a seed draws moves with every literal added anywhere in
    a checkout, with which modules other tests happened to import first, and
    between a checkout and an installed suite. Inside this, the same seed
    draws the same examples whatever is loaded."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # a Hypothesis without the module has no such pool
        yield
        return
    if not hasattr(providers, "_get_local_constants"):
        yield
        return
    empty, kept = providers.Constants(), providers._get_local_constants
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", {})
    providers._get_local_constants = lambda: empty
    cache.clear()  # (filled from the pool: the allowed constants per kind of draw)
    try:
        yield
    finally:
        providers._get_local_constants = kept
        cache.clear()
