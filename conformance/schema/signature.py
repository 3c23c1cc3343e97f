"""An operator's schema as the checks read it: which arguments and returns
carry which alias set, and which are written.

`aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)`
says: `self` may be written (`!`) and the result is `self` (set `a`).
`Tensor(a) self ... -> Tensor(a)` is a view of `self`; a return with no
annotation is new memory. torch's `FunctionSchema` gives the arguments'
annotations; the annotation of the elements of a returned list
(`Tensor(a)[]`) it does not expose, so returns are read from the schema's
text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import torch

_ANNOTATION = re.compile(r"^Tensor\(([\w|]+)(?: -> [\w*]+)?(!)?\)")


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # torch's real type: "Tensor", "Optional[Tensor]", "List[int]", ...
    alias: str | None  # the alias set before the call ("a"), or None
    write: bool  # annotated `!`: the op may write it
    kwarg_only: bool
    has_default: bool
    default: object
    length: int | None  # N of `int[N]`

    @property
    def holds_tensors(self) -> bool:
        return "Tensor" in self.type

    @property
    def is_out(self) -> bool:
        """An `out=` argument: keyword-only and written."""
        return self.write and self.kwarg_only


@dataclass(frozen=True)
class Return:
    type: str  # "Tensor", "List[Tensor]", "int", ...
    alias: str | None  # "a"; "b|a" when the result may be either (a new tensor or self)
    write: bool

    @property
    def alias_sets(self) -> tuple[str, ...]:
        return tuple(self.alias.split("|")) if self.alias else ()

    @property
    def holds_tensors(self) -> bool:
        return "Tensor" in self.type


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return parts + [tail] if tail else parts


def _returns_text(schema: torch._C.FunctionSchema) -> list[str]:
    text = str(schema)
    returns = text[text.rindex(") -> ") + len(") -> ") :].strip()
    if returns.startswith("(") and returns.endswith(")"):
        returns = returns[1:-1]
    return _split_top_level(returns)


@dataclass(frozen=True)
class Signature:
    name: str  # "aten::add_.Tensor"
    params: tuple[Param, ...]
    returns: tuple[Return, ...]
    text: str
    # carries an alias or mutation annotation anywhere, as torch counts them
    # (1,696 of the 3,754 ATen schemas of torch 2.13.0)
    annotated: bool

    @classmethod
    def of(cls, schema: torch._C.FunctionSchema) -> Signature:
        params = []
        for arg in schema.arguments:
            info = arg.alias_info
            params.append(
                Param(
                    name=arg.name,
                    type=str(arg.real_type),
                    alias=next(iter(sorted(info.before_set)), None) if info else None,
                    write=bool(info and info.is_write),
                    kwarg_only=bool(arg.kwarg_only),
                    has_default=bool(arg.has_default_value()),
                    default=arg.default_value if arg.has_default_value() else None,
                    length=arg.N,
                )
            )
        returns = []
        for ret, text in zip(schema.returns, _returns_text(schema), strict=False):
            match = _ANNOTATION.match(text)
            returns.append(
                Return(
                    type=str(ret.real_type),
                    alias=match.group(1) if match else None,
                    write=bool(match and match.group(2)),
                )
            )
        overload = f".{schema.overload_name}" if schema.overload_name else ""
        annotated = any(a.alias_info is not None for a in [*schema.arguments, *schema.returns])
        return cls(
            f"{schema.name}{overload}", tuple(params), tuple(returns), str(schema), annotated
        )

    @cached_property
    def touches_tensors(self) -> bool:
        return any(p.holds_tensors for p in self.params) or any(
            r.holds_tensors for r in self.returns
        )

    @cached_property
    def is_out(self) -> bool:
        return any(p.is_out for p in self.params)

    @cached_property
    def is_inplace(self) -> bool:
        """An in-place variant: `foo_(Tensor(a!) self, ...) -> Tensor(a!)`."""
        base = self.name.split("::")[-1].split(".")[0]
        first = self.params[0] if self.params else None
        return (
            base.endswith("_")
            and not base.endswith("__")
            and first is not None
            and first.write
            and not first.kwarg_only
        )

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def params_in(self, alias: str) -> list[Param]:
        return [p for p in self.params if p.alias == alias]


def overload_name(op: torch._ops.OpOverload) -> str:
    """aten::add.Tensor, aten::neg (the default overload has no suffix)."""
    schema = op._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name
