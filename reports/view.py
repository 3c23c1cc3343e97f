"""What the pages show, worked out from report documents, so the templates
only lay it out."""

from __future__ import annotations

import re
from itertools import groupby
from typing import Any

from conformance.results import HELD, SKIPPED, UNFINISHED, VIOLATED


def status_class(status: str) -> str:
    """CSS class of a status: "st-held", ..., "st-not-run"."""
    return "st-" + re.sub(r"[^a-z]+", "-", status.lower()).strip("-")


def short_dtype(name: str) -> str:
    """A dtype's name short enough for a matrix cell: float32 -> f32."""
    for long, short in (("bfloat", "bf"), ("float", "f"), ("complex", "c"), ("uint", "u")):
        if name.startswith(long):
            return short + name[len(long) :]
    if name.startswith("int"):
        return "i" + name[3:]
    return name


def dtype_line(dtypes: dict[str, int]) -> str:
    # A no-break space keeps each dtype with its count when a cell wraps.
    return " · ".join(f"{short_dtype(d)}\u00a0{n}" for d, n in dtypes.items())


def dtype_title(dtypes: dict[str, int]) -> str:
    """The full names, for a tooltip: examples per dtype."""
    return "\n".join(f"{d}: {n} example{'s' if n != 1 else ''}" for d, n in dtypes.items())


def cell_title(cell: dict[str, Any]) -> str:
    if cell.get("status") == SKIPPED and cell.get("reasons"):
        return "skipped: " + "; ".join(cell["reasons"])
    if cell.get("known"):
        return "; ".join(cell["known"])
    return dtype_title(cell.get("dtypes", {}))


def devices(report: dict[str, Any]) -> list[dict[str, str]]:
    """The run's devices, in its order, then any other a test ran on; each
    with the reason it is absent ("" when present)."""
    listed = {d["name"]: d.get("reason", "") for d in report.get("run", {}).get("devices", [])}
    for invariant in report["invariants"].values():
        for device in invariant.get("devices", {}):
            listed.setdefault(device, "")
    return [{"name": name, "absent": reason} for name, reason in listed.items()]


def cell_reasons(cell: dict[str, Any], absent: str) -> str:
    """A skipped cell's reasons, less the one its column header already gives."""
    return "; ".join(r for r in cell.get("reasons", []) if r != absent)


def families(invariants: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Invariants grouped by family, in catalogue order."""
    return [
        (family, list(rows))
        for family, rows in groupby(invariants, key=lambda i: i["id"].split(".")[0])
    ]


def overall_class(report: dict[str, Any]) -> str:
    if report["summary"].get(VIOLATED):
        return status_class(VIOLATED)
    tests = report["summary"].get("tests", {})
    for status in UNFINISHED:
        if tests.get(status):
            return status_class(status)
    if not report.get("complete", True):
        return "st-incomplete"
    return status_class(HELD)


def counts_line(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    parts = ", ".join(f"{n} {category}" for category, n in counts.items())
    return f"{total} test outcome{'s' if total != 1 else ''}" + (f": {parts}" if parts else "")


def run_line(report: dict[str, Any]) -> list[str]:
    """The run's choices, one phrase each."""
    run = report.get("run", {})
    listed = run.get("devices", [])
    present = ", ".join(d["name"] for d in listed if d.get("present")) or "none"
    absent = "".join(f"; {d['name']} absent" for d in listed if not d.get("present"))
    seed = run.get("seed")
    phrases = [
        f"devices: {present}{absent}",
        f"{len(run.get('dtypes', []))} dtypes",
        f"profile {run.get('profile')}, seed {'random' if seed is None else seed}",
    ]
    if run.get("invariants"):
        phrases.append(f"invariants {run['invariants']}")
    return phrases


def argument_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The op registry's argument classes (conformance.argument_coverage), one
    row per op: how many of its classes the run drew, and each class with its
    count; ops with a class never drawn first."""
    rows = []
    for op, classes in report.get("arguments", {}).items():
        never = [name for name, n in classes.items() if not n]
        rows.append(
            {"op": op, "declared": len(classes), "never": never, "classes": list(classes.items())}
        )
    rows.sort(key=lambda r: (not r["never"], r["op"]))
    return rows


_OPERATOR_ORDER = ("violated", "xfailed", "not covered", "held")


def operator_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The operator table, one row per operator with a verdict per device:
    violated first, then known failures, not covered, held."""
    devices = report.get("operators", {}).get("devices", {})
    names = sorted({op for entry in devices.values() for op in entry["ops"]})
    rows = []
    for name in names:
        cells = {d: entry["ops"].get(name) for d, entry in devices.items()}
        statuses = [c["status"] for c in cells.values() if c]
        worst = min(statuses, key=_OPERATOR_ORDER.index)
        annotated = any(c.get("annotated") for c in cells.values() if c)
        rows.append({"op": name, "status": worst, "annotated": annotated, "cells": cells})
    rows.sort(key=lambda r: (_OPERATOR_ORDER.index(r["status"]), r["op"]))
    return rows
