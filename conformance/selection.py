"""What a run covers: devices, dtypes, profile and seed, checked once.

Every mistake a user can make here raises `SelectionError` with one line
that says what is wrong; the CLI and the pytest plugin turn it into exit
status 4 without a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.profiles import PROFILES, default_seed, profile_from_env
from strategies.devices import DeviceStatus, dtypes_on, parse_devices
from strategies.dtypes import DTYPES, parse_dtypes


class SelectionError(ValueError):
    """A usage error: unknown device, dtype or profile, an absent device, a bad seed."""


@dataclass(frozen=True)
class Selection:
    devices: tuple[DeviceStatus, ...]
    dtypes: tuple[str, ...]
    profile: str
    seed: int | None

    @property
    def present(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.devices if d.present)

    @property
    def absent(self) -> tuple[DeviceStatus, ...]:
        return tuple(d for d in self.devices if not d.present)

    def dtypes_on(self, device: str) -> tuple[str, ...]:
        return dtypes_on(device, self.dtypes)

    def describe(self) -> list[str]:
        skipped = "; ".join(f"{d.name} skipped: {d.reason}" for d in self.absent)
        return [
            f"devices: {', '.join(self.present) or 'none'}" + (f" ({skipped})" if skipped else ""),
            "dtypes: " + ("all" if self.dtypes == tuple(DTYPES) else ", ".join(self.dtypes)),
            f"profile: {self.profile}, seed: "
            + (
                "random (example database replays failures first)"
                if self.seed is None
                else str(self.seed)
            ),
        ]


def select(
    devices: str | None = None,
    dtypes: str | None = None,
    profile: str | None = None,
    seed: str | int | None = None,
) -> Selection:
    try:
        statuses = tuple(parse_devices(devices))
        dtype_names = parse_dtypes(dtypes) if dtypes else tuple(DTYPES)
    except ValueError as error:
        raise SelectionError(str(error)) from None
    if devices:
        for device in statuses:
            if not device.present:
                raise SelectionError(f"device {device.name!r} is not present: {device.reason}")
    profile = profile or profile_from_env()
    if profile not in PROFILES:
        raise SelectionError(f"unknown profile {profile!r} (known: {', '.join(PROFILES)})")
    if seed is None or seed == "":
        chosen = default_seed(profile)
    else:
        try:
            chosen = int(seed)
        except ValueError:
            raise SelectionError(f"seed must be an integer, got {seed!r}") from None
    return Selection(statuses, dtype_names, profile, chosen)


_CURRENT: Selection | None = None


def set_current(selection: Selection) -> None:
    global _CURRENT
    _CURRENT = selection


def current() -> Selection:
    """The run's selection (the defaults if the plugin has not set one)."""
    global _CURRENT
    if _CURRENT is None:
        _CURRENT = select()
    return _CURRENT
