"""The view family's rows of the op table, one per op: the torch call, the
geometry the model gives the view (oracle.view_geometry, oracle.view_ops:
its shape, strides, offset and how its gradient maps back), the dtypes it
takes, and its argument space (strategies.view_args: each argument's
classes, and how the property tests and the differential draw them).

oracle/ops.py adds them to the table in this order, the order in which the
differential picks among them. A multi-output op is one row per call and
output index: `x.split(2, 0)[1]`.
"""

from __future__ import annotations

from collections.abc import Callable

from strategies.view_args import SPACES

from . import view_geometry as vg
from . import view_ops as vo

ALL = ("float", "complex", "int", "bool")


def _view(params: tuple, torch: str, geom: Callable, impl: str = "view", **kw: object) -> dict:
    return dict(arity=1, params=params, torch=torch, impl=impl, view=True, geom=geom, **kw)


def _bit_view(torch: str, geom: Callable) -> dict:
    """H, mH and adjoint(): a transpose that, on a complex tensor, is also a
    conj view (oracle.complex_views): its conj bit set, nothing computed."""
    return dict(arity=1, params=(), torch=torch, impl="bit_view", view=True, geom=geom)


ROWS: dict[str, dict] = {
    # param_kinds "index": printed as x[0, 1:] (conformance/differential/torch_calls.py)
    "getitem": _view(("index",), "{t0}[{p0}]", vg.getitem, param_kinds=("index",), impl="getitem"),
    "select": _view(("dim", "index"), "{t0}.select({p0}, {p1})", vg.select),
    "view": _view(("shape",), "{t0}.view({p0})", vg.view),
    "reshape": _view(("shape",), "{t0}.reshape({p0})", vg.reshape, impl="reshape"),
    "transpose": _view(("d0", "d1"), "{t0}.transpose({p0}, {p1})", vg.transpose),
    "t": _view((), "{t0}.t()", vg.t),
    "permute": _view(("dims",), "{t0}.permute({p0})", vg.permute),
    "expand": _view(("shape",), "{t0}.expand({p0})", vg.expand),
    "unsqueeze": _view(("dim",), "{t0}.unsqueeze({p0})", vg.unsqueeze),
    # dim: one, a tuple, or left out: every dim of size 1 (param_defaults' None)
    "squeeze": _view(("dim",), "{t0}.squeeze(dim={p0})", vg.squeeze, param_defaults=(None,)),
    # the rest of tensor_view.rst
    "narrow": _view(("dim", "start", "length"), "{t0}.narrow({p0}, {p1}, {p2})", vo.narrow),
    "diagonal": _view(("offset", "dim1", "dim2"), "{t0}.diagonal({p0}, {p1}, {p2})", vo.diagonal),
    "movedim": _view(("source", "destination"), "{t0}.movedim({p0}, {p1})", vo.movedim),
    "swapaxes": _view(("axis0", "axis1"), "{t0}.swapaxes({p0}, {p1})", vg.transpose),
    "swapdims": _view(("dim0", "dim1"), "{t0}.swapdims({p0}, {p1})", vg.transpose),
    "unflatten": _view(("dim", "sizes"), "{t0}.unflatten({p0}, {p1})", vo.unflatten),
    "unfold": _view(("dimension", "size", "step"), "{t0}.unfold({p0}, {p1}, {p2})", vo.unfold),
    "as_strided": _view(
        ("size", "stride", "offset"), "{t0}.as_strided({p0}, {p1}, {p2})", vo.as_strided
    ),
    "mT": _view((), "{t0}.mT", vo.mT),
    "T": _view((), "{t0}.T", vo.T),
    "H": _bit_view("{t0}.H", vo.T),
    "mH": _bit_view("{t0}.mH", vo.mT),
    "adjoint": _bit_view("{t0}.adjoint()", vo.mT),
    "unbind_k": _view(("dim", "k"), "{t0}.unbind({p0})[{p1}]", vo.unbind_k, multi_output=True),
    "split_k": _view(
        ("size", "dim", "k"), "{t0}.split({p0}, {p1})[{p2}]", vo.split_k, multi_output=True
    ),
    "split_with_sizes_k": _view(
        ("sizes", "dim", "k"),
        "{t0}.split_with_sizes({p0}, {p1})[{p2}]",
        vo.split_with_sizes_k,
        multi_output=True,
    ),
    "chunk_k": _view(
        ("chunks", "dim", "k"), "{t0}.chunk({p0}, {p1})[{p2}]", vo.chunk_k, multi_output=True
    ),
    # no multi_output: the model takes their outputs for plain views
    "tensor_split_k": _view(
        ("sections", "dim", "k"), "{t0}.tensor_split({p0}, {p1})[{p2}]", vo.tensor_split_k
    ),
    "hsplit_k": _view(("sections", "k"), "{t0}.hsplit({p0})[{p1}]", vo.hsplit_k),
    "vsplit_k": _view(("sections", "k"), "{t0}.vsplit({p0})[{p1}]", vo.vsplit_k),
}


def _inplace_view(name: str, torch: str) -> dict:
    """transpose_, t_...: the twin's geometry written into t0's own shape,
    strides and offset (Engine._op_inplace_view); its version goes up once."""
    twin = ROWS[name[:-1]]
    return dict(
        arity=1,
        params=twin["params"],
        torch=torch,
        impl="inplace_view",
        inplace=True,
        geom=twin["geom"],
        overlap_check=False,
        param_defaults=twin.get("param_defaults", ()),
    )


# after the views, so that the order in which the differential picks among
# those stays; only their motif draws them (conformance/differential/inplace_view_motifs.py)
ROWS.update(
    {
        "transpose_": _inplace_view("transpose_", "{t0}.transpose_({p0}, {p1})"),
        "t_": _inplace_view("t_", "{t0}.t_()"),
        "squeeze_": _inplace_view("squeeze_", "{t0}.squeeze_(dim={p0})"),
        "unsqueeze_": _inplace_view("unsqueeze_", "{t0}.unsqueeze_({p0})"),
        "swapdims_": _inplace_view("swapdims_", "{t0}.swapdims_({p0}, {p1})"),
        "as_strided_": _inplace_view("as_strided_", "{t0}.as_strided_({p0}, {p1}, {p2})"),
    }
)
INPLACE_VIEWS = tuple(name for name, row in ROWS.items() if row["impl"] == "inplace_view")
for _name, _row in ROWS.items():
    _row.update(args=SPACES[_name], dtypes=_row.get("dtypes", ALL))
