"""The catalogue's rules on every ATen operator against its own schema's annotations."""

from __future__ import annotations

from .invariant import Invariant
from .sources import (
    SCHEMA_README,
)

RULES: tuple[Invariant, ...] = (
    # schema: every ATen operator against its own schema's annotations
    Invariant(
        "schema.alias_shares_storage",
        "An output annotated as an alias of an input (Tensor(a) with no '!') shares that "
        "input's storage.",
        "There is also another situation in which we use annotations, namely views. "
        "`transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)` An alias to the memory "
        "represented by `self` may be also returned, however it is not mutated.",
        SCHEMA_README,
    ),
    Invariant(
        "schema.fresh_output",
        "An output without an alias annotation shares storage with no input.",
        "`abs(Tensor self) -> Tensor` stays the same as it will always allocate new memory.",
        SCHEMA_README,
    ),
    Invariant(
        "schema.input_unchanged",
        "An input not annotated mutable keeps its values, shape, strides, storage offset and "
        "version counter.",
        "A write annotation, as indicated by an exclamation mark, indicates that they both "
        "*may* also be written to.",
        SCHEMA_README,
    ),
    Invariant(
        "schema.mutable_bumps_version",
        "An input annotated mutable (Tensor(a!)) that the op wrote has its version counter bumped.",
        "`abs_(Tensor(a!) self) -> Tensor(a!)` `self` may be written to and returned. [...] "
        "Every tensor keeps a version counter, that is incremented every time it is marked "
        "dirty in any operation.",
        SCHEMA_README + "; docs/source/notes/autograd.md (In-place correctness checks)",
    ),
    Invariant(
        "schema.out_returns_out",
        "An out= call returns `out` itself and writes its result into it.",
        "`abs(Tensor self, *, Tensor(a!) out) -> Tensor(a!)` In the Python frontend `out` can "
        "be passed as a keyword argument and may be written to.",
        SCHEMA_README,
    ),
    Invariant(
        "schema.inplace_returns_self",
        "An in-place variant returns `self` itself.",
        "`abs_(Tensor(a!) self) -> Tensor(a!)` `self` may be written to and returned. Further, "
        "the annotation indicates that the return value may alias the input. This indicates an "
        "inplace function and by convention ends in a single '_'.",
        SCHEMA_README,
    ),
)
