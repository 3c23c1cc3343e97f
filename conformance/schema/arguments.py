"""Arguments for an operator, drawn from its schema's argument types with
the suite's strategies: dtypes, shapes (0-d and empty included) and
layouts (contiguous, transposed, strided, sliced with an offset, expanded).

A type alone says little (`int dim` must be a dimension of `self`, `int[]
size` a shape), so names refine the draw: one dtype and one shape are drawn
per call, and `dim`, `size`, `index` and the like are drawn to fit them.
Arguments that no strategy can make raise `Uncoverable`, with the reason;
the sweep lists such operators as not covered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from conformance.schema.semantics import INT_ENUMS
from conformance.schema.signature import Param, Signature
from strategies.dtypes import DTYPES, elements, seeded_values
from strategies.layouts import LAYOUTS, WRITABLE_LAYOUTS, layouts
from strategies.shapes import shapes
from strategies.tensors import TORCH_DTYPES, TensorCase, build_case


class Uncoverable(Exception):
    """No strategy makes an argument of this schema."""


_SCALAR_TYPES = {
    "Tensor",
    "Optional[Tensor]",
    "List[Tensor]",
    "List[Optional[Tensor]]",
    "Optional[List[Optional[Tensor]]]",
    "int",
    "Optional[int]",
    "List[int]",
    "Optional[List[int]]",
    "float",
    "Optional[float]",
    "List[float]",
    "Optional[List[float]]",
    "bool",
    "Optional[bool]",
    "List[bool]",
    "number",
    "Optional[number]",
    "List[number]",
    "ScalarType",
    "Optional[ScalarType]",
    "Layout",
    "Optional[Layout]",
    "Device",
    "Optional[Device]",
    "MemoryFormat",
    "Optional[MemoryFormat]",
    "str",
    "Optional[str]",
    "Optional[Generator]",
    "complex",
}

# Strings without a default, by argument name: values every kernel accepts.
_STRINGS = {
    "reduce": "sum",
    "reduction": "mean",
    "approximate": "none",
    "rounding_mode": "trunc",
    "side": "left",
    "mode": "reduced",
    "interpolation": "linear",
    "padding": "valid",
    "equation": "i->i",
    "dtype": "float32",
}


_DIM_NAMES = {
    "dim",
    "dim0",
    "dim1",
    "dim2",
    "axis",
    "axis0",
    "axis1",
    "start_dim",
    "end_dim",
    "source",
    "destination",
    "dimension",
}
_COUNT_NAMES = {"chunks", "sections", "split_size", "repeats", "n", "k", "groups", "size", "step"}
_INDEX_NAMES = {"index", "indices", "idx", "target", "offsets", "lengths", "counts"}
_MASK_NAMES = {"mask"}


def uncoverable_reason(sig: Signature) -> str | None:
    """Why no call of this schema can be made, or None."""
    if not sig.touches_tensors:
        return "no tensor argument or result: nothing for the rules to check"
    for p in sig.params:
        if p.type in _SCALAR_TYPES:
            if p.type == "str" and not p.has_default and p.name not in _STRINGS:
                return f"str argument `{p.name}` has no default and no known value"
            continue
        if p.has_default or p.type.startswith("Optional["):
            continue
        return f"argument `{p.name}` of type {p.type}: no strategy makes one"
    return None


@dataclass
class Drawn:
    """One call's arguments, with what is needed to print it."""

    kwargs: dict[str, Any] = field(default_factory=dict)
    cases: dict[str, TensorCase | list[TensorCase]] = field(default_factory=dict)
    dtype: str = "float32"
    shape: tuple[int, ...] = ()

    def describe(self) -> str:
        parts = []
        for name, value in self.kwargs.items():
            case = self.cases.get(name)
            if isinstance(case, TensorCase):
                parts.append(f"{name}={case!r}")
            elif isinstance(case, list):
                parts.append(f"{name}=[{', '.join(repr(c) for c in case)}]")
            else:
                parts.append(f"{name}={value!r}")
        return ", ".join(parts)

    def source(self, op: str, outs: dict[str, Any] | None = None, mode: bool = False) -> str:
        """A script that makes the same call with torch alone; `outs`: the
        out= tensors, made empty; `mode`: make the call under a pass-through
        TorchDispatchMode, where the kernels' own results are seen."""
        lines = ["import torch", ""]
        call = []
        for name, value in self.kwargs.items():
            case = self.cases.get(name)
            if isinstance(case, TensorCase):
                lines.append(case.source(f"arg_{name}"))
                call.append(f"{name}=arg_{name}")
            elif isinstance(case, list):
                for i, c in enumerate(case):
                    lines.append(c.source(f"arg_{name}_{i}"))
                call.append(f"{name}=[{', '.join(f'arg_{name}_{i}' for i in range(len(case)))}]")
            else:
                call.append(f"{name}={_literal(value)}")
        for name, value in (outs or {}).items():
            tensors = value if isinstance(value, list | tuple) else [value]
            made = [f"torch.empty(0, dtype={t.dtype}, device={str(t.device)!r})" for t in tensors]
            listed = "[" + ", ".join(made) + "]"
            call.append(f"{name}={listed if isinstance(value, list | tuple) else made[0]}")
        packet, _, overload = op.removeprefix("aten::").partition(".")
        made_call = f"torch.ops.aten.{packet}.{overload or 'default'}({', '.join(call)})"
        if not mode:
            lines.append(f"result = {made_call}")
            return "\n".join(lines)
        lines += [
            "",
            "from torch.utils._python_dispatch import TorchDispatchMode",
            "",
            "",
            "class PassThrough(TorchDispatchMode):  # changes nothing; shows what kernels return",
            "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):",
            "        result = func(*args, **(kwargs or {}))",
            "        print(func, '->', result)",
            "        return result",
            "",
            "",
            "with PassThrough():",
            f"    result = {made_call}",
        ]
        return "\n".join(lines)


def _literal(value: Any) -> str:
    if isinstance(value, torch.dtype | torch.layout | torch.memory_format):
        return str(value)
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if isinstance(value, torch.Tensor):  # an out= tensor made empty on purpose
        return f"torch.empty({tuple(value.shape)!r}, dtype={value.dtype})"
    return repr(value)


def _scalar_type_code(dtype: str) -> int:
    """The number TorchScript passes for a dtype (c10::ScalarType's value)."""
    codes = {
        "uint8": 0,
        "int8": 1,
        "int16": 2,
        "int32": 3,
        "int64": 4,
        "float16": 5,
        "float32": 6,
        "float64": 7,
        "complex64": 9,
        "complex128": 10,
        "bool": 11,
        "bfloat16": 15,
    }
    return codes[dtype]


def _dims(rank: int) -> st.SearchStrategy[int]:
    return st.integers(-rank, rank - 1) if rank else st.sampled_from([0, -1])


def _contiguous_strides(shape: tuple[int, ...]) -> list[int]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


class ArgumentDrawer:
    """Draws one call of `sig` on `device` from `dtypes`."""

    def __init__(self, sig: Signature, device: str, dtypes: tuple[str, ...]) -> None:
        self.sig = sig
        self.device = device
        self.dtypes = dtypes
        floating = tuple(d for d in dtypes if DTYPES[d].kind == "float")
        # half the draws from floating dtypes: most kernels are written for them first
        self.dtype_strategy = (
            st.one_of(st.sampled_from(floating), st.sampled_from(dtypes))
            if floating
            else st.sampled_from(dtypes)
        )

    def draw(self, data: st.DataObject) -> Drawn:
        drawn = Drawn()
        drawn.dtype = data.draw(self.dtype_strategy, label="dtype")
        drawn.shape = data.draw(shapes(), label="shape")
        for p in self.sig.params:
            if p.is_out:
                continue  # made by the sweep, which knows the result's shape
            if (p.has_default or p.type.startswith("Optional[")) and data.draw(
                st.booleans(), label=f"{p.name}: default"
            ):
                if p.has_default:
                    continue
                drawn.kwargs[p.name] = None
                continue
            drawn.kwargs[p.name] = self._value(data, p, drawn)
        return drawn

    # -- one argument ---------------------------------------------------------

    def _case(
        self,
        data: st.DataObject,
        dtype: str,
        shape: tuple[int, ...],
        kinds: tuple[str, ...],
        label: str,
        bound: int | None = None,
    ) -> TensorCase:
        """A plain tensor in a drawn layout. Its values come from one drawn
        seed, not one draw per element: element draws made generation, not
        the operators, the sweep's cost (as they did for the differential)."""
        layout = data.draw(layouts(shape, kinds), label=f"{label}: layout")
        value_seed = data.draw(st.integers(0, 2**32 - 1), label=f"{label}: values")
        if bound is not None:  # indices: every value valid for a side of `bound`
            values = np.random.default_rng(value_seed).integers(0, bound, layout.root_shape)
        else:
            values = seeded_values(dtype, layout.root_shape, value_seed)
        return build_case(values, dtype, self.device, "plain", layout)

    def _tensor(
        self, data: st.DataObject, p: Param, drawn: Drawn, label: str
    ) -> tuple[torch.Tensor, TensorCase]:
        dtype, bound = drawn.dtype, None
        if p.name in _INDEX_NAMES:
            dtype, bound = "int64", max(1, min(drawn.shape, default=1))
        elif p.name in _MASK_NAMES:
            dtype = "bool"
        kinds = WRITABLE_LAYOUTS if p.write else LAYOUTS
        case = self._case(data, dtype, drawn.shape, kinds, label, bound)
        return case.tensor, case

    def _value(self, data: st.DataObject, p: Param, drawn: Drawn) -> Any:
        t = (
            p.type.removeprefix("Optional[").removesuffix("]")
            if p.type.startswith("Optional[")
            else p.type
        )
        rank = len(drawn.shape)
        if t == "Tensor":
            tensor, case = self._tensor(data, p, drawn, p.name)
            drawn.cases[p.name] = case
            return tensor
        if t in ("List[Tensor]", "List[Optional[Tensor]]"):
            if t == "List[Optional[Tensor]]":  # index(self, indices): one index for dim 0
                bound = max(drawn.shape[0] if drawn.shape else 1, 1)
                length = data.draw(st.integers(0, 3), label=f"{p.name}: length")
                index = self._case(data, "int64", (length,), ("contiguous",), p.name, bound)
                drawn.cases[p.name] = [index]
                return [index.tensor]
            count = data.draw(st.integers(1, 3), label=f"{p.name}: length")
            pairs = [self._tensor(data, p, drawn, f"{p.name}[{i}]") for i in range(count)]
            drawn.cases[p.name] = [c for _, c in pairs]
            return [t for t, _ in pairs]
        if t == "int":
            if p.name == "dtype":  # a ScalarType passed as its number (TorchScript builtins)
                return _scalar_type_code(drawn.dtype)
            if p.name in _DIM_NAMES:
                return data.draw(_dims(rank), label=p.name)
            if p.name in _COUNT_NAMES:
                return data.draw(st.integers(1, 3), label=p.name)
            if p.name in INT_ENUMS:  # an enum's values only (semantics.py)
                return data.draw(st.sampled_from(INT_ENUMS[p.name].values), label=p.name)
            return data.draw(st.integers(-1, 3), label=p.name)
        if t == "List[int]":
            return self._int_list(data, p, drawn)
        if t in ("float", "List[float]"):
            value = data.draw(st.sampled_from([0.5, 1.0, 2.0, 0.0, -1.5]), label=p.name)
            return value if t == "float" else [value] * (p.length or max(rank, 1))
        if t in ("bool", "List[bool]"):
            value = data.draw(st.booleans(), label=p.name)
            return value if t == "bool" else [value] * (p.length or 3)
        if t in ("number", "List[number]"):
            value = data.draw(elements(drawn.dtype), label=p.name)
            return value if t == "number" else [value] * (p.length or 1)
        if t == "complex":
            return data.draw(elements("complex64"), label=p.name)
        if t == "ScalarType":
            return TORCH_DTYPES[data.draw(st.sampled_from(self.dtypes), label=p.name)]
        if t == "Layout":
            return torch.strided
        if t == "Device":
            return torch.device(self.device)
        if t == "MemoryFormat":
            return data.draw(
                st.sampled_from([torch.contiguous_format, torch.preserve_format]), label=p.name
            )
        if t == "str":
            return p.default if p.has_default else _STRINGS[p.name]
        if t == "Generator":
            return None
        raise Uncoverable(f"argument `{p.name}` of type {p.type}: no strategy makes one")

    def _int_list(self, data: st.DataObject, p: Param, drawn: Drawn) -> list[int]:
        shape = list(drawn.shape)
        rank = len(shape)
        name = p.name
        if name in ("size", "shape", "sizes"):
            choice = data.draw(st.sampled_from(["same", "flat", "ones"]), label=name)
            if choice == "flat":
                return [math.prod(shape)]
            if choice == "ones":
                return [1] * (p.length or rank)
            return shape
        if name == "stride":
            return _contiguous_strides(tuple(shape))
        if name in ("dims", "dim", "perm"):
            if p.length:
                return [data.draw(_dims(rank))] * p.length
            return (
                list(data.draw(st.permutations(range(rank)), label=name))
                if name != "dim"
                else [data.draw(_dims(rank), label=name)]
            )
        if name in ("padding", "pad", "output_padding"):
            return [0] * (p.length or 2 * max(rank, 1))
        if name in ("split_sizes", "split_size"):
            dim0 = shape[0] if shape else 1
            return [dim0]
        if name in ("repeats",):
            return [1] * rank
        return [1] * (p.length or max(rank, 1))


def empty_out(dtype: str, device: str) -> torch.Tensor:
    """An empty `out=` tensor: the kernel must resize it."""
    return torch.empty(0, dtype=TORCH_DTYPES[dtype], device=device)
