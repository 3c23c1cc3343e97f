"""A violation's repro script, run on the same build in a fresh process
before the violation is shown: does it fail there too?

A repro that fails in a fresh process shows the violation is torch's, not an
artefact of the run (state an earlier example left, a tensor the test built
that the script spells otherwise). One that passes is marked as such and
counted apart: the user is never shown a failure with a repro that says "ok"
without being told. The fresh process inherits the run's environment, so a
build patched at interpreter start (the project's planted violations) is
patched there too.
"""

from __future__ import annotations

import os

from conformance import children

YES, NO, UNCLEAR = "yes", "no", "unclear"
TIMEOUT = 120.0  # seconds; a repro runs one short chain, torch's import included


def reproduces(script: str, timeout: float = TIMEOUT) -> tuple[str, str]:
    """(YES, NO or UNCLEAR, what the process said last) for a script that
    ends in assertions: it reproduces when it exits non-zero (an assertion,
    an error torch raised, a crash)."""
    # in a temporary folder, out of the project's, so that the script imports
    # torch alone
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    done = children.run_script(script, timeout, env=env)
    if done is None:
        return UNCLEAR, f"it did not finish in {timeout:g} s"
    said = (done.stderr.strip() or done.stdout.strip()).splitlines()
    last = said[-1][:300] if said else ""
    if done.returncode == 0:
        return NO, last
    if done.returncode < 0:
        return YES, f"the process died of signal {-done.returncode}"
    return YES, last


def label(verdict: str) -> str:
    """What the terminal and the report say of a verdict."""
    return {
        YES: "reproduced in a fresh process: yes",
        NO: "reproduced in a fresh process: no (its repro passes on this build)",
        UNCLEAR: "reproduced in a fresh process: unclear (the repro did not finish)",
    }.get(verdict, "")
