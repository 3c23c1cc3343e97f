"""Hypothesis profiles, registered in one place.

- dev: the default; fast, with the example database on, so a failure found
  once is replayed first on the next run.
- ci: deterministic (a fixed seed, 0 unless --seed), no database, no deadline.
- thorough: many examples, for nightly runs.

`--profile` or the HYPOTHESIS_PROFILE environment variable selects one.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

DEFAULT_PROFILE = "dev"
CI_DEFAULT_SEED = 0

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

PROFILES: dict[str, settings] = {
    "dev": settings(max_examples=80, deadline=None, suppress_health_check=_QUIET, print_blob=True),
    "ci": settings(
        max_examples=120,
        deadline=None,
        database=None,
        suppress_health_check=_QUIET,
        print_blob=True,
    ),
    "thorough": settings(
        max_examples=2000, deadline=None, suppress_health_check=_QUIET, print_blob=True
    ),
    # For the project's own tests of planted violations: find fast, skip shrinking.
    "planted": settings(
        max_examples=120,
        deadline=None,
        database=None,
        suppress_health_check=_QUIET,
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
