"""A seed draws the same examples whatever modules are loaded.

Hypothesis now and then draws a literal from the source of every loaded
module that is not installed; a seeded run draws inside
profiles.without_local_constants, so its programs do not move when a
literal is added anywhere in a checkout, when other tests imported more of
the project first, or between a checkout and an installed suite."""

from __future__ import annotations

import importlib
import sys
from types import SimpleNamespace

from hypothesis import Phase, given, seed, settings
from hypothesis import strategies as st

from conformance.profiles import without_local_constants

# distinctive literals, none of them near what Hypothesis draws on its own
LITERALS = [982_451_653_000 + 7_919 * i for i in range(400)]


def _draws() -> list[int]:
    out: list[int] = []

    @seed(0)
    @given(st.integers(0, 2**64 - 1))
    @settings(max_examples=300, database=None, phases=(Phase.generate,))
    def draw(x):
        out.append(x)

    draw()
    return out


def test_a_seed_draws_the_same_after_a_module_of_literals_is_loaded(tmp_path, monkeypatch):
    with without_local_constants():
        before = _draws()
    module = tmp_path / "module_of_literals.py"
    module.write_text("VALUES = [" + ", ".join(map(str, LITERALS)) + "]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("module_of_literals")
    try:
        with without_local_constants():
            after = _draws()
        unpinned = _draws()  # the control: unpinned, the module's literals are drawn
    finally:
        sys.modules.pop("module_of_literals", None)
    assert after == before
    assert set(unpinned) & set(LITERALS), "Hypothesis drew no local literal: the control failed"


def test_a_seeded_run_draws_without_local_literals_until_it_ends():
    from hypothesis.internal.conjecture import providers

    from conformance.options import apply_hypothesis_options, release_hypothesis_options
    from conformance.selection import Selection

    kept = providers._get_local_constants
    assert len(kept()) > 0  # the project's own modules are local here
    config = SimpleNamespace(option=SimpleNamespace())
    apply_hypothesis_options(config, Selection((), (), "ci", 0))
    try:
        assert config.option.hypothesis_seed == "0"
        assert len(providers._get_local_constants()) == 0
    finally:
        release_hypothesis_options()
    assert providers._get_local_constants is kept
