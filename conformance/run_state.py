"""The run's state the plugin's modules share: the config of this process's
run, every test's outcome, and the keys of what the plugin keeps in pytest's
stash. Holds no logic; conformance.plugin fills it."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.known_failures import KnownFailure
from conformance.outcomes import TestOutcome
from conformance.selection import Selection

# Every test's outcome, as the process that prints the summary sees it (the
# xdist controller, or the only process).
OUTCOMES: dict[str, TestOutcome] = {}
CONFIG: list[pytest.Config] = []  # this process's run's config, once configured

SELECTION = pytest.StashKey[Selection]()
KNOWN = pytest.StashKey[list[KnownFailure]]()
COVERING = pytest.StashKey[list[KnownFailure]]()
RUN_FOLDER = pytest.StashKey[Path]()


def known_failures_of(config: pytest.Config) -> list[KnownFailure]:
    """The run's known failures that apply to this build (operator entries included)."""
    return list(config.stash.get(KNOWN, []))


def known_failure_entries() -> list[KnownFailure]:
    """The run's known-failure entries for this build (none outside a run)."""
    return CONFIG[0].stash.get(KNOWN, []) if CONFIG else []


def roots(config: pytest.Config) -> list[Path]:
    """The folders node IDs are relative to."""
    return [config.rootpath, config.invocation_params.dir]
