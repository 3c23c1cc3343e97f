"""What was tested and how: the torch build, Python, the platform, and the
run's devices, dtypes, profile and seed, as the report's data model has them."""

from __future__ import annotations

import platform
import sys

import conformance
from conformance.results import Build, Device, Run, Target
from conformance.selection import Selection


def build_info() -> Build:
    """The installed torch and the interpreter and machine it runs on."""
    import torch

    from strategies.devices import build_kind

    kind = build_kind()
    return Build(
        torch=torch.__version__,
        git_version=torch.version.git_version or "unknown",
        build=kind,  # "CPU", "CUDA 12.4", "ROCm 6.2"
        backend=kind.split()[0],
        debug=bool(getattr(torch.version, "debug", False)),
        cuda=torch.version.cuda,
        hip=getattr(torch.version, "hip", None),
        python=platform.python_version(),
        python_implementation=platform.python_implementation(),
        executable=sys.executable,
        platform=platform.platform(),
        machine=platform.machine(),
    )


def run_info(selection: Selection, invariants: str | None) -> Run:
    """The choices a run was made with, so two reports can be told apart."""
    return Run(
        suite_version=conformance.__version__,
        devices=[Device(d.name, d.present, d.reason) for d in selection.devices],
        dtypes=list(selection.dtypes),
        profile=selection.profile,
        seed=selection.seed,
        invariants=invariants,
        targets=_targets(),
    )


def _targets() -> list[Target]:
    """The run's torch.compile targets (--compile), with why one was skipped."""
    from conformance.compiled.targets import current_targets

    return [Target(t.name, t.available, t.reason) for t in current_targets()]
