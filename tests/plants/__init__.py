"""Planted violations: monkeypatches that make torch break one rule.

Each plant names the invariant it breaks. `install(name)` patches the torch
of the running process; `tests/site/sitecustomize.py` installs the plant named
in CONFORMANCE_PLANT at interpreter start, so a whole suite run (xdist workers
included) and a standalone repro script see the same broken torch.

Some plants break a rule for every input; the ones with an `@` in their name
break it only for some inputs (one dtype, one layout, rank >= 3, only views,
0-d), the kind of bug a suite that only tried float32 contiguous vectors
would miss.

A module per family of rules (clone.py, copy.py, detach.py, data.py, grad.py,
hooks.py, version.py, view.py, modes.py, ops.py, writes.py, functions.py,
schema.py), and problems.py for the crashes, hangs and the suite's own errors.
registry.py holds the tables and the decorators that fill them (`plant`,
`kernel_plant`, `problem_plant`, `lacking`); patch.py the one way to patch
torch (`wrap`, `methods`, `wrap_property`, and the in-place methods'
`runs_under`, `keeps_version`, `after_writes`...).
"""

from __future__ import annotations

from . import (
    clone,
    copy,
    data,
    detach,
    functions,
    grad,
    hooks,
    modes,
    ops,
    problems,
    schema,
    version,
    view,
    writes,
)
from .registry import (
    LACKING,
    PLANTS,
    PLANTS_PROBLEMS,
    PROBLEM_PLANTS,
    SCHEMA_KERNELS,
    Plant,
    crash_kernel,
    install,
    kernel_plant,
    lacking,
    override_kernel,
    plant,
    problem_plant,
)

__all__ = [
    "LACKING",
    "PLANTS",
    "PLANTS_PROBLEMS",
    "PROBLEM_PLANTS",
    "SCHEMA_KERNELS",
    "Plant",
    "crash_kernel",
    "install",
    "kernel_plant",
    "lacking",
    "override_kernel",
    "plant",
    "problem_plant",
]
# the families, whose import registers their plants
__all__ += ["clone", "copy", "data", "detach", "functions", "grad", "hooks", "modes", "ops"]
__all__ += ["problems", "schema", "version", "view", "writes"]
