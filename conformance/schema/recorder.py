"""Every ATen call, observed at the dispatcher with a TorchDispatchMode.

The mode sits at the Python dispatch key, below autograd and
ADInplaceOrView and above the backend: what it sees is what a device's own
kernels (or a CompositeExplicitAutograd kernel) were asked to do, and the
calls a CompositeImplicitAutograd operator decomposes into are seen one by
one. (Calls a kernel makes from inside, below the mode, are not: the mode
is popped while the kernel runs, as it is for SchemaCheckMode.) For each call
it keeps the state of every tensor argument before and after (values as
bytes, shape, strides, storage offset, storage, version) and the outputs.

While `__torch_dispatch__` runs, torch has popped the mode, so the clones
and reads the recorder makes here are not observed again; clones and
`_version` reads bump no version counter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from conformance.schema.signature import Signature
from strategies.tensors import TENSOR_BASE as _BASE  # the C methods, never patched attributes


@dataclass(frozen=True)
class TensorState:
    """What a tensor looked like at one moment."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    storage: int  # the StorageImpl's address: identity, for empty tensors too
    version: int
    values: torch.Tensor | None  # a private copy, as bytes; None when unreadable

    def differences(self, other: TensorState) -> list[str]:
        """What changed between this state and a later one, in words."""
        seen = []
        for what, a, b in (
            ("shape", self.shape, other.shape),
            ("strides", self.stride, other.stride),
            ("storage offset", self.offset, other.offset),
            ("storage", self.storage, other.storage),
            ("version", self.version, other.version),
        ):
            if a != b:
                seen.append(f"{what} {a} -> {b}")
        if (
            self.values is not None
            and other.values is not None
            and not torch.equal(self.values, other.values)
        ):
            seen.append("values")
        return seen


def bytes_of(tensor: torch.Tensor) -> torch.Tensor | None:
    """The tensor's values as a flat uint8 copy: compared bit for bit, so NaN
    equals itself and -0.0 differs from 0.0."""
    if tensor.layout != torch.strided or tensor.is_quantized:
        return None
    try:
        plain = _BASE.resolve_neg(_BASE.resolve_conj(_BASE.detach(tensor)))
        flat = _BASE.reshape(_BASE.clone(plain, memory_format=torch.contiguous_format), (-1,))
        return _BASE.view(flat, torch.uint8)
    except RuntimeError:
        return None


def storage_of(tensor: torch.Tensor) -> int:
    try:
        return tensor.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):  # no storage (a wrapper subclass)
        return -id(tensor)


def state_of(tensor: torch.Tensor, values: bool = True) -> TensorState:
    return TensorState(
        shape=tuple(tensor.shape),
        stride=tuple(tensor.stride()) if tensor.layout == torch.strided else (),
        offset=tensor.storage_offset() if tensor.layout == torch.strided else 0,
        storage=storage_of(tensor),
        version=tensor._version if not tensor.is_inference() else -1,
        values=bytes_of(tensor) if values else None,
    )


def bind(schema: torch._C.FunctionSchema, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Argument name -> value, as the dispatcher passed them."""
    bound: dict[str, Any] = {}
    positional = [a for a in schema.arguments if not a.kwarg_only]
    for argument, value in zip(positional, args, strict=False):
        bound[argument.name] = value
    bound.update(kwargs)
    return bound


def tensors_in(value: Any) -> list[torch.Tensor]:
    # tree_flatten, not tree_leaves: torch 2.0's pytree has no tree_leaves
    return [leaf for leaf in pytree.tree_flatten(value)[0] if isinstance(leaf, torch.Tensor)]


@dataclass
class Call:
    """One ATen call as the dispatcher made it."""

    op: str  # "aten::add.Tensor"
    signature: Signature
    arguments: dict[str, Any]
    before: dict[str, list[TensorState]]
    after: dict[str, list[TensorState]] = field(default_factory=dict)
    result: Any = None
    outputs: list[list[torch.Tensor]] = field(default_factory=list)  # per return
    error: str = ""


_SIGNATURES: dict[str, Signature] = {}


def signature_of(func: torch._ops.OpOverload) -> Signature:
    key = func.name()
    found = _SIGNATURES.get(key)
    if found is None:
        found = _SIGNATURES[key] = Signature.of(func._schema)
    return found


class Recorder(TorchDispatchMode):
    """Records every ATen call made while it is active.

    ```
    with Recorder() as seen:
        torch.ops.aten.add.Tensor(x, y)
    seen.calls[0].op  # "aten::add.Tensor"
    ```
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Call] = []

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # The recorder never runs under torch.compile: keep torch from wrapping
        # __torch_dispatch__ in dynamo.disable, whose first call imports
        # torch._dynamo (seconds) into every process that records.
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        signature = signature_of(func)
        arguments = bind(func._schema, args, kwargs)
        call = Call(
            signature.name,
            signature,
            arguments,
            before={n: [state_of(t) for t in tensors_in(v)] for n, v in arguments.items()},
        )
        self.calls.append(call)
        try:
            result = func(*args, **kwargs)
        except Exception as error:
            call.error = f"{type(error).__name__}: {error}".splitlines()[0][:300]
            raise
        call.after = {n: [state_of(t) for t in tensors_in(v)] for n, v in arguments.items()}
        call.result = result
        returned = result if isinstance(result, tuple) else (result,)
        call.outputs = [tensors_in(r) for r in returned]
        return result
