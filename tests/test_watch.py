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
    assert recorder._limit_now() == 30.0


def test_after_a_hang_an_example_gets_a_multiple_of_the_typical_one(recorder, tmp_path):
    _examples(recorder, 9, 0.001)
    _examples(recorder, 1, 0.2)  # one slow example does not set the pace
    (tmp_path / watch.HUNG_MARK).touch()
    assert recorder._limit_now() == watch.AFTER_HANG_FLOOR
    recorder.start("test_x")
    started = time.monotonic()
    with pytest.raises(watch.ExampleHung):
        time.sleep(5)
    assert time.monotonic() - started < 2
    recorder.finish()


def test_after_a_hang_slow_examples_keep_room(recorder, tmp_path):
    _examples(recorder, 3, 0.05)
    (tmp_path / watch.HUNG_MARK).touch()
    limit = recorder._limit_now()
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
