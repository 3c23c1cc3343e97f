"""What a test that did not finish was running, as a reader wants it: the
input (each draw, or the chain of operations), a standalone repro script,
and the script made smaller by running shorter candidates in fresh
processes, in the background while the run goes on.

The raw material is what `conformance.watch` recorded before the example
ran: draws as their reprs and torch code, a differential chain as a pickled
program, and the number of the step that was running.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from conformance.outcomes import CRASHED, HUNG, TestOutcome

# Minimizing runs candidate scripts in fresh interpreters (a torch import
# each), on the controller, beside the run: a bounded effort.
MINIMIZE_SECONDS = 60.0  # for every crash of a run together
CANDIDATE_TIMEOUT = 60.0  # a candidate that runs longer counts as hung
HANG_CANDIDATE_TIMEOUT = 10.0  # a hang repro is judged hung after this
HANG_REPLAY_FLOOR = 3.0  # ... or after the run's limit, if shorter than that and longer than this
HUNG_REPLAYS = 2  # hangs of a run replayed for a repro


def example_text(entries: list[dict[str, Any]]) -> str:
    """The example as Hypothesis prints one: "Draw 1 (source): ..." per
    draw, a chain as its listing, with the step that was running marked."""
    lines: list[str] = []
    step = running_step(entries)
    draws = [e for e in entries if "draw" in e]
    for number, entry in enumerate(draws, start=1):
        if "program" in entry:
            program = _program(entry)
            lines.append(f"Draw {number} ({entry['draw']}): a chain of {len(program.steps)} steps")
            lines += _listing(program, step)
        else:
            lines.append(f"Draw {number} ({entry['draw']}): {entry.get('value', '')}")
    unfinished = drawing(entries)
    if unfinished is not None:
        lines.append(
            f"Draw {len(draws) + 1} ({unfinished}): never returned: it happened while this "
            "input was drawn (the strategy builds its tensor with torch)"
        )
    return "\n".join(lines)


def drawing(entries: list[dict[str, Any]]) -> str | None:
    """The label of a draw that started and never returned, or None."""
    started = [e["drawing"] for e in entries if "drawing" in e]
    done = [e["draw"] for e in entries if "draw" in e]
    return started[-1] if len(started) > len(done) else None


def running_step(entries: list[dict[str, Any]]) -> int | None:
    steps = [e["step"] for e in entries if "step" in e]
    return steps[-1] if steps else None


def _program(entry: dict[str, Any]):
    from conformance.harness import unpacked

    return unpacked(entry["program"])


def _listing(program, step: int | None) -> list[str]:
    from conformance.differential.listing import step_lines, trace

    lines = []
    for number, (s, (name, names, error)) in enumerate(
        zip(program.steps, trace(program), strict=True)
    ):
        mark = "  # <- running when it happened" if number == step else ""
        body = step_lines(s, name, names, error)
        lines += [f"    {line}" for line in body[:-1]] + [f"    {body[-1]}{mark}"]
        if number == step:
            break
    return lines


def choices_of(entries: list[dict[str, Any]]) -> str:
    """The Hypothesis choices recorded at the last draw ("" if none)."""
    recorded = [e["choices"] for e in entries if e.get("choices")]
    return recorded[-1] if recorded else ""


def repro_for(outcome: TestOutcome, entries: list[dict[str, Any]]) -> tuple[str, Any]:
    """A repro script for the outcome, and the program it runs (None when
    the test drew no chain)."""
    programs = [e for e in entries if "program" in e]
    if not programs:
        return "", None
    from conformance.differential.crash_repro import crash_script, up_to

    program = up_to(_program(programs[-1]), running_step(entries))
    return crash_script(program, _what(outcome)), program


def _what(outcome: TestOutcome) -> str:
    return f"{outcome.outcome} in {outcome.nodeid}: {outcome.message}"


class Minimizer:
    """Minimizes crash repros one at a time on a background thread, within a
    shared time budget; `wait` joins them before the report is written."""

    def __init__(self, budget: float = MINIMIZE_SECONDS) -> None:
        self.budget = budget
        self._pool: ThreadPoolExecutor | None = None
        self._jobs: list[Future] = []
        self._deadline: float | None = None
        self._lock = threading.Lock()
        self._hung_replays = 0

    def submit(self, outcome: TestOutcome, program: Any) -> None:
        self._submit(self._minimize, outcome, program)

    def _submit(self, job: Callable, *args: Any) -> None:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="conformance-minimize")
                self._deadline = time.monotonic() + self.budget
            self._jobs.append(self._pool.submit(job, *args))

    def _minimize(self, outcome: TestOutcome, program: Any) -> None:
        from conformance.differential.crash_repro import crash_script, minimize_crash, run_script

        assert self._deadline is not None
        hung = outcome.outcome == HUNG
        if hung:  # a check would take the whole timeout: the chain stays as it ran
            return
        if self._spent(outcome):
            return
        timeout = HANG_CANDIDATE_TIMEOUT if hung else CANDIDATE_TIMEOUT
        what = _what(outcome)
        kind, _ = run_script(crash_script(program, what), timeout)
        wanted = HUNG if hung else CRASHED
        outcome.problem["repro_checked"] = kind == wanted
        if kind != wanted:
            outcome.problem["repro_note"] = (
                f"the repro script {'ran to its end' if kind == 'ok' else kind} when run on its"
                " own: what failed depends on state outside the chain"
            )
            return
        fails: Callable[[str], bool] = lambda script: run_script(script, timeout)[0] == wanted  # noqa: E731
        smaller, tried = minimize_crash(program, what, fails, self._deadline)
        if len(smaller.steps) < len(program.steps):
            outcome.repro = crash_script(smaller, what)
            outcome.problem["minimized"] = (
                f"from {len(program.steps)} to {len(smaller.steps)} steps, {tried} candidates run"
            )

    def submit_replay(
        self, outcome: TestOutcome, context: dict, entries: list, limit: float | None
    ) -> None:
        """Replay a property test's example in a fresh process under a trace
        of its torch calls (conformance.replay): the calls up to the one that
        crashed or hung become the repro script. Only the first
        `HUNG_REPLAYS` hangs of a run are replayed: each takes seconds of
        waiting, and a build that hangs on one input usually hangs on many."""
        if outcome.outcome == HUNG:
            self._hung_replays += 1
            if self._hung_replays > HUNG_REPLAYS:
                outcome.problem["repro_note"] = (
                    f"no repro: only the run's first {HUNG_REPLAYS} hangs are replayed; run this "
                    "test alone (-k) for one"
                )
                return
        self._submit(self._replay, outcome, context, entries, limit)

    def _replay(self, outcome: TestOutcome, context: dict, entries: list, limit) -> None:
        from conformance.differential.crash_repro import run_script
        from conformance.replay import replay_script, sliced

        if self._spent(outcome):
            return
        hung = outcome.outcome == HUNG
        # judged hung after the run's limit, at most HANG_CANDIDATE_TIMEOUT
        # and at least a few seconds: a fresh process's first backward
        # imports sympy
        hang_after = None
        if hung:
            hang_after = min(
                max(limit or HANG_CANDIDATE_TIMEOUT, HANG_REPLAY_FLOOR), HANG_CANDIDATE_TIMEOUT
            )
        found = replay_script(
            context, choices_of(entries), CANDIDATE_TIMEOUT + (hang_after or 0), hang_after
        )
        if found is None:
            return
        how, lines = found
        wanted = HUNG if hung else CRASHED
        if how != wanted and drawing(entries) is not None:
            outcome.problem["repro_note"] = (
                f"no repro: it happened while the input {drawing(entries)!r} was drawn, before "
                "its choices were recorded"
            )
            return
        if how != wanted:
            outcome.problem["repro_note"] = (
                f"no repro: the example, replayed on its own, {_ended(how)}; what failed "
                "depends on state outside it"
            )
            return
        kept = sliced(lines)
        script = _script(outcome, kept)
        outcome.repro = script
        outcome.problem["repro_note"] = (
            f"the torch calls the example made, up to the one that {wanted} "
            f"({len(kept)} of {len(lines)} lines kept)"
        )
        if not hung and time.monotonic() < (self._deadline or 0):
            kind, _ = run_script(script, CANDIDATE_TIMEOUT)
            outcome.problem["repro_checked"] = kind == wanted

    def _spent(self, outcome: TestOutcome) -> bool:
        """Whether the run's time for repros is used up (a build that crashes
        or hangs on every test must not make the run that much longer); the
        outcome then says so."""
        if time.monotonic() < (self._deadline or 0):
            return False
        outcome.problem["repro_note"] = (
            f"no repro: the run's {self.budget:g} s for making repros went to earlier crashes "
            "and hangs; run this test alone (-k) for one"
        )
        return True

    def wait(self, seconds: float) -> None:
        """Join the jobs for at most `seconds`; the rest keep their first script."""
        end = time.monotonic() + seconds
        for job in list(self._jobs):
            try:
                job.result(timeout=max(0.0, end - time.monotonic()))
            except Exception:  # noqa: BLE001 - a repro that cannot be minimized keeps its first form
                continue
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def _ended(how: str) -> str:
    if how.startswith("error"):
        return "raised an " + how
    return {"ok": "ran to its end"}.get(how, how)


def _script(outcome: TestOutcome, lines: list[str]) -> str:
    head = [
        f'"""Repro: {_what(outcome)}',
        "",
        "Made by torch-conformance by replaying the example and writing down the",
        "torch calls it made. It imports only torch and checks nothing: on a sound",
        "build it prints 'ok'; on the build that failed, the last call never returns.",
        '"""',
        "import torch",
        "",
    ]
    return "\n".join([*head, *lines, "print('ok: every call returned')"]) + "\n"
