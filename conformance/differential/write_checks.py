"""What the lockstep checks of out=, resize_, set_ and the _foreach_ in-place
ops beyond the pool (oracle/write_ops.py): the resize warning, and reading
torch's tensors without making their storage non-resizable."""

from __future__ import annotations

import contextlib
import warnings

from oracle import OPS

RESIZE_WARNING = "An output with one or more elements was resized"


def is_write(op: str) -> bool:
    """An out=, resize_, set_ or _foreach_ row (oracle.write_rows); not a leaf,
    nor a compiled program's own steps (graph_break, "aliased inputs")."""
    spec = OPS.get(op)
    return spec is not None and spec.impl == "writes"


def resizes(program) -> bool:
    """Whether a program may resize a storage: torch must then read its tensors
    without marking their storage non-resizable (Tensor.numpy does)."""
    return any(is_write(step.op) for step in program.steps)


# ---- warnings ------------------------------------------------------------------------


class _Recorder(contextlib.AbstractContextManager):
    """Records the resize warnings of one torch step into run.warned."""

    def __init__(self, run) -> None:
        self.run, self.catcher = run, warnings.catch_warnings(record=True)

    def __enter__(self):
        self.seen = self.catcher.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc) -> None:
        self.catcher.__exit__(*exc)
        self.run.warned = any(RESIZE_WARNING in str(w.message) for w in self.seen)


_NOTHING = contextlib.nullcontext()


def recording(run, step) -> contextlib.AbstractContextManager:
    """Around the torch call of `step`: record its warnings when it is a write."""
    return _Recorder(run) if is_write(step.op) else _NOTHING


def warning_differs(run, step, o_error) -> tuple | None:
    """The resize warning: torch gave it exactly where the model says; else
    (expected, actual, message)."""
    if not is_write(step.op) or o_error is not None:
        return None
    expected = bool(getattr(run.engine, "warned", False))
    run.engine.warned = False
    actual = bool(getattr(run, "warned", False))
    if expected == actual:
        return None
    says = "warned" if actual else "did not warn"
    return (
        expected,
        actual,
        f"torch {says} '{RESIZE_WARNING}'; the model expected "
        f"{'a warning' if expected else 'none'}",
    )


def warning_repro(code_lines: list[str], expected: bool) -> list[str]:
    """Repro lines: the step, with its warnings recorded, then the check."""
    lines = ["with __import__('warnings').catch_warnings(record=True) as seen:"]
    lines.append("    __import__('warnings').simplefilter('always')")
    lines += ["    " + line for line in code_lines]
    lines.append(f"warned = any({RESIZE_WARNING!r} in str(w.message) for w in seen)")
    lines.append(f"assert warned is {expected!r}, 'the resize warning: expected {expected}'")
    return lines
