"""Argument spaces: what an op's arguments may be, as data, and the one way the
property tests and the differential both draw them.

An `ArgSpace` names each argument with the classes its values fall in (a dim
counted from the start or from the end, a window that is empty or reaches the
end...), the regions the documentation leaves undefined (with its sentence:
they are never drawn), and `choose`, the drawing procedure. `choose` is
written over a `Pick`, three primitives: one of these options, an integer in
this range, true with this chance. Hypothesis's `draw` supplies them
(`arguments`, a strategy) and so does a seeded `random.Random` (`RandomPick`,
which the differential's Sampler hands over), so both sides draw from the one
declaration. The classes are how a run counts what it drew (`DRAWN`, by
`ArgSpace.draw`): a region no run draws shows as a class drawn zero times.

Only valid calls are drawn: what an op does with arguments it refuses is not
what the rules are about.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from random import Random
from typing import Any, Protocol, TypeVar

from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

T = TypeVar("T")
Shape = tuple[int, ...]


class Pick(Protocol):
    """The primitives a drawing procedure is written over."""

    def one_of(self, options: Sequence[T]) -> T: ...

    def ints(self, low: int, high: int) -> int: ...

    def chance(self, p: float) -> bool: ...


class RandomPick:
    """The primitives over a seeded Random, each one call of the Random, so that
    a procedure draws what the same calls made directly would."""

    __slots__ = ("rng",)

    def __init__(self, rng: Random) -> None:
        self.rng = rng

    def one_of(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def ints(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p


class HypothesisPick:
    """The primitives over Hypothesis's `draw`, so that examples shrink:
    options towards the first, integers towards `low`, chances towards true."""

    __slots__ = ("draw",)

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def one_of(self, options: Sequence[T]) -> T:
        return self.draw(st.sampled_from(tuple(options)))

    def ints(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def chance(self, p: float) -> bool:
        return self.draw(st.integers(0, 999)) < round(p * 1000)


@dataclass(frozen=True)
class Operand:
    """What an op's arguments may depend on: the tensor it is called on."""

    shape: Shape
    contiguous: bool = True
    offset: int = 0  # its storage offset
    overlapping: bool = False  # two of its elements are one place in memory


class Default(enum.Enum):
    """A keyword argument left out of the call, so that the op takes the value its
    documentation gives as the default (`Tensor.backward()`: retain_graph "defaults
    to the value of create_graph"). It is false, as every such default here is."""

    LEFT_OUT = "left at its default"

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "LEFT_OUT"


LEFT_OUT = Default.LEFT_OUT


def keywords(**values: Any) -> dict[str, Any]:
    """The keyword arguments of a call, without those left at their default."""
    return {name: v for name, v in values.items() if v is not LEFT_OUT}


class Spread(tuple):
    """A list argument passed one by one, in its varargs overload: the shape
    (2, 3) as `x.view(2, 3)`, beside `x.view((2, 3))` and `x.view([2, 3])`.
    It prints as the call spells it; `spread` makes the arguments."""

    __slots__ = ()

    def __repr__(self) -> str:
        return ", ".join(repr(v) for v in self)


def spread(value: Any) -> tuple:
    """The positional arguments `value` stands for: its items for a Spread."""
    return tuple(value) if isinstance(value, Spread) else (value,)


def spellings(pick: Pick, values: tuple) -> tuple | list | Spread:
    """`values` as a tuple, a list or (where there is one) one by one."""
    form = pick.ints(0, 2 if values else 1)
    return (values, list(values), Spread(values))[form]


def spelling_classes() -> tuple[Class, ...]:
    """The three spellings of a list argument (`spellings`)."""
    return (
        Class("a tuple", lambda v, x, p: type(v) is tuple),
        Class("a list", lambda v, x, p: isinstance(v, list)),
        Class("one by one", lambda v, x, p: isinstance(v, Spread)),
    )


def passed(args: tuple) -> tuple:
    """The positional arguments of a call: those left at their default dropped
    (they come last: `x.squeeze()`), a Spread's items one by one (`x.view(2, 3)`)."""
    return tuple(v for a in args if a is not LEFT_OUT for v in spread(a))


# holds(value, operand, all the op's arguments): whether value falls in the class
Holds = Callable[[Any, Operand, tuple], bool]


@dataclass(frozen=True)
class Class:
    """A region of one argument's values; a value may fall in several."""

    name: str
    holds: Holds


@dataclass(frozen=True)
class Arg:
    name: str
    classes: tuple[Class, ...]
    # a keyword the call may leave out (LEFT_OUT): the row's template names it
    # as `name={pN}`, and the call is made and printed without it
    optional: bool = False
    # a list the call may pass one by one (Spread): `{pN}` alone in the template
    spreads: bool = False


@dataclass(frozen=True)
class Undefined:
    """A region the documentation leaves undefined (or deprecates): never drawn
    (`ArgSpace.draw` refuses a draw that falls in it)."""

    region: str  # which values, in words
    sentence: str  # the documentation's own sentence
    source: str  # where it says so
    holds: Callable[[Operand, tuple], bool]  # whether a draw falls in the region


# choose(pick, operand) -> the arguments, or None where none fit the operand
Choose = Callable[[Pick, Operand], tuple | None]


# (op, "argument: class") -> how often this process drew it (reset per test:
# conformance.harness carries it into the report)
DRAWN: Counter[tuple[str, str]] = Counter()


@dataclass(frozen=True)
class ArgSpace:
    """An op's arguments: each with its classes, and how to draw them."""

    args: tuple[Arg, ...]
    choose: Choose
    undefined: tuple[Undefined, ...] = ()
    op: str = ""  # the row it belongs to, as DRAWN counts it

    def draw(self, pick: Pick, operand: Operand) -> tuple | None:
        """The arguments (None where none fit, or where they fall in a region
        the documentation leaves undefined), their classes counted in DRAWN."""
        args = self.choose(pick, operand)
        if args is not None and any(u.holds(operand, args) for u in self.undefined):
            return None
        if args is not None:
            DRAWN.update((self.op, c) for c in self.classes_of(operand, args))
        return args

    @property
    def declared(self) -> tuple[str, ...]:
        """Every class, as `argument: class`, the names `classes_of` gives."""
        return tuple(f"{a.name}: {c.name}" for a in self.args for c in a.classes)

    def classes_of(self, operand: Operand, args: tuple) -> tuple[str, ...]:
        """The classes the drawn `args` fall in, as `argument: class`."""
        return tuple(
            f"{a.name}: {c.name}"
            for a, value in zip(self.args, args, strict=True)
            for c in a.classes
            if c.holds(value, operand, args)
        )


def drawn() -> dict[str, dict[str, int]]:
    """DRAWN as op -> {"argument: class": count}, for a test's coverage."""
    out: dict[str, dict[str, int]] = {}
    for (op, name), count in sorted(DRAWN.items()):
        out.setdefault(op, {})[name] = count
    return out


def arguments(space: ArgSpace, operand: Operand) -> st.SearchStrategy[tuple]:
    """A strategy for `space`'s arguments on `operand`, drawn as the differential
    draws them; where none fit the operand the example is rejected.

    >>> from strategies.view_args import SPACES
    >>> arguments(SPACES["narrow"], Operand((2, 3))).example()  # doctest: +SKIP
    (-1, 1, 2)
    """
    if not isinstance(space, ArgSpace):
        raise InvalidArgument(f"space={space!r} must be an ArgSpace (see strategies.view_args)")
    if not isinstance(operand, Operand):
        raise InvalidArgument(f"operand={operand!r} must be an Operand, such as Operand((2, 3))")
    return _arguments(space, operand)


@st.composite
def _arguments(draw: st.DrawFn, space: ArgSpace, operand: Operand) -> tuple:
    args = space.draw(HypothesisPick(draw), operand)
    if args is None:
        reject()
    return args
