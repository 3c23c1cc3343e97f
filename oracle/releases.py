"""Where torch releases differ in what the model predicts.

The model follows the newest releases by default. `conformance.build` picks
the `Release` of the build under test from its version; docs/releases.md
says which release changed what, with the pull request or release note.
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
    # `x[index] = v` with a scalar or 0-d v fills the indexed part; on memory
    # that several of its elements share it raises like any other write. Up
    # to 2.0 at least, that fill skipped the overlap check.
    setitem_fill_checks_overlap: bool = True
    # `x.mean()` saves x for its backward in older releases (2.0 at least):
    # a second backward raises, and so does one after x was written in
    # place. Later releases save only its sizes.
    mean_saves_self: bool = False
    # clamp's gradient at a bound (x == min or x == max): 1 before 2.14, 0
    # (the minimum-norm subgradient) from 2.14.
    clamp_grad_at_bounds: bool = False
    # `x.resize_(shape)` to another shape bumps x's version from 2.1
    # (pytorch/pytorch#96403); before, resize_ left the version alone.
    resize_bumps_version: bool = True
    # torch._foreach_add_ and the other _foreach_ in-place ops are recorded by
    # autograd (each write as add_ would be) from 2.1 (pytorch/pytorch#96405);
    # before, they wrote without a node (and without the leaf check).
    foreach_inplace_recorded: bool = True
    # `dst.copy_(src)` where src is dst's memory with the same geometry and dtype
    # but another conjugate / negative bit (`x.conj().copy_(x)`) writes the
    # conjugate (negation) from 2.4; before, it took them for the same data and
    # wrote nothing (the version still went up).
    copy_resolves_bits_of_same_memory: bool = True
    # A retained tensor written in place through one of its views: its .grad is
    # the gradient of its newest version (the retain_grad hook moves to the
    # CopySlices node) from 2.3; before, the hook stayed on the grad_fn it had
    # before the write, and .grad was the gradient of that older version.
    retain_grad_follows_view_writes: bool = True


NEWEST = Release()
