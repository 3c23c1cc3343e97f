"""One rule of the catalogue."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version


@dataclass(frozen=True)
class Invariant:
    id: str
    statement: str
    quote: str
    source: str
    versions: str = ">=2.0"

    @property
    def family(self) -> str:
        return self.id.split(".")[0]

    def applies_to(self, torch_version: str) -> bool:
        release = Version(torch_version).release  # "2.13.0+cpu" and "2.14.0a0" alike
        return Version(".".join(map(str, release))) in SpecifierSet(self.versions)
