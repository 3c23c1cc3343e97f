"""Collection and marking: the tests' device and compile-target parameters,
the --invariants selection, the known-failure list (a test or a failure it
covers becomes an expected failure; entries that match nothing or
unexpectedly hold are said), and rules that do not apply to this torch."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest
import torch

from conformance import children, harness, known_failures
from conformance.check import InvariantViolation
from conformance.compiled import targets as compile_targets
from conformance.hypothesis_adapter import run_without_shrinking
from conformance.invariants import INVARIANTS
from conformance.known_failures import KnownFailure
from conformance.outcomes import HELD, VIOLATED, XFAILED, table
from conformance.run_state import COVERING, KNOWN, OUTCOMES
from conformance.selection import Selection, current


class KnownFailureWarning(UserWarning):
    """A known-failure entry that matches nothing, or unexpectedly holds."""


def configure_known_failures(config: pytest.Config, selection: Selection) -> None:
    paths = [] if config.getoption("no_known_failures") else [known_failures.SHIPPED]
    paths += [Path(p) for p in config.getoption("known_failures")]
    try:
        entries = known_failures.load_all(paths)
        compile_targets.declare_listed(known_failures.load_bases(paths))
    except known_failures.KnownFailuresError as error:
        raise pytest.UsageError(str(error)) from None
    active = [e for e in entries if e.applies_to_build(torch.__version__)]
    config.stash[KNOWN] = active
    if hasattr(config, "workerinput"):
        children.watch_parent()  # a worker ends with its controller, however that ends
        return  # the controller warns, once
    for entry, why in known_failures.stale(
        entries, torch.__version__, selection.present, selection.dtypes
    ):
        config.issue_config_time_warning(
            KnownFailureWarning(
                f"known-failure entry {entry.label} ({entry.where}) matches nothing: {why}"
            ),
            stacklevel=2,
        )


def parametrize(metafunc: pytest.Metafunc) -> None:
    if "target" in metafunc.fixturenames:
        _parametrize_targets(metafunc)
    if "device" not in metafunc.fixturenames:
        return
    selection = current()
    params = [
        pytest.param(
            d.name, id=d.name, marks=() if d.present else pytest.mark.skip(reason=d.reason)
        )
        for d in selection.devices
    ]
    metafunc.parametrize("device", params)


def _parametrize_targets(metafunc: pytest.Metafunc) -> None:
    """One test per --compile target; without any, one skipped test that says how."""
    chosen = compile_targets.current_targets()
    params = [
        pytest.param(t, id=t.name, marks=() if t.available else pytest.mark.skip(reason=t.reason))
        for t in chosen
    ] or [
        pytest.param(
            None,
            id="no-target",
            marks=pytest.mark.skip(
                reason="no compile target: run with --compile aot_eager (or another backend)"
            ),
        )
    ]
    metafunc.parametrize("target", params)


def _absence(device: str) -> str | None:
    """Why a selected device is absent, or None where it is present."""
    return next((d.reason for d in current().devices if d.name == device and not d.present), None)


def _declared(item: pytest.Item) -> tuple[str, ...]:
    ids: list[str] = []
    for mark in item.iter_markers("invariant"):
        ids.extend(mark.args)
    return tuple(ids)


def select_and_mark(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = config.getoption("invariants")
    patterns = [p.strip() for p in wanted.split(",") if p.strip()] if wanted else []
    keep, drop = [], []
    for item in items:
        ids = _declared(item)
        if not ids:
            raise pytest.UsageError(f"{item.nodeid} declares no invariant (@pytest.mark.invariant)")
        unknown = [i for i in ids if i not in INVARIANTS]
        if unknown:
            raise pytest.UsageError(f"{item.nodeid} names unknown invariants {unknown}")
        if patterns and not any(fnmatch.fnmatchcase(i, p) for i in ids for p in patterns):
            drop.append(item)
            continue
        device = item.callspec.params.get("device", "cpu") if hasattr(item, "callspec") else "cpu"
        target = item.callspec.params.get("target") if hasattr(item, "callspec") else None
        if (absent := _absence(device)) is not None:
            # first: pytest reports the first skip, and a test without a
            # compile target is skipped on an absent device for the device
            item.add_marker(pytest.mark.skip(reason=absent), append=False)
        device = compile_targets.column(device, getattr(target, "name", None))
        item.user_properties.append(("invariants", list(ids)))
        item.user_properties.append(("device", device))
        _mark_known(config, item, ids, device)
        not_applying = [
            INVARIANTS[i] for i in ids if not INVARIANTS[i].applies_to(torch.__version__)
        ]
        if len(not_applying) == len(ids):
            ranges = ", ".join(f"{inv.id} applies to torch {inv.versions}" for inv in not_applying)
            item.add_marker(pytest.mark.skip(reason=f"{ranges}; this is {torch.__version__}"))
        keep.append(item)
    if patterns and not keep:
        raise pytest.UsageError(f"--invariants {wanted!r} matches no test")
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _mark_known(config: pytest.Config, item: pytest.Item, ids: tuple, device: str) -> None:
    """A test whose every invariant is a known failure on its device is an
    expected failure, run without shrinking so that it stays fast."""
    known = config.stash.get(KNOWN, [])
    covering = [e for e in known if any(e.covers(i, device) for i in ids)]
    item.stash[COVERING] = covering
    whole = [e for e in covering if not e.narrowed]
    if not whole or not all(any(e.covers(i, device) for e in whole) for i in ids):
        return
    reason = "; ".join(
        e.xfail_reason(next((i for i in ids if e.covers(i, device)), None)) for e in whole
    )
    item.add_marker(
        pytest.mark.xfail(
            reason=reason, strict=config.getoption("strict_xfail"), raises=AssertionError
        )
    )
    run_without_shrinking(getattr(item, "obj", None))


def known_if_listed(
    item: pytest.Item, report: pytest.TestReport, violations: list[InvariantViolation]
) -> None:
    """Turn a failure into an xfail when every rule it broke is listed, each
    violation matched by its own message; the reason of each rule is kept."""
    if not report.failed or not violations or hasattr(report, "wasxfail"):
        return
    device = dict(item.user_properties).get("device", "cpu")
    dtypes = set(harness.LAST_EXAMPLE_DTYPES)
    ops = set(harness.LAST_EXAMPLE_OPS)
    whole = str(report.longrepr)  # (a violation raised alone: its text with the traceback)
    covering = item.stash.get(COVERING, [])
    reasons: dict[str, str] = {}
    for v in violations:
        text = whole if len(violations) == 1 else str(v)
        entry = next(
            (e for e in covering if e.covers(v.invariant, device, dtypes, ops, text)), None
        )
        if entry is None:
            return
        reasons.setdefault(v.invariant, entry.xfail_reason(v.invariant))
    report.outcome = "skipped"
    report.wasxfail = "; ".join(dict.fromkeys(reasons.values()))
    report.user_properties.append(("known", reasons))


def unexpectedly_holding(config: pytest.Config) -> list[KnownFailure]:
    """Listed entries whose invariant was tested on their device and held."""
    cells = table(OUTCOMES.values(), torch.__version__)
    holding = []
    for entry in config.stash.get(KNOWN, []):
        if entry.operator is not None or entry.status is not None:
            continue  # an operator's (the schema sweep reports it) or a crash
        by_device = cells.get(entry.invariant, {})
        tested = [
            c
            for d, c in by_device.items()
            if entry.covers(entry.invariant, d) and c.status in (HELD, VIOLATED, XFAILED)
        ]  # an absent device's skipped cell says nothing either way
        if entry.ops is not None or entry.message is not None:
            continue  # one class of failures among others: holding says nothing
        if tested and all(c.status == HELD for c in tested):
            holding.append(entry)
    return holding
