"""Headless Chromium for the HTML tests: load a page from disk, offline, and
return its DOM after its scripts ran."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

NAMES = ("chromium", "chromium-browser")
# Everything that would reach the network or touch the user's profile is off:
# the page must render from the file alone.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
)


def chromium() -> str:
    """The browser's path, or skip the test saying why there is none."""
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(
        "chromium is not installed: .ci/run installs Debian's chromium package where it "
        "is absent (apt-get install -y chromium), and the install failed or was not run"
    )


def dump_dom(page: Path, timeout: float = 60) -> str:
    """The serialized DOM of a local page once loaded."""
    browser = chromium()
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        result = subprocess.run(
            [browser, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    assert result.returncode == 0 and result.stdout.strip(), result.stderr[-2000:]
    return result.stdout
