"""How far a compile backend's values are from eager's, per dtype, over the
programs the compiled differential draws: the basis of the compiled
tolerances (oracle/tolerances.py COMPILED, docs/compile.md "Values").

    python tools/measure_compiled.py --compile aot_eager --seeds 0,1,2,3,4
    python tools/measure_compiled.py --compile inductor --seeds 0,1 --programs 40

Each seed draws `--programs` programs as test_compiled_agrees_with_eager
does (conformance.compiled.motifs.compiled_programs, on the CPU, every
dtype), runs each eagerly and compiled, and compares every value and
gradient both runs left. A program that differs in anything else, or by
more than 1/16 of a value (BEYOND_ROUNDING: a semantic difference such as a
known failure, not rounding), is counted apart and not measured. Per dtype
it prints the elements compared, how many are not bit for bit eager's
(compare.identical), and the largest difference in epsilons of the dtype,
relative to max(|eager|, 1) (the rtol an entry needs where values are near
1 or larger; an atol below it).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.dont_write_bytecode = True  # never write __pycache__ into the repo
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from conformance.compiled.compare import compare, identical  # noqa: E402
from conformance.compiled.run import Trace, execute  # noqa: E402
from conformance.compiled.targets import parse_targets  # noqa: E402
from oracle.tolerances import EPS  # noqa: E402
from tools.drawn import each_program  # noqa: E402

# Differences larger than this are no rounding, in any floating dtype
BEYOND_ROUNDING = 2.0**-4
DTYPES = ("float64", "float32", "float16", "bfloat16", "complex128", "complex64", "int64", "bool")


class Tally:
    def __init__(self) -> None:
        self.elements: dict[str, int] = defaultdict(int)
        self.differ: dict[str, int] = defaultdict(int)
        self.worst: dict[str, float] = defaultdict(float)
        self.where: dict[str, str] = {}
        self.programs = 0
        self.diverged = 0
        self.compared = 0

    def add(self, dtype: str, e: np.ndarray, c: np.ndarray, where: str) -> None:
        e, c = np.asarray(e), np.asarray(c)
        if e.shape != c.shape:
            return
        self.elements[dtype] += e.size
        if identical(e, c):
            return
        same = [identical(x, y) for x, y in zip(e.ravel(), c.ravel(), strict=True)]
        self.differ[dtype] += same.count(False)
        if dtype not in EPS:
            self.worst[dtype] = float("inf")
            return
        e, c = e.astype(np.complex128).ravel(), c.astype(np.complex128).ravel()
        finite = np.isfinite(e) & np.isfinite(c)
        if not finite.all() and not np.array_equal(np.isnan(e), np.isnan(c)):
            self.worst[dtype] = float("inf")
            self.where[dtype] = where
        if finite.any():
            gap = np.abs(c - e)[finite] / np.maximum(np.abs(e[finite]), 1.0) / EPS[dtype]
            if gap.max() > self.worst[dtype]:
                self.worst[dtype] = float(gap.max())
                self.where[dtype] = where

    def traces(self, eager: Trace, compiled: Trace, listing: str) -> None:
        for e, c in zip(eager.outcomes, compiled.outcomes, strict=False):
            if e.error != c.error or e.snapshot is None or c.snapshot is None:
                return  # another invariant's difference; values after it are not comparable
            if e.snapshot.tokens != c.snapshot.tokens:
                return
            self.compared += 1
            seen = zip(e.snapshot.tokens, e.snapshot.seen, c.snapshot.seen, strict=True)
            for token, se, sc in seen:
                if (se.shape, se.dtype) != (sc.shape, sc.dtype):
                    return
                self.add(se.dtype, se.values, sc.values, f"t{token} at {e.where} of\n{listing}")
                if isinstance(se.grad, np.ndarray) and isinstance(sc.grad, np.ndarray):
                    if se.grad_meta == sc.grad_meta and se.grad_meta is not None:
                        where = f"t{token}.grad at {e.where} of\n{listing}"
                        self.add(se.grad_meta[1], se.grad, sc.grad, where)


def measure(backend: str, seeds: list[int], programs: int) -> Tally:
    (target,) = parse_targets(backend)
    if not target.available:
        raise SystemExit(f"{backend} skipped: {target.reason}")
    tally = Tally()
    for n in seeds:

        def run(program) -> None:
            tally.programs += 1
            try:
                eager, compiled = execute(program, None), execute(program, target)
            except Exception:  # noqa: BLE001 - a program the harness cannot run has no values
                return
            loose = (BEYOND_ROUNDING, BEYOND_ROUNDING)
            if compare(program, eager, compiled, bounds=lambda d: loose if d in EPS else (0, 0)):
                tally.diverged += 1
                return
            tally.traces(eager, compiled, "\n".join(program.listing()))

        each_program(programs, DTYPES, run, hypothesis_seed=n)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile", default="aot_eager", help="one backend (default aot_eager)")
    parser.add_argument("--seeds", default="0", help="comma-separated Hypothesis seeds")
    parser.add_argument("--programs", type=int, default=60, help="programs per seed (default 60)")
    parser.add_argument("--where", action="store_true", help="print the worst program per dtype")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    tally = measure(args.compile, seeds, args.programs)
    print(
        f"{args.compile}, seeds {args.seeds}: {tally.programs} programs "
        f"({tally.diverged} that differ beyond rounding not measured), "
        f"{tally.compared} points compared"
    )
    print(f"{'dtype':<11} {'elements':>9} {'not identical':>14} {'worst (epsilons)':>17}")
    for dtype in sorted(tally.elements, key=DTYPES.index):
        worst = f"{tally.worst[dtype]:.3g}" if tally.differ[dtype] else "-"
        print(f"{dtype:<11} {tally.elements[dtype]:>9} {tally.differ[dtype]:>14} {worst:>17}")
    if args.where:
        for dtype, where in tally.where.items():
            print(f"\nworst {dtype}: {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
