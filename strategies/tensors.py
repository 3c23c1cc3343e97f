"""Tensors with a known history: dtype, device, layout and autograd role.

A `TensorCase` is a torch tensor together with everything a test needs to
predict what torch should do with it: its values as NumPy, the leaf its
gradients reach and, for each of its elements, which element of that leaf it
reads. Tensors are built from fresh arrays with `torch.tensor` (a copy), never
by `from_numpy` aliasing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from hypothesis import strategies as st

from strategies.dtypes import DTYPES, arrays, elements
from strategies.layouts import LAYOUTS, Layout, ViewStep, apply_numpy, layouts
from strategies.programs import Leaf
from strategies.shapes import shapes as any_shapes

TORCH_DTYPES: dict[str, torch.dtype] = {name: getattr(torch, name) for name in DTYPES}
DTYPE_NAMES: dict[torch.dtype, str] = {v: k for k, v in TORCH_DTYPES.items()}

# plain: no autograd; leaf: a leaf that requires grad; view: a view of such a
# leaf; nonleaf: an op result (optionally viewed) whose graph reaches a leaf.
ROLES = ("plain", "leaf", "view", "nonleaf")
GRAD_ROLES = ("leaf", "view", "nonleaf")


def apply_torch(tensor: torch.Tensor, steps: tuple[ViewStep, ...]) -> torch.Tensor:
    for step in steps:
        if step.op == "permute":
            tensor = tensor.permute(*step.args[0])
        elif step.op == "slice":
            dim, start, stop, stride = step.args
            tensor = tensor[(slice(None),) * dim + (slice(start, stop, stride),)]
        elif step.op == "select":
            tensor = tensor.select(*step.args)
        elif step.op == "expand":
            tensor = tensor.expand(step.args[0])
        else:  # pragma: no cover - plans come from strategies.layouts
            raise ValueError(step.op)
    return tensor


# The C methods: reading values must not go through torch.Tensor's Python
# attributes, which a build (or a planted violation) may have changed: they
# are what the suite tests, not how it looks. torch 2.0 calls the class
# _TensorBase (docs/releases.md).
TENSOR_BASE = getattr(torch._C, "TensorBase", None) or torch._C._TensorBase


# torch dtypes NumPy holds as they are, and their compute dtypes: NumPy widens
# them (exactly) at a third of the cost of torch's .to(); bfloat16 has no NumPy dtype
_NUMPY_WIDENS: dict[torch.dtype, np.dtype] = {
    TORCH_DTYPES[name]: info.compute_dtype for name, info in DTYPES.items() if name != "bfloat16"
}


def to_numpy(tensor: torch.Tensor, resizable: bool = False) -> np.ndarray:
    """A tensor's values in its compute dtype (float64, complex128, int64, bool).

    Tensor.numpy marks the storage it reads non-resizable, for good: a later
    resize_ (or out= resize) that must grow it raises. `resizable` reads a
    copy instead (about 8 µs more a call)."""
    widened = _NUMPY_WIDENS.get(tensor.dtype)
    if resizable:
        tensor = TENSOR_BASE.clone(TENSOR_BASE.detach(tensor))
    if widened is not None:
        # force: detach, cpu, resolve_conj and resolve_neg in one call (C++)
        return TENSOR_BASE.numpy(tensor, force=True).astype(widened, order="C")  # (a copy)
    plain = TENSOR_BASE.detach(tensor)
    if plain.device.type != "cpu":
        plain = TENSOR_BASE.cpu(plain)
    info = DTYPES[DTYPE_NAMES[tensor.dtype]]
    target = {"float": torch.float64, "complex": torch.complex128, "int": torch.int64}.get(
        info.kind
    )
    if target is not None and plain.dtype != target:
        plain = TENSOR_BASE.to(plain, target)
    plain = TENSOR_BASE.resolve_neg(TENSOR_BASE.resolve_conj(plain))
    return TENSOR_BASE.numpy(plain).copy()


@dataclass
class TensorCase:
    tensor: torch.Tensor
    values: np.ndarray  # what `tensor` holds, in the compute dtype
    dtype: str
    device: str
    role: str
    layout: Layout
    root: torch.Tensor | None  # the leaf that receives gradients; None when none does
    index_map: np.ndarray  # flat index into `root` of each element of `tensor`
    root_values: np.ndarray = field(repr=False)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.layout.shape

    @property
    def requires_grad(self) -> bool:
        return self.role != "plain"

    def grad_for_root(self, grad: np.ndarray) -> np.ndarray:
        """The gradient `root` receives when `tensor` receives `grad`."""
        assert self.root is not None
        total = np.zeros(self.root.numel(), dtype=np.result_type(grad, np.float64))
        np.add.at(total, self.index_map.reshape(-1), np.broadcast_to(grad, self.shape).reshape(-1))
        return total.reshape(tuple(self.root.shape))

    def source(self, name: str = "x") -> str:
        """Python that builds this tensor from scratch."""
        dtype = f"torch.{self.dtype}"
        values = self.root_values.tolist()
        build = f"torch.tensor({values!r}, dtype={dtype}, device={self.device!r})"
        if self.root_values.size == 0:  # as leaf_tensor builds it: contiguous strides
            shape = tuple(self.root_values.shape)
            build = f"torch.empty({shape!r}, dtype={dtype}, device={self.device!r})"
        view = self.layout.source()
        if self.role == "plain":
            return f"{name} = {build}{view}"
        if self.role == "leaf":
            if not view:
                return f"{name} = {build}.requires_grad_()"
            return f"{name} = {build}{view}.detach().requires_grad_()"
        lines = [f"root = {build}.requires_grad_()"]
        if self.role == "view":
            lines.append(f"{name} = root{view or '.view_as(root)'}")
        else:
            lines.append(f"{name} = (root * 1){view}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer, cycle: bool) -> None:  # Hypothesis's printer
        printer.text(repr(self))

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.shape)) or "0-d"
        values = self.values.tolist()
        return f"<{self.dtype} {shape} {self.role} {self.layout} on {self.device}: {values!r}>"


def build_case(
    root_values: np.ndarray, dtype: str, device: str, role: str, layout: Layout
) -> TensorCase:
    """Make the torch tensor a case describes."""
    root = leaf_tensor(root_values, dtype, device, requires_grad=False)
    values = np.array(apply_numpy(root_values, layout.steps), order="C")
    identity = np.arange(math.prod(layout.shape), dtype=np.int64).reshape(layout.shape)
    if role == "plain":
        return TensorCase(
            apply_torch(root, layout.steps),
            values,
            dtype,
            device,
            role,
            layout,
            None,
            layout.index_map(),
            root_values,
        )
    if role == "leaf":
        if layout.steps:
            tensor = apply_torch(root, layout.steps).detach().requires_grad_()
        else:
            tensor = root.requires_grad_()
        return TensorCase(
            tensor, values, dtype, device, role, layout, tensor, identity, root_values
        )
    root.requires_grad_()
    if role == "view":
        tensor = apply_torch(root, layout.steps) if layout.steps else root.view_as(root)
    elif role == "nonleaf":
        tensor = apply_torch(root * 1, layout.steps)
    else:
        raise ValueError(f"unknown role {role!r}")
    return TensorCase(
        tensor, values, dtype, device, role, layout, root, layout.index_map(), root_values
    )


@st.composite
def tensor_cases(
    draw: st.DrawFn,
    device: str,
    dtypes: tuple[str, ...],
    *,
    roles: tuple[str, ...] = ROLES,
    layout_kinds: tuple[str, ...] = LAYOUTS,
    shape: tuple[int, ...] | None = None,
    shapes: st.SearchStrategy[tuple[int, ...]] | None = None,
    values: Callable[[str], st.SearchStrategy] | None = None,
) -> TensorCase:
    """A tensor of one of `dtypes` on `device`, in one of `roles` and layouts.

    Roles that need autograd are only drawn for dtypes that can require grad;
    asking for them alone narrows the dtypes to floating and complex ones.
    """
    if not set(roles) - set(GRAD_ROLES):
        dtypes = tuple(d for d in dtypes if DTYPES[d].can_require_grad)
    if not dtypes:
        raise ValueError("no dtype fits the roles asked for")
    dtype = draw(st.sampled_from(dtypes))
    fitting = [r for r in roles if r == "plain" or DTYPES[dtype].can_require_grad]
    role = draw(st.sampled_from(fitting))
    if shape is None:
        shape = draw(shapes if shapes is not None else any_shapes())
    layout = draw(layouts(shape, layout_kinds))
    root_values = draw(arrays(dtype, layout.root_shape, values or elements))
    return build_case(root_values, dtype, device, role, layout)


def leaf_tensor(
    values: np.ndarray,
    dtype: str,
    device: str,
    requires_grad: bool,
    geometry: tuple[tuple[int, ...], int, int] | None = None,
    layout: str = "",
) -> torch.Tensor:
    """A contiguous leaf holding `values` (copied): the tensor that the spelling of
    a listing or repro (strategies.programs.Leaf.source, TensorCase.source) rebuilds,
    strides and storage offset included. With `geometry` (Leaf.geometry, of
    `layout`): a leaf with those strides and offset on a storage of its own.

    Not torch.tensor(values) alone: it copies with memory_format=preserve, so it
    keeps the strides of a non-contiguous array, and those of any empty one, and
    NumPy (1.23 on) gives a new empty array zero strides (np.ones((1, 0, 2)).strides
    is (0, 0, 0)). Torch checks an empty tensor's strides all the same:
    view_as_complex refuses a last stride of 0."""
    if geometry is not None:
        strides, offset, _ = geometry
        leaf = Leaf(np.asarray(values), dtype, device, requires_grad, layout=layout)
        flat = torch.tensor(leaf.storage_values(), dtype=TORCH_DTYPES[dtype], device=device)
        made = flat.as_strided(values.shape, strides, offset).detach()  # no view: a leaf
        return made.requires_grad_() if requires_grad else made
    values = np.asarray(values, order="C")  # (a copy only where it is not)
    if values.size == 0:  # torch.empty: contiguous strides, as Leaf.source spells it
        return torch.empty(
            values.shape, dtype=TORCH_DTYPES[dtype], device=device, requires_grad=requires_grad
        )
    return torch.tensor(
        values, dtype=TORCH_DTYPES[dtype], device=device, requires_grad=requires_grad
    )
