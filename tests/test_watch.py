"""The per-example watchdog (conformance.watch), in this process: every
example may run the limit the user set, before and after a hang, and an
import is never cut in half."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from conformance import watch

pytestmark = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(),
    reason="SIGALRM needs the main thread",
)


@pytest.fixture
def recorder(tmp_path):
    made = watch.Recorder(tmp_path, "main", limit=30.0)
    yield made
    made.close()


def _examples(recorder: watch.Recorder, count: int, seconds: float) -> None:
    for _ in range(count):
        recorder.start("test_x")
        time.sleep(seconds)
        recorder.finish()


def test_after_a_hang_every_example_keeps_the_limit_the_user_set(tmp_path):
    """A hang is reported only after the example really ran past --timeout: an
    example after another one hung, many times slower than the typical one,
    is not stopped (the thorough profile's false hangs at a 0.25 s limit)."""
    recorder = watch.Recorder(tmp_path, "main", limit=1.0)
    try:
        _examples(recorder, 9, 0.001)
        recorder.start("test_x")
        with pytest.raises(watch.ExampleHung):
            time.sleep(5)
        recorder.finish()
        assert recorder._deadline is None  # else the watchdog would end this process
        recorder.start("test_x")
        time.sleep(0.6)  # 600 times the typical example, within the limit
        recorder.finish()
        recorder.start("test_x")
        started = time.monotonic()
        with pytest.raises(watch.ExampleHung) as stopped:
            time.sleep(5)
        assert 1.0 <= time.monotonic() - started < 2 and stopped.value.limit == 1.0
        recorder.finish()
    finally:
        recorder.close()
    assert watch.read_evidence(recorder.files)["limit"] == 1.0


def test_an_import_is_never_cut_in_half(tmp_path, monkeypatch):
    # a module that takes longer to import than the example may run (as
    # torch's first backward importing sympy): the import finishes
    (tmp_path / "slow_to_import.py").write_text("import time\ntime.sleep(1.5)\nDONE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    recorder = watch.Recorder(tmp_path, "main", limit=0.5)
    try:
        recorder.start("test_x")
        import slow_to_import

        recorder.finish()
    finally:
        recorder.close()
    assert slow_to_import.DONE
    sys.modules.pop("slow_to_import", None)


def test_an_alarm_meant_for_a_finished_example_is_ignored(recorder):
    # the watchdog re-armed the timer just as the example finished: the
    # next example, on its own limit, must not be stopped by it
    import signal

    _examples(recorder, 5, 0.001)
    recorder.start("test_x")
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    time.sleep(0.3)
    recorder.finish()


def test_a_test_of_many_units_gets_the_limit_per_unit(tmp_path):
    """The schema sweep is one plain test of many operators: each operator
    (watch.next_unit) gets the whole limit, and one that runs past it still
    ends the test."""
    recorder = watch.install(tmp_path, "units", limit=0.5)
    try:
        with watch.example("test_sweep"):
            for _ in range(4):  # 1.2 s in all, 0.3 s a unit
                watch.next_unit()
                assert watch.unit_limit() == 0.5
                time.sleep(0.3)
        with pytest.raises(watch.ExampleHung):
            with watch.example("test_sweep"):
                watch.next_unit()
                time.sleep(5)
    finally:
        watch.uninstall()
    assert recorder._deadline is None
