"""Torch calls built from the op table's templates, and their source text.

A row's `torch` template (`"{t0}.add_({t1}, alpha={p0})"`) is compiled once
into a Python function over (t0, t1, ..., p0, p1, ...), and formatted with
variable names and literal parameters for listings and repro scripts, so
what runs and what is printed can never disagree.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

import torch

from conformance.differential import functions
from oracle import OPS
from strategies.argspace import LEFT_OUT, keywords, spread


def _names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def _args(op: str) -> tuple:
    return OPS[op].args.args if OPS[op].args is not None else ()


def _optional(op: str) -> list[tuple[str, str]]:
    """(keyword, placeholder) of each argument the call may leave out."""
    return [(a.name, f"p{i}") for i, a in enumerate(_args(op)) if a.optional]


def _spreading(op: str) -> list[str]:
    """The placeholder of each list argument the call may pass one by one."""
    return [f"p{i}" for i, a in enumerate(_args(op)) if a.spreads]


def _keyword(name: str, placeholder: str) -> re.Pattern:
    """`, name={pN}` (or `name={pN}` first in the call) in a template."""
    return re.compile(rf"(, )?\b{name}=\{{{placeholder}\}}")


@cache
def compiled(op: str) -> Callable:
    spec = OPS[op]
    tensors, params = _names("t", spec.arity), _names("p", len(spec.params))
    template = spec.torch
    for name, placeholder in _optional(op):  # passed only when not LEFT_OUT
        template = _keyword(name, placeholder).sub(
            rf"\1**_keywords({name}={{{placeholder}}})", template
        )
    for placeholder in _spreading(op):  # a Spread's items, one by one
        template = template.replace(f"{{{placeholder}}}", f"*_spread({{{placeholder}}})")
    body = template.format(**{n: n for n in tensors + params})
    source = f"def call({', '.join(tensors + params)}):\n    "
    source += body if spec.statement else f"return {body}"
    namespace: dict = {
        "torch": torch,
        "_keywords": keywords,
        "_spread": spread,
        **functions.namespace(),  # custom Functions
    }
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
    template = spec.torch
    for name, placeholder in _optional(op):
        if params[int(placeholder[1:])] is LEFT_OUT:
            template = _keyword(name, placeholder).sub("", template)
    values = {f"t{i}": name for i, name in enumerate(tensor_names)}
    for i, value in enumerate(params):
        values[f"p{i}"] = literal(value, kinds[i] if i < len(kinds) else None)
    return template.format(**values)
