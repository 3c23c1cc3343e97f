"""What a test checks, from its node ID alone.

A crashed xdist worker leaves the controller a report with no user
properties: only the node ID survives. The test's invariant marks are read
back from its module, and its device from its parameter ID.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

_DEVICE = re.compile(r"^(cpu|cuda|mps)(:\d+)?$")


def device_of(nodeid: str) -> str:
    """The device in a node ID's `[...]` parameters ("cpu" when it names none)."""
    params = nodeid.rpartition("[")[2].rstrip("]") if nodeid.endswith("]") else ""
    for part in params.split("-"):
        if _DEVICE.match(part):
            return part
    return "cpu"


def _module_name(path: Path) -> str:
    """Dotted module name of a file, walking up through its packages."""
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def _find_file(relative: str, roots: list[Path]) -> Path | None:
    for root in roots:
        candidate = root / relative
        if candidate.is_file():
            return candidate.resolve()
    return None


def invariants_of(nodeid: str, roots: list[Path]) -> tuple[str, ...]:
    """The invariant IDs a test declares, read from its module's marks.

    `roots` are the folders node IDs may be relative to (pytest's rootdir and
    the invocation directory). Returns () when the test cannot be found, so
    that a crash is still counted, against no invariant.
    """
    file_part, _, rest = nodeid.partition("::")
    path = _find_file(file_part, roots)
    if path is None or not rest:
        return ()
    try:
        target: object = importlib.import_module(_module_name(path))
    except Exception:  # noqa: BLE001 - a module that fails to import names nothing
        return ()
    levels = [list(getattr(target, "pytestmark", []))]
    for name in rest.split("[")[0].split("::"):
        target = getattr(target, name, None)
        if target is None:
            return ()
        levels.append(list(getattr(target, "pytestmark", [])))
    ids: list[str] = []
    # The function's own marks first, as pytest's iter_markers gives them:
    # the first ID is the test's primary invariant.
    for marks in reversed(levels):
        for mark in marks:
            if getattr(mark, "name", None) == "invariant":
                ids.extend(mark.args)
    return tuple(dict.fromkeys(ids))
