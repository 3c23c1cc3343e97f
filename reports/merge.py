"""Several builds' reports side by side: one column per build, one row per
invariant. This is the CI matrix page."""

from __future__ import annotations

import glob
from collections import Counter
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from conformance.results import NOT_RUN
from reports.files import ReportError, load


def expand(arguments: list[str]) -> list[Path]:
    """Files as given, with globs expanded here for shells (and CI configs)
    that pass them through unexpanded. ReportError for one that matches none."""
    paths: list[Path] = []
    for argument in arguments:
        if Path(argument).exists() or not glob.has_magic(argument):
            paths.append(Path(argument))
            continue
        matches = sorted(glob.glob(argument))
        if not matches:
            raise ReportError(f"{argument}: no file matches")
        paths.extend(Path(m) for m in matches)
    if not paths:
        raise ReportError("no report given")
    return list(dict.fromkeys(paths))


def _label(report: dict[str, Any]) -> str:
    build = report["build"]
    return f"torch {build['torch']} {build['build']}"


def labels(reports: list[tuple[Path, dict[str, Any]]]) -> list[str]:
    """Each column's heading: its build, or its file where two builds are equal."""
    wanted = [_label(report) for _, report in reports]
    seen = Counter(wanted)
    names = Counter(path.name for path, _ in reports)
    return [
        label if seen[label] == 1 else (path.name if names[path.name] == 1 else str(path))
        for label, (path, _) in zip(wanted, reports, strict=True)
    ]


def _column(label: str, path: Path, report: dict[str, Any]) -> dict[str, Any]:
    return {
        "label": label,
        # The second line of the heading: whichever of the two the label is not.
        "detail": path.name if label == _label(report) else _label(report),
        "file": path.name,
        "build": report["build"],
        "run": report.get("run", {}),
        "summary": report["summary"],
        "complete": report.get("complete", True),
        "incomplete_reason": report.get("incomplete_reason"),
    }


def _cell(entry: dict[str, Any] | None) -> dict[str, Any]:
    if entry is None:
        return {"status": NOT_RUN, "examples": 0, "devices": {}, "reasons": [], "known": []}
    return {
        "status": entry["status"],
        "examples": entry.get("examples", 0),
        "devices": {d: c["status"] for d, c in entry.get("devices", {}).items()},
        "reasons": entry.get("reasons", []),
        "known": entry.get("known", []),
        "failures": len(entry.get("failures", [])),
    }


def rows(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per invariant any report knows, in the first report's order."""
    ids: dict[str, dict[str, Any]] = {}
    for report in reports:
        for invariant_id, entry in report["invariants"].items():
            ids.setdefault(invariant_id, entry)
    return [
        {
            "id": invariant_id,
            "statement": first.get("statement", ""),
            "cells": [_cell(report["invariants"].get(invariant_id)) for report in reports],
        }
        for invariant_id, first in ids.items()
    ]


def _release(report: dict[str, Any]) -> tuple[int, ...]:
    """The torch release of a report (2.13.0+cpu -> (2, 13, 0)); () if unreadable."""
    try:
        return Version(str(report["build"]["torch"])).release
    except (InvalidVersion, KeyError, TypeError):
        return ()


def matrix(paths: list[Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The columns and rows of the page, one column per report, oldest torch
    release first (reports of one release in the order given). ReportError
    for a bad file."""
    loaded = sorted(((path, load(path)) for path in paths), key=lambda pr: _release(pr[1]))
    columns = [
        _column(label, path, report)
        for label, (path, report) in zip(labels(loaded), loaded, strict=True)
    ]
    return columns, rows([report for _, report in loaded])


def status_of(report: dict[str, Any], invariant: str, device: str) -> str:
    """A cell's status, "not run" where the report has none."""
    entry = report["invariants"].get(invariant, {})
    return entry.get("devices", {}).get(device, {}).get("status", NOT_RUN)
