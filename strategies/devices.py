"""Devices discovered at run time, and why an absent one is absent."""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

KNOWN_DEVICES = ("cpu", "cuda", "mps")

# Dtypes a device cannot hold at all (MPS has no 64-bit floating types).
UNSUPPORTED_DTYPES: dict[str, frozenset[str]] = {
    "mps": frozenset({"float64", "complex128"}),
}

_DEVICE = re.compile(r"^(cpu|cuda|mps)(?::(\d+))?$")


@dataclass(frozen=True)
class DeviceStatus:
    name: str  # "cpu", "cuda", "cuda:1"
    present: bool
    reason: str  # why it is absent; empty when present

    @property
    def kind(self) -> str:
        return self.name.split(":")[0]


def _cuda_status(name: str, index: int) -> DeviceStatus:
    if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
        return DeviceStatus(name, False, f"torch {torch.__version__} was built without CUDA")
    if not torch.cuda.is_available():
        return DeviceStatus(name, False, "torch.cuda.is_available() is False: no GPU visible")
    count = torch.cuda.device_count()
    if index >= count:
        return DeviceStatus(name, False, f"only {count} CUDA device(s) visible")
    return DeviceStatus(name, True, "")


def _mps_status(name: str) -> DeviceStatus:
    mps = getattr(torch.backends, "mps", None)
    if mps is None or not mps.is_built():
        return DeviceStatus(name, False, f"torch {torch.__version__} was built without MPS")
    if not mps.is_available():
        return DeviceStatus(name, False, "torch.backends.mps.is_available() is False")
    return DeviceStatus(name, True, "")


def status(name: str) -> DeviceStatus:
    """Whether a device name is present. Raises ValueError for unknown names."""
    match = _DEVICE.match(name.strip().lower())
    if not match:
        raise ValueError(f"unknown device {name!r} (known: {', '.join(KNOWN_DEVICES)}, cuda:N)")
    kind, index = match.group(1), int(match.group(2) or 0)
    canonical = name.strip().lower()
    if kind == "cpu":
        return DeviceStatus(canonical, True, "")
    if kind == "cuda":
        return _cuda_status(canonical, index)
    return _mps_status(canonical)


def parse_devices(spec: str | None) -> list[DeviceStatus]:
    """`--devices` as given (None: every known device), each with its status."""
    names = KNOWN_DEVICES if not spec else [n for n in spec.split(",") if n.strip()]
    if not names:
        raise ValueError("no device selected")
    seen: dict[str, DeviceStatus] = {}
    for name in names:
        device = status(name)
        seen.setdefault(device.name, device)
    return list(seen.values())


def build_kind() -> str:
    """CPU, CUDA x.y or ROCm x.y: what this torch was built for."""
    if getattr(torch.version, "hip", None):
        return f"ROCm {torch.version.hip}"
    if torch.version.cuda:
        return f"CUDA {torch.version.cuda}"
    return "CPU"


def dtypes_on(device: str, dtypes: tuple[str, ...]) -> tuple[str, ...]:
    unsupported = UNSUPPORTED_DTYPES.get(device.split(":")[0], frozenset())
    return tuple(d for d in dtypes if d not in unsupported)
