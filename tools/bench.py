"""Speed of the suite's two engines, measured the same way every time.

    python tools/bench.py oracle        # µs per oracle op, by op family
    python tools/bench.py differential  # checked differential steps per second, one core

The differential figure runs a fixed, derandomized set of generated chains
through the lockstep (torch and the oracle, compared after every step) in one
process, and divides the steps compared by the time taken; generating the
chains is timed apart.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _time(label: str, setup: Callable, fn: Callable, n: int) -> float:
    from oracle import Engine

    engine = Engine()
    state = setup(engine)
    fn(engine, state)  # warm
    start = time.perf_counter()
    for _ in range(n):
        fn(engine, state)
    micros = (time.perf_counter() - start) / n * 1e6
    print(f"{label:34s} {micros:8.1f} µs")
    return micros


def oracle(n: int) -> None:
    def leaves(engine, requires_grad=True):
        rng = np.random.default_rng(0)
        return [
            engine.leaf(rng.normal(size=(3, 4)), "float32", requires_grad=requires_grad)
            for _ in range(2)
        ]

    def non_leaf(engine):
        a, b = leaves(engine)
        return [engine.call("clone", [a]), b]

    def backward(engine, s):
        out = engine.call("sum", [engine.call("mul", s)])
        engine.call("backward", [out], (False,))

    print("oracle, 3x4 float32 operands, µs per call:")
    rows = [
        ("leaf", lambda e: None, lambda e, s: e.leaf(np.ones((3, 4)), "float32", True)),
        ("exp (requires grad)", leaves, lambda e, s: e.call("exp", [s[0]])),
        ("exp (no grad)", lambda e: leaves(e, False), lambda e, s: e.call("exp", [s[0]])),
        ("mul", leaves, lambda e, s: e.call("mul", s)),
        ("getitem [0:2, 1]", leaves, lambda e, s: e.call("getitem", [s[0]], ((slice(0, 2), 1),))),
        ("transpose", leaves, lambda e, s: e.call("transpose", [s[0]], (0, 1))),
        ("sum", leaves, lambda e, s: e.call("sum", [s[0]])),
        ("add_ (non-leaf)", non_leaf, lambda e, s: e.call("add_", s)),
        (
            "getitem + mul_s_ (CopySlices)",
            non_leaf,
            lambda e, s: e.call("mul_s_", [e.call("getitem", [s[0]], ((0,),))], (1.0,)),
        ),
        ("mul + sum + backward (3 calls)", leaves, backward),
    ]
    for label, setup, fn in rows:
        _time(label, setup, fn, n)


def differential(chains: int) -> None:
    import torch
    from hypothesis import HealthCheck, Phase, given, settings

    from conformance.differential.generate import programs
    from conformance.differential.lockstep import execute
    from strategies.dtypes import DTYPES

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    # torch's first backward with a gradient argument imports sympy (about a
    # second, once per process: torch.fx's symbolic shapes check its shape)
    (torch.ones(2, requires_grad=True) * 2).backward(torch.ones(2))
    drawn = []

    @given(program=programs(("cpu",), tuple(DTYPES), salt=0))
    @settings(
        max_examples=chains,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )
    def draw(program):
        drawn.append(program)

    start = time.perf_counter()
    draw()
    generated = time.perf_counter() - start
    steps, start = 0, time.perf_counter()
    for program in drawn:
        run, _ = execute(program)
        steps += run.steps_checked
    checked = time.perf_counter() - start
    print(f"torch {torch.__version__}, {len(drawn)} chains, {steps} steps compared")
    print(f"lockstep: {checked:.2f} s, {steps / checked:.0f} checked steps/s on one core")
    print(f"generation: {generated:.2f} s, {steps / generated:.0f} steps/s")
    print(f"both: {steps / (checked + generated):.0f} steps/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("oracle", "differential"))
    parser.add_argument("-n", type=int, default=None, help="calls per op, or chains")
    args = parser.parse_args()
    if args.what == "oracle":
        oracle(args.n or 2000)
    else:
        differential(args.n or 400)


if __name__ == "__main__":
    main()
