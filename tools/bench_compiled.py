"""Seconds per program of the compiled differential, cold and warm.

    python tools/bench_compiled.py aot_eager 20
    python tools/bench_compiled.py inductor 6

Draws seeded programs (conformance.compiled.motifs.compiled_programs) and
times, for each, the compiled run (Dynamo reset, compile, call, eager steps
after it) and the eager run beside it. "Cold" is the first program of the
process (imports, first compilation); "warm" the mean of the others, each a
new program compiled from an empty Dynamo cache, as the suite does.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance.compiled.run import execute  # noqa: E402
from conformance.compiled.targets import parse_targets  # noqa: E402
from tools.drawn import each_program  # noqa: E402

DTYPES = ("float32", "float64", "complex64", "int64", "bool")


def main(backend: str, count: int) -> None:
    (target,) = parse_targets(backend)
    if not target.available:
        print(f"{backend} skipped: {target.reason}")
        return
    compiled_s: list[float] = []
    eager_s: list[float] = []

    def run(program) -> None:
        start = time.perf_counter()
        execute(program, None)
        eager_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        try:
            execute(program, target)
        except Exception:  # noqa: BLE001 - a crash is timed too
            pass
        compiled_s.append(time.perf_counter() - start)

    each_program(count, DTYPES, run)
    warm = compiled_s[1:] or compiled_s
    print(
        f"{backend}: {len(compiled_s)} programs; compiled run: cold {compiled_s[0]:.2f} s, "
        f"warm {statistics.mean(warm):.2f} s/program (median {statistics.median(warm):.2f}); "
        f"eager run {statistics.mean(eager_s) * 1000:.1f} ms/program"
    )


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else "aot_eager",
        int(sys.argv[2]) if len(sys.argv) > 2 else 20,
    )
