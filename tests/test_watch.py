"""The per-example watchdog (conformance.watch), in this process: how long
an example may run once the run has seen a hang, and that an import is never
cut in half."""

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


def test_before_any_hang_every_example_gets_the_full_limit(recorder):
    _examples(recorder, 5, 0.001)
    assert recorder._limit_now("test_x") == 30.0


def test_after_a_hang_an_example_gets_a_multiple_of_the_typical_one(recorder, tmp_path):
    _examples(recorder, 9, 0.001)
    _examples(recorder, 1, 0.2)  # one slow example does not set the pace
    (tmp_path / watch.HUNG_MARK).touch()
    assert recorder._limit_now("test_x") == watch.AFTER_HANG_FLOOR
    recorder.start("test_x")
    started = time.monotonic()
    with pytest.raises(watch.ExampleHung):
        time.sleep(5)
    assert time.monotonic() - started < 2
    recorder.finish()


def test_a_stopped_example_leaves_no_watchdog_armed(recorder, tmp_path):
    _examples(recorder, 5, 0.001)
    (tmp_path / watch.HUNG_MARK).touch()
    recorder.start("test_x")
    with pytest.raises(watch.ExampleHung):
        time.sleep(5)
    recorder.finish()
    # else the watchdog thread would end this process a second later
    assert recorder._deadline is None


def test_a_fresh_process_after_a_hang_takes_the_pace_of_the_others(recorder, tmp_path):
    _examples(recorder, 5, 0.05)
    (tmp_path / watch.HUNG_MARK).touch()
    paced = recorder._limit_now("test_x")
    fresh = watch.Recorder(tmp_path, "gw9", limit=30.0)
    try:
        assert fresh._limit_now("test_y") == paced < 30.0
    finally:
        fresh.close()


def test_each_test_keeps_its_own_pace(recorder, tmp_path):
    _examples(recorder, 10, 0.001)
    for _ in range(5):
        recorder.start("test_slow")
        time.sleep(0.06)
        recorder.finish()
    (tmp_path / watch.HUNG_MARK).touch()
    assert recorder._limit_now("test_x") == watch.AFTER_HANG_FLOOR
    assert recorder._limit_now("test_slow") >= watch.AFTER_HANG_FACTOR * 0.06


def test_after_a_hang_slow_examples_keep_room(recorder, tmp_path):
    _examples(recorder, 5, 0.05)
    (tmp_path / watch.HUNG_MARK).touch()
    limit = recorder._limit_now("test_x")
    assert watch.AFTER_HANG_FACTOR * 0.05 <= limit < 30.0


def test_an_import_is_never_cut_in_half(recorder, tmp_path, monkeypatch):
    # a module that takes longer to import than the example may run (as
    # torch's first backward importing sympy): the import finishes
    (tmp_path / "slow_to_import.py").write_text("import time\ntime.sleep(1.5)\nDONE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _examples(recorder, 5, 0.001)
    (tmp_path / watch.HUNG_MARK).touch()
    recorder.start("test_x")
    import slow_to_import

    recorder.finish()
    assert slow_to_import.DONE
    sys.modules.pop("slow_to_import", None)


def test_an_example_running_when_another_process_hangs_gets_the_pace(recorder, tmp_path):
    # this process started its example before the run's first hang (full
    # limit); another process's hang, seen by the watchdog thread, cuts it
    # to the paced limit instead of letting it use the whole 30 s
    _examples(recorder, 5, 0.001)
    recorder.start("test_x")
    started = time.monotonic()
    threading.Timer(0.5, (tmp_path / watch.HUNG_MARK).touch).start()
    with pytest.raises(watch.ExampleHung):
        time.sleep(10)
    assert time.monotonic() - started < 2
    recorder.finish()
    assert recorder._deadline is None


def test_a_full_limit_example_is_not_cut_by_the_pace(recorder, tmp_path):
    # a whole plain test (paced=False) keeps the full limit after a hang
    _examples(recorder, 5, 0.001)
    recorder.start("test_plain", paced=False)
    (tmp_path / watch.HUNG_MARK).touch()
    time.sleep(1.0)  # four watchdog rounds
    recorder.finish()


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
        with watch.example("test_sweep", paced=False):
            for _ in range(4):  # 1.2 s in all, 0.3 s a unit
                watch.next_unit()
                assert watch.unit_limit() == 0.5
                time.sleep(0.3)
        with pytest.raises(watch.ExampleHung):
            with watch.example("test_sweep", paced=False):
                watch.next_unit()
                time.sleep(5)
    finally:
        watch.uninstall()
    assert recorder._deadline is None
