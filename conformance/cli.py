"""`python -m conformance`: run the suite against the installed torch.

Exit status: 0 every invariant held; 1 at least one was violated, or a test
crashed or hung; 4 usage error (unknown device, dtype or profile, a requested
device that is absent, no torch installed); 2 interrupted (Ctrl-C, SIGTERM,
SIGHUP); 3 internal error (the suite's own code raised); 5 nothing selected.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

USAGE_ERROR = 4
SUITE_DIR = Path(__file__).resolve().parent

EPILOG = """\
Other arguments go to pytest (-k, -x, -v, -n N, ...).

exit status:
  0  every invariant held (skipped and known failures included)
  1  at least one invariant was violated, or a test crashed or hung
  2  interrupted (Ctrl-C, SIGTERM, SIGHUP); the report is marked incomplete
  3  internal error: the suite's own code raised (not torch)
  4  usage error: unknown device, dtype, profile or compile backend; a
     requested device that is absent; a bad seed; no torch installed
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
        "--schema",
        help="ATen operators the schema.* tests check: sample (default), all (default under "
        "--profile thorough), or names and globs (aten::add*,neg.out)",
    )
    parser.add_argument(
        "--compile",
        metavar="BACKEND[,BACKEND...]",
        help="also check torch.compile against eager under these backends: eager, aot_eager, "
        "inductor, any registered with Dynamo, or module:callable",
    )
    parser.add_argument(
        "--workers", default="auto", help="pytest-xdist workers (default: auto; 0 runs in-process)"
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        help="seconds one example may run before it is reported hung (default 60; 0: no limit)",
    )
    parser.add_argument(
        "--list-invariants", action="store_true", help="print the catalogue and exit"
    )
    parser.add_argument(
        "--report-dir",
        default="conformance-report",
        help="folder for the JSON and HTML reports (default: ./conformance-report)",
    )
    parser.add_argument(
        "--report-name",
        default="report",
        help="report file name without extension: NAME.json and NAME.html (default: report)",
    )
    parser.add_argument("--no-report", action="store_true", help="write no report")
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--timeout takes seconds, got {text!r}") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"--timeout must be 0 or more seconds, got {text!r}")
    return value


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
    if args.schema not in (None, "all", "sample"):
        from conformance.schema.operators import select as select_operators

        try:
            select_operators(args.schema, 0)
        except ValueError as error:
            return _fail(str(error))

    from conformance.compiled.targets import TargetError, parse_targets

    try:
        parse_targets(args.compile)
    except TargetError as error:
        return _fail(str(error))

    import pytest

    pytest_args = [
        str(SUITE_DIR),
        "-c",
        str(SUITE_DIR / "pytest.ini"),
        "--rootdir",
        str(SUITE_DIR),
        # By name, never imported here: reports depends on conformance.
        "-p",
        "reports.pytest_plugin",
    ]
    reports = _report_paths(args)
    if reports:
        pytest_args += ["--report-dir", str(reports[0].parent), "--report-name", args.report_name]
    else:
        pytest_args.append("--no-report")
    for option in (
        "devices",
        "dtypes",
        "profile",
        "seed",
        "invariants",
        "timeout",
        "schema",
        "compile",
    ):
        value = getattr(args, option)
        if value is not None:
            pytest_args += [f"--{option}", str(value)]
    user_chose_workers = any(
        a in ("-n", "--numprocesses", "no:xdist") or a.startswith(("-n", "--numprocesses="))
        for a in rest
    )
    user_chose_dist = any(a in ("-d", "--dist") or a.startswith("--dist=") for a in rest)
    if not user_chose_workers and str(args.workers) not in ("0", ""):
        pytest_args += ["-n", str(args.workers)]
        if not user_chose_dist:
            # xdist's default ("load") hands each worker a queue of tests up
            # front: a worker stopped by a hang keeps its queue waiting
            # while the others run dry. With "worksteal" they take it over.
            pytest_args += ["--dist", "worksteal"]
    started = time.time()
    status = int(pytest.main(pytest_args + rest))
    _print_reports(reports, started)
    return status


def _report_paths(args: argparse.Namespace) -> tuple[Path, Path] | None:
    """The JSON and HTML this run writes, absolute; None with --no-report."""
    if args.no_report:
        return None
    folder = Path(args.report_dir).expanduser().resolve()
    return folder / f"{args.report_name}.json", folder / f"{args.report_name}.html"


def _print_reports(reports: tuple[Path, Path] | None, started: float) -> None:
    # Only files this run wrote: a usage error writes none, and an older
    # report of the same name must not pass for this run's.
    if not reports:
        return
    json_path, html_path = reports
    written = [p for p in (html_path, json_path) if p.exists() and p.stat().st_mtime >= started - 1]
    if html_path in written:
        print(f"report: {html_path}", flush=True)
    if json_path in written:
        print(f"report json: {json_path}", flush=True)
