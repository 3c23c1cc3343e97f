"""What a failed test's pytest report says, boiled down for a reader: the
traceback's frames and the minimal example Hypothesis shrank to."""

from __future__ import annotations

import re

# Hypothesis's notes on a failure, after the exception message: the shrunk
# example, then advice on how to replay it.
_EXAMPLE_START = re.compile(r"^(Falsifying example|Failing test case|Falsifying explicit example)")
_EXAMPLE_END = re.compile(r"^(Explanation:|You can reproduce|You can add @seed|Unreliable)")
_MAX_FRAMES = 12


def crash_text(longrepr: object) -> str:
    """The exception as pytest printed it on its `E` lines, notes included."""
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    text = str(longrepr or "")
    lines = [line[1:].lstrip() for line in text.splitlines() if line.startswith("E ")]
    return "\n".join(lines) or text


def minimal_example(text: str) -> str:
    """The "Falsifying example" block Hypothesis appended to an error, or ""."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _EXAMPLE_START.match(line.strip())), None)
    if start is None:
        return ""
    block: list[str] = []
    for line in lines[start:]:
        if _EXAMPLE_END.match(line.strip()):
            break
        block.append(line)
    return "\n".join(block).rstrip()


def traceback_summary(longrepr: object) -> str:
    """One line per frame (file:line: where) and the exception's first line."""
    chain = getattr(longrepr, "chain", None)
    if not chain:
        # A crashed worker's or a collection error's report is plain text.
        text = str(longrepr or "").strip()
        return "\n".join(text.splitlines()[-_MAX_FRAMES:])
    lines: list[str] = []
    for tb, crash, description in chain:
        for entry in getattr(tb, "reprentries", []):
            location = getattr(entry, "reprfileloc", None)
            if location is None:
                continue
            where = f"{location.path}:{location.lineno}"
            lines.append(f"{where}: {location.message}" if location.message else where)
        if crash is not None:
            lines.append(crash.message.splitlines()[0] if crash.message else "")
        if description:
            lines.append(description.strip())
    if len(lines) > _MAX_FRAMES:
        lines = ["..."] + lines[-_MAX_FRAMES:]
    return "\n".join(lines)
