"""The rows of the writes the core table lacks (`out=` arguments, resize_ and
set_, the `_foreach_*_` in-place ops) and torch.can_cast: data that
oracle/ops.py adds to the table and oracle/write_ops.py runs by."""

from __future__ import annotations

from .dtypes import kind

# name: (the out-of-place row it computes, its tensor inputs); t0 is `out`
OUT_OPS = {
    "add_out": ("add", 2),
    "mul_out": ("mul", 2),
    "exp_out": ("exp", 1),
    "neg_out": ("neg", 1),
}

# ops whose kernel checks that every operand has the same dtype (no cast into out)
SAME_DTYPE = ("neg",)

_TEMPLATES = {
    "add_out": "torch.add({t1}, {t2}, out={t0})",
    "mul_out": "torch.mul({t1}, {t2}, out={t0})",
    "exp_out": "torch.exp({t1}, out={t0})",
    "neg_out": "torch.neg({t1}, out={t0})",
}

# name: the table row's keyword arguments (oracle/ops.py adds them)
ROWS: dict[str, dict] = {
    name: dict(
        arity=1 + arity,
        params=(),
        torch=_TEMPLATES[name],
        impl="writes",
        inplace=True,  # out's version goes up once
        cross_dtype=True,  # out may have another dtype than the inputs
        overlap_check=True,
    )
    for name, (_, arity) in OUT_OPS.items()
}
ROWS["resize_"] = dict(
    arity=1,
    params=("size",),
    torch="{t0}.resize_({p0})",
    impl="writes",
    inplace=True,
    param_kinds=("custom",),
)
ROWS["set_"] = dict(arity=2, params=(), torch="{t0}.set_({t1})", impl="writes", inplace=True)

# name: the in-place row each tensor is written with; t0, t1 are written
FOREACH = {
    "foreach_add_s_": "add_s_",
    "foreach_mul_s_": "mul_s_",
    "foreach_add_l_": "add_",
    "foreach_mul_l_": "mul_",
}
for _name, _each in FOREACH.items():
    _op = _name.split("_")[1]
    _scalar = _name.endswith("_s_")
    ROWS[_name] = dict(
        arity=2 if _scalar else 4,
        params=("other",) if _scalar else (),
        torch=f"torch._foreach_{_op}_([{{t0}}, {{t1}}], "
        + ("{p0})" if _scalar else "[{t2}, {t3}])"),
        impl="writes",
        inplace=True,
        returns=False,
        dtypes=("float", "complex", "int"),
        param_kinds=("scalar",) if _scalar else (),
    )

_RANK = {"bool": 0, "int": 1, "float": 2, "complex": 3}


def can_cast(src: str, dst: str) -> bool:
    """torch.can_cast: a value of dtype src may be stored in dst (no lower kind)."""
    return _RANK[kind(src)] <= _RANK[kind(dst)]
