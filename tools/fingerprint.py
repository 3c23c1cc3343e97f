"""Fingerprints of the differential: which programs it draws at a seed, and what
it finds in them, each as one hash. A change that should not change behaviour
(a refactor, a speed-up) leaves both as they were; run it on the commit before
and after:

    python tools/fingerprint.py --seeds 0,1,2 -n 300

Each seed draws n programs as a seeded run does (every device and dtype the
build has, cpu only), runs each in lockstep and attributes what it finds to a
rule. The programs' hash covers each program as its repro prints it; the
outcomes' hash covers, per program, the step, kind, tensors and message of
the first discrepancy and the rule it is attributed to (or that none was
found), the steps compared, and what the model predicted after the last
step compared: every tensor's shape, dtype, strides, values, flags, .grad,
version and base (not its storage's identity, which is an address; nor
values where the program left memory undefined, as resize_ growing it).

Hypothesis mixes constants read from the project's own source (every
literal of its modules) into what it draws, so a change that adds or drops
a literal anywhere changes what a seed draws; the tool draws without them
so that the hashes speak of the generator's behaviour alone."""

from __future__ import annotations

import argparse
import hashlib
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _predicted(o: object, defined: bool) -> bytes:
    """One observation of the model's, as bytes: its storage's identity left
    out, and its values and .grad where the program left memory undefined."""
    import numpy as np

    fields = dict(vars(o))
    fields.pop("storage")
    if not defined:
        fields.pop("values")
        fields.pop("grad")
    parts = []
    for key, value in sorted(fields.items()):
        if isinstance(value, np.ndarray):
            value = (value.shape, str(value.dtype), np.ascontiguousarray(value).tobytes())
        parts.append(f"{key}={value!r}")
    return ";".join(parts).encode() + b"\0"


def fingerprint(seed: int, n: int) -> tuple[str, str, int]:
    """(the programs' hash, the outcomes' hash, how many programs found something)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded

    from conformance.differential import crash_patterns
    from conformance.differential.attribution import attribute
    from conformance.differential.generate import programs
    from conformance.differential.lockstep import execute
    from conformance.profiles import without_local_constants
    from strategies.dtypes import DTYPES

    drawn = []

    @seeded(seed)
    @given(program=programs(("cpu",), tuple(DTYPES), salt=seed))
    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )
    def draw(program):
        drawn.append(program)

    with without_local_constants():
        draw()
    progs, outs, found_in = hashlib.sha256(), hashlib.sha256(), 0
    for program in drawn:
        progs.update(repr(program).encode() + b"\0")
        if reached := crash_patterns.reached(program):
            # torch segfaults on these (known crashes): the suite runs them in a child
            outs.update(f"isolated {sorted(reached)}\0".encode())
            continue
        run, found = execute(program)
        outs.update(f"{run.steps_checked}\0".encode())
        for o in run.observed[0]:
            outs.update(_predicted(o, defined=not run.engine.undefined))
        if found is None:
            outs.update(b"none\0")
            continue
        found_in += 1
        rule = attribute(run, found)
        outs.update(repr((found.step, found.kind, found.tensors, found.message, rule)).encode())
        outs.update(b"\0")
    return progs.hexdigest()[:16], outs.hexdigest()[:16], found_in


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (0,1,2)")
    parser.add_argument("-n", type=int, default=300, help="programs per seed (300)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(f"torch {torch.__version__}, {args.n} programs per seed")
    for seed in (int(s) for s in args.seeds.split(",")):
        progs, outs, found_in = fingerprint(seed, args.n)
        print(f"seed {seed}: programs {progs}  outcomes {outs}  ({found_in} found something)")


if __name__ == "__main__":
    main()
