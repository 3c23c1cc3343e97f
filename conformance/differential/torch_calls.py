"""Torch calls built from the op table's templates, and their source text.

A row's `torch` template (`"{t0}.add_({t1}, alpha={p0})"`) is compiled once
into a Python function over (t0, t1, ..., p0, p1, ...), and formatted with
variable names and literal parameters for listings and repro scripts, so
what runs and what is printed can never disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import torch

from conformance.differential import functions
from oracle import OPS


def _names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


@cache
def compiled(op: str) -> Callable:
    spec = OPS[op]
    tensors, params = _names("t", spec.arity), _names("p", len(spec.params))
    body = spec.torch.format(**{n: n for n in tensors + params})
    source = f"def call({', '.join(tensors + params)}):\n    "
    source += body if spec.statement else f"return {body}"
    namespace: dict = {"torch": torch, **functions.namespace()}  # custom Functions
    exec(compile(source, f"<{op}>", "exec"), namespace)
    return namespace["call"]


def literal(value: object, kind: str | None = None) -> str:
    """Python source for a parameter value."""
    if kind == "index" or (isinstance(value, tuple) and any(isinstance(v, slice) for v in value)):
        return index_source(value)
    return repr(value)


def index_source(index: object) -> str:
    if not isinstance(index, tuple):
        index = (index,)
    if not index:
        return "()"
    parts = []
    for item in index:
        if isinstance(item, slice):
            text = ("" if item.start is None else str(item.start)) + ":"
            text += "" if item.stop is None else str(item.stop)
            if item.step not in (None, 1):
                text += f":{item.step}"
            parts.append(text)
        else:
            parts.append(repr(item))
    return ", ".join(parts) + ("," if len(parts) == 1 and not isinstance(index[0], slice) else "")


def call_source(op: str, tensor_names: list[str], params: tuple) -> str:
    spec = OPS[op]
    kinds = getattr(spec, "param_kinds", ()) or ()
    values = {f"t{i}": name for i, name in enumerate(tensor_names)}
    for i, value in enumerate(params):
        values[f"p{i}"] = literal(value, kinds[i] if i < len(kinds) else None)
    return spec.torch.format(**values)
