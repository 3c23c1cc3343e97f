"""The hook by which the suite hands its report on (conformance.plugin adds
it): the `reports` plugin implements it to write the JSON and HTML, without
importing the suite."""

from __future__ import annotations

import pytest

from conformance.results import Report


@pytest.hookspec
def pytest_conformance_report(config: pytest.Config, report: Report) -> None:
    """The run's report, once, on the process that owns the session, as it ends."""
