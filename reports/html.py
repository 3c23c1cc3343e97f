"""HTML pages from report documents, rendered with Jinja2.

Autoescaping is on for every template: torch reprs, messages and repro
scripts are full of `<` and `>`. The pages are self-contained: the style and
the one script are inlined, and a Content-Security-Policy forbids any fetch
and any script but that one (by its hash), so a page shows the same offline
and an injected `<script>` could not run even if it got past the escaping.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from conformance.results import STATUSES
from reports import view

TEMPLATES = Path(__file__).resolve().parent / "templates"
# the view's functions that the templates apply as filters, by their names
_FILTERS = (
    view.status_class,
    view.short_dtype,
    view.dtype_line,
    view.dtype_title,
    view.cell_title,
    view.cell_reasons,
)


@cache
def _asset(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,  # every template, whatever its file name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update({f.__name__: f for f in _FILTERS})
    return env


def _page(template: str, **context: Any) -> str:
    return (
        environment()
        .get_template(template)
        .render(
            # Our own files, shipped with the package: the only unescaped text.
            style=Markup(_asset("style.css")),
            script=Markup(_asset("copy.js")),
            csp=_csp(_asset("copy.js")),
            statuses=STATUSES,
            **context,
        )
    )


def render_report(report: dict[str, Any]) -> str:
    """The page of one run."""
    invariants = list(report["invariants"].values())
    return _page(
        "report.html.j2",
        r=report,
        build=report["build"],
        run=report.get("run", {}),
        devices=view.devices(report),
        families=view.families(invariants),
        violated=[i for i in invariants if i["status"] == "violated"],
        overall_class=view.overall_class(report),
        counts_line=view.counts_line(report.get("counts", {})),
        run_line=view.run_line(report),
        operator_rows=view.operator_rows(report),
        argument_rows=view.argument_rows(report),
        operator_devices=list(report.get("operators", {}).get("devices", {})),
    )


def render_matrix(columns: list[dict[str, Any]], rows: list[dict[str, Any]]) -> str:
    """The page that puts builds side by side (see reports.merge)."""
    return _page("matrix.html.j2", columns=columns, families=view.families(rows))
