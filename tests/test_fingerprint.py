"""tools/fingerprint.py: the same seed gives the same hashes, another seed others."""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")

_spec = importlib.util.spec_from_file_location(
    "fingerprint", Path(__file__).resolve().parent.parent / "tools" / "fingerprint.py"
)
fingerprint = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fingerprint)


def test_a_seed_fingerprints_the_same_twice_and_another_seed_differs():
    first = fingerprint.fingerprint(0, 12)
    assert fingerprint.fingerprint(0, 12) == first
    other = fingerprint.fingerprint(1, 12)
    assert other[0] != first[0] and other[1] != first[1]
