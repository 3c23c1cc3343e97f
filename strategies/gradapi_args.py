"""The argument spaces of the gradient APIs' rows: `Tensor.backward`'s and
`torch.autograd.grad`'s flags, each True, False or left out of the call.

A flag left out takes the default the documentation gives it, which is a region
of its own: `retain_graph` "defaults to the value of create_graph" (False
here), and `torch.autograd.grad`'s `allow_unused` defaults to False in 2.0 and
to the value of materialize_grads (False) from 2.1 on; "if False, specifying
inputs that were not used when computing outputs (and therefore their grad is
always zero) is an error". Left out means left out: 2.0's autograd.grad
refuses allow_unused=None.
"""

from __future__ import annotations

from dataclasses import replace

from .argspace import LEFT_OUT, Arg, ArgSpace, Class, Operand, Pick

FLAG_VALUES = (True, False, LEFT_OUT)


def flag(name: str) -> Arg:
    """A boolean keyword: True, False, or left out (its documented default)."""
    return Arg(
        name,
        (
            Class("True", lambda v, x, p: v is True),
            Class("False", lambda v, x, p: v is False),
            Class("left at its default", lambda v, x, p: v is LEFT_OUT),
        ),
        optional=True,
    )


def _flags(count: int):
    def choose(pick: Pick, x: Operand) -> tuple:
        return tuple(pick.one_of(FLAG_VALUES) for _ in range(count))

    return choose


_RETAIN_GRAPH = flag("retain_graph")
_BACKWARD = ArgSpace((_RETAIN_GRAPH,), _flags(1))

SPACES: dict[str, ArgSpace] = {
    name: replace(space, op=name)
    for name, space in {
        "backward": _BACKWARD,
        "backward_g": _BACKWARD,
        "autograd_grad": ArgSpace((_RETAIN_GRAPH, flag("allow_unused")), _flags(2)),
    }.items()
}
