"""The findings registry (conformance/findings.toml): render its page, or run
its repros on a torch.

    python tools/findings.py --write        # rewrite docs/findings.md and the README's count
    python tools/findings.py --check        # exit 1 if either is stale
    python tools/findings.py --run          # every repro on this interpreter's torch
    python tools/findings.py --run --python ~/.cache/torch-conformance/venvs/2.0.1/bin/python
    python tools/findings.py --run --ids a,b --show   # and print each run's output
    python tools/findings.py --run --record # and add the release to each entry's bad or good
    python tools/findings.py --releases     # tests/test_findings.py on every release of the matrix
    python tools/findings.py --table        # every repro on every release: a table of verdicts

--run prints one line per finding: its verdict on that torch (good, bad,
broken), what the registry claims for that release, and the seconds it took;
it exits 1 where a verdict differs from a claim. --releases and --table take
the release smoke's legs (tools/release_smoke.py: 2.0.1, 2.4.1 with NumPy
1.26, 2.14.1, each an environment under --venvs, made if missing) and this
interpreter's torch (the default build). --record writes each
verdict of a release the entry does not list yet into the registry's `bad`
or `good` (never a broken one): how the releases seen get there.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

sys.path.insert(0, str(Path(__file__).resolve().parent))

import release_smoke  # noqa: E402

from conformance import findings  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _pythons(venvs: Path) -> list[str]:
    """This interpreter, then each leg's, oldest first."""
    legs = [
        str(release_smoke._python(release_smoke.prepare(leg, venvs)))
        for leg in release_smoke.LEGS.values()
    ]
    return [sys.executable, *legs]


def releases(venvs: Path) -> int:
    """tests/test_findings.py on every release; 0 only if each passes."""
    failed = []
    for python in _pythons(venvs):
        print(f"== {_release(python)} ({python})", flush=True)
        test = [
            python,
            "-m",
            "pytest",
            "-q",
            "-n",
            "auto",
            "-p",
            "no:cacheprovider",
            "tests/test_findings.py",
        ]
        if subprocess.run(test, cwd=ROOT).returncode != 0:
            failed.append(_release(python))
    print("failed on: " + ", ".join(failed) if failed else "every release passed")
    return 1 if failed else 0


def table(venvs: Path) -> int:
    """Every repro on every release, as a markdown table of verdicts."""
    entries = findings.load()
    columns = {}
    for python in _pythons(venvs):
        release = _release(python).split("+")[0]
        with findings.ReproRunner(python) as runner:
            columns[release] = {
                f.id: findings.NOT_APPLICABLE
                if f.claim(release) == findings.NOT_APPLICABLE
                else f.verdict(runner.run(f))
                for f in entries
            }
    order = sorted(columns, key=lambda r: tuple(int(x) for x in r.split(".")))
    print("| finding | kind | " + " | ".join(order) + " |")
    print("|---|---|" + "---|" * len(order))
    for f in entries:
        cells = " | ".join(columns[r][f.id] for r in order)
        print(f"| `{f.id}` | {f.kind} | {cells} |")
    return 0


def _release(python: str) -> str:
    probe = "import torch; print(torch.__version__)"
    return subprocess.run([python, "-c", probe], capture_output=True, text=True).stdout.strip()


def record(text: str, finding_id: str, verdict: str, release: str) -> str:
    """The registry's text with `release` added to the `bad` or `good` list
    of the entry `finding_id`."""
    from packaging.version import Version

    blocks = text.split("[[finding]]\n")
    for n, block in enumerate(blocks):
        if f'\nid = "{finding_id}"\n' not in "\n" + block:
            continue
        pattern = re.compile(rf"^{verdict} = \[(.*)\]$", re.M)
        found = pattern.search(block)
        releases = set(re.findall(r'"([^"]+)"', found.group(1))) if found else set()
        releases.add(release)
        line = f"{verdict} = [" + ", ".join(f'"{r}"' for r in sorted(releases, key=Version)) + "]"
        if found:
            block = block[: found.start()] + line + block[found.end() :]
        else:
            at = re.search(r"^searched = .*$", block, re.M)
            assert at is not None, finding_id
            block = block[: at.end()] + "\n" + line + block[at.end() :]
        blocks[n] = block
    return "[[finding]]\n".join(blocks)


def run(python: str, ids: list[str] | None, show: bool, save: bool = False) -> int:
    entries = findings.load()
    if ids:
        entries = [f for f in entries if f.id in ids]
    release = _release(python)
    base = release.split("+")[0]
    print(f"torch {release} ({python})")
    text = findings.REGISTRY.read_text(encoding="utf-8")
    wrong = 0
    with findings.ReproRunner(python) as runner:
        for f in entries:
            claim = f.claim(release)
            if claim == findings.NOT_APPLICABLE:
                print(f"{'n.a.':7} {'n.a.':7} {0:6.1f}s  {f.id}")
                continue
            result = runner.run(f)
            verdict = f.verdict(result)
            mark = "" if claim is None or claim == verdict else "   <-- differs from the registry"
            wrong += bool(mark)
            print(f"{verdict:7} {claim or '-':7} {result.seconds:6.1f}s  {f.id}{mark}")
            if show:
                print("    " + result.output.strip().replace("\n", "\n    "))
            if save and claim is None and verdict in (findings.BAD, findings.GOOD):
                text = record(text, f.id, verdict, base)
    if save:
        findings.REGISTRY.write_text(text, encoding="utf-8")
    return 1 if wrong else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite docs/findings.md")
    mode.add_argument("--check", action="store_true", help="exit 1 if docs/findings.md is stale")
    mode.add_argument("--run", action="store_true", help="run the repros")
    mode.add_argument("--releases", action="store_true", help="the tests on every release")
    mode.add_argument("--table", action="store_true", help="verdicts on every release")
    parser.add_argument(
        "--venvs",
        type=Path,
        default=Path.home() / ".cache" / "torch-conformance" / "venvs",
        help="where the legs' environments are (made if missing)",
    )
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run on")
    parser.add_argument("--ids", help="comma-separated finding ids (default: all)")
    parser.add_argument("--show", action="store_true", help="print each repro's output")
    parser.add_argument("--record", action="store_true", help="write verdicts into the registry")
    args = parser.parse_args(argv)
    if args.write:
        for path in findings.write():
            print(f"wrote {path}")
        return 0
    if args.check:
        paths = findings.stale()
        for path in paths:
            print(f"{path} is stale: python tools/findings.py --write")
        return 1 if paths else 0
    if args.releases:
        return releases(args.venvs)
    if args.table:
        return table(args.venvs)
    return run(args.python, args.ids.split(",") if args.ids else None, args.show, args.record)


if __name__ == "__main__":
    sys.exit(main())
