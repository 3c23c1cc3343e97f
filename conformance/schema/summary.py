"""The operator table: the sweep's verdicts, merged across the tests
(shards) of a run, per device, and the run's one-line summary of it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

STATUS_ORDER = ("violated", "xfailed", "held", "not covered")


def merge_verdicts(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """One operator seen by two shards: the worse verdict, the counts summed."""
    first, second = sorted((a, b), key=lambda r: STATUS_ORDER.index(r["status"]))
    merged = dict(first)
    merged["checked"] = a.get("checked", 0) + b.get("checked", 0)
    merged["raised"] = a.get("raised", 0) + b.get("raised", 0)
    if merged["status"] == "not covered" and second["status"] != "not covered":
        merged = dict(second, checked=merged["checked"], raised=merged["raised"])
    skipped = Counter(a.get("values_not_compared", {})) + Counter(b.get("values_not_compared", {}))
    if skipped:
        merged["values_not_compared"] = dict(skipped)
    return merged


def operator_table(outcomes: Iterable[Any]) -> dict[str, Any]:
    """{"devices": {device: {"ops": {op: verdict}, "seconds", "driven", ...}}}
    from the tests' coverage records (TestOutcome-like objects)."""
    devices: dict[str, dict[str, Any]] = {}
    for outcome in outcomes:
        sweep = outcome.coverage.get("operators") if outcome.coverage else None
        if not sweep:
            continue
        entry = devices.setdefault(
            sweep["device"],
            {"ops": {}, "seconds": 0.0, "driven": 0, "seed": sweep["seed"], "spec": sweep["spec"]},
        )
        entry["seconds"] += sweep["seconds"]
        entry["driven"] += sweep["driven"]
        entry["annotated_schemas"] = sweep.get("annotated_schemas")
        entry["schemas"] = sweep.get("schemas")
        for op, verdict in sweep["ops"].items():
            known = entry["ops"].get(op)
            entry["ops"][op] = verdict if known is None else merge_verdicts(known, verdict)
    for entry in devices.values():
        ops = entry["ops"]
        entry["ops"] = dict(sorted(ops.items()))
        entry["counts"] = dict(Counter(v["status"] for v in ops.values()))
        entry["checked_ops"] = sum(1 for v in ops.values() if v.get("checked"))
        entry["annotated_reached"] = sum(
            1 for v in ops.values() if v.get("checked") and v.get("annotated")
        )
        entry["calls"] = sum(v.get("checked", 0) for v in ops.values())
        entry["values_not_compared"] = sum(
            sum(v.get("values_not_compared", {}).values()) for v in ops.values()
        )
    return {"devices": dict(sorted(devices.items()))}


def summary_lines(table: dict[str, Any]) -> list[str]:
    lines = []
    for device, entry in table["devices"].items():
        counts = entry["counts"]
        parts = ", ".join(f"{counts[s]} {s}" for s in STATUS_ORDER if counts.get(s))
        rate = entry["driven"] / max(entry["seconds"], 1e-9)
        annotated = entry.get("annotated_schemas")
        reached = (
            f"; {entry['annotated_reached']} of the build's {annotated} annotated schemas reached"
            if annotated
            else ""
        )
        unspecified = entry.get("values_not_compared", 0)
        apart = (
            f" ({unspecified} out= results not compared: unasked or unstable, "
            "conformance/schema/semantics.py)"
            if unspecified
            else ""
        )
        lines.append(
            f"schema [{device}]: {entry['checked_ops']} operators checked against their schemas "
            f"({parts}){reached}; {entry['calls']} calls checked{apart}, {entry['driven']} "
            f"operators called in {entry['seconds']:.1f} s: {rate:.0f} operators/s"
        )
    return lines


def schema_summary(outcomes: Iterable[Any]) -> list[str]:
    return summary_lines(operator_table(outcomes))
