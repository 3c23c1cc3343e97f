"""Command line of `python -m reports`: merge builds into a matrix page, or
render one report's page again from its JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reports.files import ReportError, load, write_text
from reports.html import render_matrix, render_report
from reports.merge import expand, matrix

BAD_FILE = 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m reports", description="Pages from torch-conformance JSON reports."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    merge = commands.add_parser(
        "merge", help="one page with builds side by side: a column per report"
    )
    merge.add_argument("reports", nargs="+", help="JSON reports (globs allowed, quoted or not)")
    merge.add_argument("-o", "--output", default="matrix.html", help="default: matrix.html")
    render = commands.add_parser("render", help="the HTML page of one JSON report")
    render.add_argument("report", help="a JSON report")
    render.add_argument("-o", "--output", help="default: the report's name with .html")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "merge":
            output = Path(args.output)
            columns, rows = matrix(expand(args.reports))
            write_text(output, render_matrix(columns, rows))
        else:
            output = Path(args.output or Path(args.report).with_suffix(".html"))
            write_text(output, render_report(load(args.report)))
    except ReportError as error:
        print(f"reports: error: {error}", file=sys.stderr)
        return BAD_FILE
    except OSError as error:
        print(f"reports: error: cannot write {output}: {error.strerror or error}", file=sys.stderr)
        return BAD_FILE
    print(f"wrote {output.resolve()}")
    return 0
