"""`python -m conformance`: run the suite against the installed torch.

Exit status: 0 every invariant held; 1 at least one was violated; 4 usage
error (unknown device, dtype or profile, a requested device that is absent,
no torch installed); 2 interrupted; 3 internal error; 5 nothing selected.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

USAGE_ERROR = 4
SUITE_DIR = Path(__file__).resolve().parent

EPILOG = """\
Other arguments go to pytest (-k, -x, -v, -n N, ...).

exit status:
  0  every invariant held (skipped and known failures included)
  1  at least one invariant was violated
  2  interrupted
  3  internal error
  4  usage error: unknown device, dtype or profile; a requested device that is
     absent; a bad seed; no torch installed
  5  no test selected
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and status 4, never a traceback
        print(f"conformance: error: {message}", file=sys.stderr)
        raise SystemExit(USAGE_ERROR)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m conformance",
        description="Check the installed torch against PyTorch's aliasing and autograd rules.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--devices", help="cpu, cuda, cuda:N, mps (comma-separated)")
    parser.add_argument("--dtypes", help="dtypes or groups: floating, complex, integral, grad")
    parser.add_argument("--profile", help="Hypothesis profile: dev (default), ci, thorough")
    parser.add_argument("--seed", help="Hypothesis seed (ci defaults to 0)")
    parser.add_argument("--invariants", help="only these invariant IDs (comma-separated globs)")
    parser.add_argument(
        "--workers", default="auto", help="pytest-xdist workers (default: auto; 0 runs in-process)"
    )
    parser.add_argument(
        "--list-invariants", action="store_true", help="print the catalogue and exit"
    )
    return parser


def list_invariants() -> None:
    from conformance.invariants import CATALOGUE

    width = max(len(inv.id) for inv in CATALOGUE)
    for inv in CATALOGUE:
        print(f"{inv.id:<{width}}  {inv.statement}")


def _fail(message: str) -> int:
    print(f"conformance: error: {message}", file=sys.stderr)
    return USAGE_ERROR


def main(argv: list[str] | None = None) -> int:
    args, rest = build_parser().parse_known_args(argv)
    if args.list_invariants:
        list_invariants()
        return 0
    if importlib.util.find_spec("torch") is None:
        return _fail(
            f"torch is not installed for {sys.executable}; install a build first "
            "(pip install -r requirements-torch.txt installs the default, torch==2.13.0)"
        )
    try:
        import torch  # noqa: F401  (a broken install fails here, once)
    except Exception as error:  # noqa: BLE001 - any import failure is the user's environment
        return _fail(f"torch cannot be imported: {type(error).__name__}: {error}")

    from conformance.selection import SelectionError, select

    try:
        select(args.devices, args.dtypes, args.profile, args.seed)
    except SelectionError as error:
        return _fail(str(error))

    import pytest

    pytest_args = [
        str(SUITE_DIR),
        "-c",
        str(SUITE_DIR / "pytest.ini"),
        "--rootdir",
        str(SUITE_DIR),
    ]
    for option in ("devices", "dtypes", "profile", "seed", "invariants"):
        value = getattr(args, option)
        if value is not None:
            pytest_args += [f"--{option}", str(value)]
    user_chose_workers = any(
        a in ("-n", "--numprocesses", "no:xdist") or a.startswith(("-n", "--numprocesses="))
        for a in rest
    )
    if not user_chose_workers and str(args.workers) not in ("0", ""):
        pytest_args += ["-n", str(args.workers)]
    return int(pytest.main(pytest_args + rest))
