"""Where torch releases differ in what the model predicts.

The model follows the newest releases by default. `conformance.build` picks
the `Release` of the build under test from its version; docs/releases.md
says which release changed what, with the pull request or release note.

Only what the documentation changed, or an error's class or wording, is a
field here. A release that breaks a promise a later one keeps has a bug: the
model keeps the promise, and the known-failure list names that release.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    """The release-dependent behaviour the model follows."""

    # A slice over a whole dimension written without its stop (`x[:]`, `x[0:]`,
    # or a stop past the end) makes no op and hands back x itself; in older
    # releases (before 2.9) only a stop equal to the size did (`x[0:n]`),
    # and `x[:] = v` wrote through a view of x (a leaf then raised the
    # view-of-a-leaf error).
    open_slice_is_identity: bool = True
    # clamp's gradient at a bound (x == min or x == max): 1 before 2.14, 0
    # (the minimum-norm subgradient) from 2.14.
    clamp_grad_at_bounds: bool = False


NEWEST = Release()
