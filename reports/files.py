"""Reading and writing report files.

Writes go through a temporary file and a rename, so a reader (or a second run
writing the same name) never sees half a report.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from reports import FORMAT, SCHEMA_VERSION


class ReportError(ValueError):
    """A file that is missing, unreadable, or not a report of this format."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        # mkstemp makes the file private; a report is as readable as any file.
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def dumps(report: dict[str, Any]) -> str:
    # default=str: a user property torch filled with something exotic must
    # not cost the whole report.
    return json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n"


def load(path: str | Path) -> dict[str, Any]:
    """A report, checked to be one this version can read; ReportError if not."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ReportError(f"{path}: cannot be read: {error}") from None
    except json.JSONDecodeError as error:
        raise ReportError(f"{path}: not JSON: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReportError(f"{path}: not a {FORMAT} file")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ReportError(
            f"{path}: schema version {data.get('schema_version')!r}, "
            f"this version reads {SCHEMA_VERSION}"
        )
    return data
