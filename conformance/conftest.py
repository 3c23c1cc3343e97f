"""Loads the suite's plugin, so that a plain `pytest` on this folder runs the
suite exactly as `python -m conformance` does."""

from conformance.plugin import *  # noqa: F401,F403
