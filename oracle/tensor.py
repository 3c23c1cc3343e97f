"""OTensor: geometry over a storage (oracle.storage) plus autograd state."""

from __future__ import annotations

import weakref

import numpy as np

from . import dtype_views
from .bits import apply_bits
from .dtype_views import through_bytes
from .dtypes import compute_dtype, round_to
from .errors import ErrorKind, OracleError
from .geometry import Shape
from .nodes import Node, as_strided_node
from .storage import Storage, VersionCounter, strided


class OTensor:
    """One torch tensor: its geometry over a storage, its counter, its autograd state.

    `_fn` is torch's raw grad_fn_ field (what torch's C++ checks read); `grad_fn()` is
    the accessor that regenerates a stale view's grad_fn, as torch does at every use.
    """

    def __init__(
        self,
        storage: Storage,
        offset: int,
        shape: Shape,
        strides: Shape,
        dtype: str,
        counter: VersionCounter,
        device: str = "cpu",
    ) -> None:
        self.storage, self.offset, self.shape, self.strides = storage, offset, shape, strides
        self.dtype, self.device, self.counter = dtype, device, counter
        self._rg = False  # the requires_grad_ field (set on leaves)
        self._fn: Node | None = None  # the grad_fn_ field
        self.grad: np.ndarray | None = None
        self.grad_dtype: str | None = None  # .grad's dtype (the leaf's, unless `.data =`)
        self._retain: weakref.ref | None = None  # retain_node's
        self.base: OTensor | None = None  # the root base, for a (differentiable) view
        self.no_grad_view = False  # a view made in no_grad mode (or of such a view)
        self.multi_output = False  # an output of unbind, split... (or a view of one)
        # every output of the call of a multi-output op that is no view (max(dim),
        # std_mean...) that made it, itself included: its siblings, as `a, b = op(x)` keeps
        self.outputs: list[OTensor] | None = None
        # which output of the node that made it (autograd's output_nr): a later
        # output of max(dim), std_mean... or a later piece of unsafe_split
        self.output_nr = 0
        self.inference_view = False  # a view of a normal tensor made under inference_mode
        self.custom_view = False  # returned by a custom Function (or a view of one)
        self.conj = self.neg = False  # torch's conjugate / negative bit (oracle.bits)
        self.attr_version = 0
        # made under inference_mode (or an alias of such a tensor), and whether it
        # has no version counter at all (the tensor itself and its views)
        self.inference = self.counterless = False
        self._acc: weakref.ref | None = None  # its AccumulateGrad, alive while a graph is
        self.computed_in: str | None = None  # out=: the dtype its values were computed in

    def array(self) -> np.ndarray:
        """A writable numpy window onto the storage (it aliases like the tensor)."""
        return strided(
            self.storage, self.offset, self.shape, self.strides, compute_dtype(self.dtype)
        )

    def values(self) -> np.ndarray:
        if through_bytes(self.dtype, self.storage.dtype):  # x.view(dtype)
            window = dtype_views.read(self.storage.buf, self.storage.dtype, *self._where())
            return apply_bits(window, self.conj, self.neg)
        return apply_bits(self.array(), self.conj, self.neg)

    def store(self, values: np.ndarray) -> None:
        """Write values into memory as they are to read back (through the bits)."""
        new = apply_bits(round_to(values, self.dtype), self.conj, self.neg)
        if through_bytes(self.dtype, self.storage.dtype):  # x.view(dtype)
            dtype_views.write(self.storage.buf, self.storage.dtype, *self._where(), new)
        else:
            self.array()[...] = new

    def _where(self) -> tuple:
        return self.offset, self.shape, self.strides, self.dtype

    def overwrite(self, values: np.ndarray) -> None:
        """Write values (torch's, to stop rounding drift) without bumping the version."""
        self.store(values)

    def add_grad(self, g: np.ndarray, dtype: str) -> None:
        """.grad = g, or .grad += g (keeping .grad's dtype)."""
        if self.grad is None:
            self.grad, self.grad_dtype = np.array(g), dtype
        else:
            self.grad = round_to(self.grad + g, self.grad_dtype)

    @property
    def version(self) -> int:
        if self.counterless:
            raise OracleError(ErrorKind.INFERENCE_VERSION)
        return self.counter.value

    @property
    def is_view(self) -> bool:
        return self.base is not None

    @property
    def requires_grad(self) -> bool:
        return (
            self._rg or self._fn is not None or (self.base is not None and self.base.requires_grad)
        )

    @property
    def refused_as_no_grad(self) -> bool:
        """Whether torch's refusal to write (or regenerate) this view reads as the no_grad
        one: its message opens with "A view was created in no_grad mode" for a view made
        in no_grad mode and for any other view without a grad_fn, whatever its
        CreationMeta (an output of unbind of a tensor that does not require grad), and
        errors are told apart by their first words (oracle.errors.classify)."""
        return self.no_grad_view or (self.multi_output and self._fn is None)

    def grad_fn(self) -> Node | None:
        """torch's grad_fn(): a view whose counter moved gets a fresh AsStridedBackward0
        (one made in no_grad mode raises instead)."""
        if self.base is None or (self._fn is None and not self.base.requires_grad):
            return self._fn
        if self.attr_version != self.counter.value:
            if self.inference_view:  # (oracle/modes.py)
                raise OracleError(
                    ErrorKind.INFERENCE_VIEW_INPLACE,
                    "A view was created in inference mode and its base ... has been modified",
                )
            if self.refused_as_no_grad:
                raise OracleError(
                    ErrorKind.NO_GRAD_VIEW_INPLACE,
                    "A view was created in no_grad mode and its base ... has been modified inplace",
                )
            if self.multi_output:
                raise OracleError(
                    ErrorKind.MULTI_OUTPUT_VIEW_INPLACE,
                    "its base or another view of its base has been modified inplace",
                )
            if self.custom_view:
                raise OracleError(ErrorKind.CUSTOM_FUNCTION_VIEW, "its base ... modified inplace")
            self.replace_grad_fn(as_strided_node(self, self.base))
            self.attr_version = self.counter.value
        return self._fn

    def replace_grad_fn(self, node: Node) -> None:
        """A new grad_fn_ (a regenerated view's, rebase_history's): the
        retains_grad hook moves to it. Whether it retains is read before the
        old node is dropped, which may free it (retain_node is weak)."""
        retains = self.retain_node is not None
        self._fn = node
        self.retain_node = node if retains else None

    @property
    def retain_node(self) -> Node | None:
        """The node holding its retains_grad hook. The node holds the hook, not
        the tensor the node: once no graph holds the node (t.detach_() drops
        t's grad_fn), it is freed, and with it the AccumulateGrad it reaches
        and that node's hooks."""
        return self._retain() if self._retain is not None else None

    @retain_node.setter
    def retain_node(self, node: Node | None) -> None:
        self._retain = weakref.ref(node) if node is not None else None

    def edge(self) -> Node | Accumulator | None:
        """gradient_edge(): the grad_fn, else the leaf's AccumulateGrad, else None."""
        fn = self.grad_fn()
        if fn is not None or not self._rg:
            return fn
        acc = self._acc() if self._acc is not None else None
        if acc is None:
            acc = Accumulator(self)
            self._acc = weakref.ref(acc)
        return acc

    @property
    def is_leaf(self) -> bool:
        """Python's t.is_leaf: it reads grad_fn, so it may regenerate it, or raise."""
        return self.grad_fn() is None

    @property
    def has_grad_fn(self) -> bool:
        return self.grad_fn() is not None

    def __repr__(self) -> str:
        return f"OTensor({self.values()!r}, dtype={self.dtype}, v{self.counter.value})"


class Accumulator:
    """AccumulateGrad: an edge into a leaf; remembers the leaf's shape when it was made."""

    def __init__(self, leaf: OTensor) -> None:
        self.leaf, self.out = leaf, (leaf.shape, leaf.dtype)


def new_tensor(values: np.ndarray, dtype: str, strides: Shape, device: str = "cpu") -> OTensor:
    """A fresh tensor on its own storage, laid out with the given (dense) strides."""
    shape = tuple(values.shape)
    size = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) if all(shape) else 0
    t = OTensor(
        Storage(np.zeros(size, compute_dtype(dtype)), dtype),
        0,
        shape,
        tuple(strides),
        dtype,
        VersionCounter(),
        device,
    )
    t.array()[...] = values
    return t
