"""Call sequences: a compiled function called again (issue 35).

Users call a compiled function many times. Each later call goes through
Dynamo's guards: the cached graph is reused while they pass, and a new one is
compiled when they fail. Here a compiled program gets one to three later
calls, each on fresh inputs that differ from the first call's in one property:

- aliasing: an argument is another one (the same tensor twice), a view of
  another, or two arguments are overlapping slices of one buffer; or
  arguments that were views of one another are separate tensors;
- shape (a static first call, so Dynamo recompiles it with dynamic shapes),
  strides (another memory layout of the same values), dtype;
- requires_grad, the grad mode of the call (no_grad, inference_mode), an
  argument that is an inference tensor (of a leaf that does not require grad).

Each later call is drawn from its own random stream (the program's motif
seed, salted), so the programs themselves are drawn as before. A candidate
whose inputs cannot be made is dropped; one whose call raises eagerly is
kept only where no other candidate of its change runs (a call that raises is
still held to eager: compile.raises).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace
from random import Random

import torch

from conformance.compiled.program import Call, CompiledProgram, CStep, run_step
from conformance.compiled.run import grad_mode
from strategies.dtypes import DTYPES, seeded_values
from strategies.programs import Leaf
from strategies.tensors import DTYPE_NAMES

CHANGES = (
    "aliasing",
    "shape",
    "stride",
    "dtype",
    "requires_grad",
    "grad mode",
    "inference tensor",
)
# aliasing first: Dynamo's guards on it are the least obvious (pytorch#139789)
WEIGHTS = (4, 2, 1, 1, 1, 1, 1)
CANDIDATES = 3  # candidates of a change tried eagerly, for one whose call runs


def with_calls(
    program: CompiledProgram, rng: Random, dtypes: tuple[str, ...], device: str = "cpu"
) -> CompiledProgram:
    """`program` with one to three later calls, each changing one property."""
    if not program.arg_tokens:
        return program
    fn = program.function()
    calls: list[Call] = []
    for _ in range(rng.randint(1, 3)):
        drawn = replace(program, calls=tuple(calls))
        call = _later_call(drawn, fn, rng, dtypes, device)
        if call is not None:
            calls.append(call)
    return replace(program, calls=tuple(calls))


def _later_call(
    program: CompiledProgram, fn, rng: Random, dtypes: tuple[str, ...], device: str
) -> Call | None:
    order = list(CHANGES)
    for _ in range(3):  # a change this program has no candidate for: another
        change = rng.choices(order, [WEIGHTS[CHANGES.index(c)] for c in order])[0]
        order.remove(change)
        drawn = Drawing(program, rng, dtypes, device)
        kept: Call | None = None
        for _ in range(CANDIDATES):
            call = DRAW[change](drawn)
            if call is None:
                break
            runs = _runs(program, call, fn)
            if runs is None:
                continue
            if runs:
                return call
            kept = kept or call
        if kept is not None:
            return kept
    return None


def _runs(program: CompiledProgram, call: Call, fn) -> bool | None:
    """Whether the call runs eagerly; None where its inputs cannot be made."""
    env: dict[int, torch.Tensor] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for step in call.args:
                run_step(step, env)
        except Exception:  # noqa: BLE001 - no such call
            return None
        try:
            with grad_mode(call.mode):
                fn(*(env[t] for t in program.arg_tokens))
        except Exception:  # noqa: BLE001 - it raises: kept only for want of another
            return False
    return True


class Drawing:
    """The first call's inputs, and fresh tokens for the helpers a call needs."""

    def __init__(
        self, program: CompiledProgram, rng: Random, dtypes: tuple[str, ...], device: str
    ) -> None:
        self.program, self.rng, self.dtypes, self.device = program, rng, dtypes, device
        steps = [*program.args, *program.body, *program.tail]
        steps += [s for c in program.calls for s in c.args]
        self.next = max((s.out for s in steps if s.out is not None), default=-1) + 1
        self.env: dict[int, torch.Tensor] = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for step in program.args:
                run_step(step, self.env)

    def token(self) -> int:
        self.next += 1
        return self.next - 1

    def leaves(self, where: Callable[[CStep], bool] = lambda s: True) -> list[CStep]:
        return [s for s in self.program.args if s.op == "leaf" and where(s)]

    def values(self, dtype: str, shape: tuple[int, ...]):
        return seeded_values(dtype, shape, self.rng.getrandbits(32) | 1)

    def call(self, change: str, detail: str, swap: dict[int, list[CStep]], mode: str = "") -> Call:
        """The first call's inputs with the steps making some tokens swapped."""
        args: list[CStep] = []
        for step in self.program.args:
            args += swap.get(step.out, [step])
        return Call(change, detail, tuple(args), mode)


def _shape(step: CStep) -> tuple[int, ...]:
    return tuple(step.leaf.values.shape)


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, running = [], 1
    for n in reversed(shape):
        strides.append(running)
        running *= max(n, 1)
    return tuple(reversed(strides))


def _leaf(step: CStep, **changes) -> CStep:
    return replace(step, leaf=replace(step.leaf, **changes))


def aliasing(d: Drawing) -> Call | None:
    options: list[Callable[[], Call | None]] = []
    leaves = d.leaves(lambda s: s.leaf.values.size > 0 and not s.leaf.inference)
    pairs = [
        (a, b)
        for i, a in enumerate(leaves)
        for b in leaves[i + 1 :]
        if a.leaf.dtype == b.leaf.dtype
    ]
    same = [(a, b) for a, b in pairs if _shape(a) == _shape(b)]
    if same:
        options += [lambda: _same_twice(d, *d.rng.choice(same))] * 2
    if pairs:
        options.append(lambda: _a_view(d, *d.rng.choice(pairs)))
        options.append(lambda: _overlapping(d, *d.rng.choice(pairs)))
    made = [s for s in d.program.args if s.op != "leaf"]
    if made:
        options.append(lambda: _separate(d, d.rng.choice(made)))
    return d.rng.choice(options)() if options else None


def _same_twice(d: Drawing, a: CStep, b: CStep) -> Call:
    same = CStep("same", (a.out,), out=b.out)
    return d.call("aliasing", f"t{b.out} is t{a.out} (the same tensor twice)", {b.out: [same]})


def _a_view(d: Drawing, a: CStep, b: CStep) -> Call | None:
    """b a view of a, with b's shape: a and b share memory from some offset on."""
    first, second = (a, b) if a.leaf.values.size >= b.leaf.values.size else (b, a)
    room = first.leaf.values.size - second.leaf.values.size
    offset = d.rng.randint(0, room)
    shape = _shape(second)
    view = CStep("as_strided", (first.out,), (shape, _contiguous(shape), offset), out=second.out)
    if second.out < first.out:  # made after the tensor it views
        args = [s for s in d.program.args if s.out != second.out]
        at = args.index(first) + 1
        return Call(
            "aliasing",
            f"t{second.out} is a view of t{first.out} (from offset {offset})",
            tuple(args[:at] + [view] + args[at:]),
        )
    return d.call(
        "aliasing",
        f"t{second.out} is a view of t{first.out} (from offset {offset})",
        {second.out: [view]},
    )


def _overlapping(d: Drawing, a: CStep, b: CStep) -> Call:
    """a and b overlapping slices of one buffer: b starts inside a."""
    na, nb = a.leaf.values.size, b.leaf.values.size
    offset = d.rng.randint(1, na - 1) if na > 1 else 0
    size = max(na, offset + nb)
    grad = a.leaf.requires_grad or b.leaf.requires_grad
    buffer = d.token()
    steps = [
        CStep(
            "leaf",
            out=buffer,
            leaf=Leaf(d.values(a.leaf.dtype, (size,)), a.leaf.dtype, a.leaf.device, grad),
        )
    ]
    base = buffer
    if grad:  # a non-leaf buffer: slices of it can be written, as the leaves could be
        base = d.token()
        steps.append(CStep("mul_s", (buffer,), (1.0,), out=base))
    sa, sb = _shape(a), _shape(b)
    first = CStep("as_strided", (base,), (sa, _contiguous(sa), 0), out=a.out)
    second = CStep("as_strided", (base,), (sb, _contiguous(sb), offset), out=b.out)
    return d.call(
        "aliasing",
        f"t{a.out} and t{b.out} are overlapping slices of one buffer t{buffer} "
        f"(offsets 0 and {offset})",
        {a.out: [*steps, first], b.out: [second]},
    )


def _separate(d: Drawing, made: CStep) -> Call:
    """An argument that was made from another (a view of it), a tensor of its own."""
    t = d.env[made.out]
    dtype = _dtype_name(t)
    compute = {"float": torch.float64, "complex": torch.complex128, "int": torch.int64}
    wide = t.detach().resolve_conj().resolve_neg().cpu()
    values = wide.to(compute.get(DTYPES[dtype].kind, wide.dtype)).numpy().copy()
    grad = t.requires_grad
    leaf = CStep("leaf", out=made.out, leaf=Leaf(values, dtype, d.device, grad))
    steps = [leaf]
    if grad:  # non-leaf, as it was: it can be written
        own = d.token()
        steps = [replace(leaf, out=own), CStep("mul_s", (own,), (1.0,), out=made.out)]
    return d.call(
        "aliasing",
        f"t{made.out} is a tensor of its own (it was made from t{made.ins[0]})",
        {made.out: steps},
    )


def shape(d: Drawing) -> Call | None:
    leaves = d.leaves(lambda s: s.leaf.values.ndim > 0)
    if not leaves:
        return None
    pick = d.rng.choice(leaves)
    dim = d.rng.randrange(pick.leaf.values.ndim)
    n = pick.leaf.values.shape[dim]
    new = n - 1 if n > 1 and d.rng.random() < 0.5 else n + 1
    everywhere = d.rng.random() < 0.5  # every leaf's sides of that length: broadcasting holds
    swap, said = {}, []
    for step in leaves:
        old = _shape(step)
        if step is pick and not everywhere:
            shape_ = old[:dim] + (new,) + old[dim + 1 :]
        elif everywhere:
            shape_ = tuple(new if m == n else m for m in old)
        else:
            continue
        if shape_ == old:
            continue
        swap[step.out] = [_leaf(step, values=d.values(step.leaf.dtype, shape_))]
        said.append(f"t{step.out} {old} -> {shape_}")
    return d.call("shape", ", ".join(said), swap)


def stride(d: Drawing) -> Call | None:
    leaves = d.leaves(lambda s: s.leaf.values.ndim >= 2 and s.leaf.values.size > 1)
    d.rng.shuffle(leaves)
    for step in leaves:
        shape_ = _shape(step)
        dims = list(range(len(shape_)))
        d.rng.shuffle(dims)
        if dims == sorted(dims):
            dims.reverse()
        strides = [0] * len(shape_)
        running = 1
        for k in reversed(dims):  # the last of `dims` innermost
            strides[k] = running
            running *= shape_[k]
        strides = tuple(strides)
        if torch.empty_strided(shape_, strides).is_contiguous():
            continue  # the same layout, as far as its sizes show
        plain = d.token()
        values = _leaf(step, requires_grad=False)
        return d.call(
            "stride",
            f"t{step.out} {shape_} has strides {strides}",
            {
                step.out: [
                    replace(values, out=plain),
                    CStep(
                        "restrided",
                        (plain,),
                        (shape_, strides, step.leaf.requires_grad),
                        out=step.out,
                    ),
                ]
            },
        )
    return None


def dtype(d: Drawing) -> Call | None:
    leaves = d.leaves()
    d.rng.shuffle(leaves)
    for step in leaves:
        old = DTYPES[step.leaf.dtype]
        others = [n for n in d.dtypes if n != step.leaf.dtype and DTYPES[n].kind == old.kind]
        others = others or [
            n
            for n in d.dtypes
            if n != step.leaf.dtype and DTYPES[n].can_require_grad == old.can_require_grad
        ]
        if not others:
            continue
        new = d.rng.choice(others)
        leaf = _leaf(
            step,
            dtype=new,
            values=d.values(new, _shape(step)),
            requires_grad=step.leaf.requires_grad and DTYPES[new].can_require_grad,
        )
        return d.call("dtype", f"t{step.out} is {new} (was {step.leaf.dtype})", {step.out: [leaf]})
    return None


def requires_grad(d: Drawing) -> Call | None:
    leaves = d.leaves(lambda s: DTYPES[s.leaf.dtype].can_require_grad and not s.leaf.inference)
    if not leaves:
        return None
    step = d.rng.choice(leaves)
    now = not step.leaf.requires_grad
    return d.call(
        "requires_grad",
        f"t{step.out}.requires_grad is {now}",
        {step.out: [_leaf(step, requires_grad=now)]},
    )


def mode(d: Drawing) -> Call:
    which = d.rng.choice(("no_grad", "inference_mode"))
    return d.call("grad mode", f"the call runs under torch.{which}()", {}, mode=which)


def inference(d: Drawing) -> Call | None:
    """A leaf that does not require grad, made under inference_mode: an
    inference tensor as inference code makes them (one that requires grad is
    another property as well, and eager ignores it: "requires_grad is
    silently ignored when it's an inference tensor", pytorch#53343)."""
    leaves = d.leaves(lambda s: not s.leaf.inference and not s.leaf.requires_grad)
    if not leaves:
        return None
    step = d.rng.choice(leaves)
    return d.call(
        "inference tensor",
        f"t{step.out} is an inference tensor",
        {step.out: [_leaf(step, inference=True)]},
    )


DRAW: dict[str, Callable[[Drawing], Call | None]] = {
    "aliasing": aliasing,
    "shape": shape,
    "stride": stride,
    "dtype": dtype,
    "requires_grad": requires_grad,
    "grad mode": mode,
    "inference tensor": inference,
}
assert tuple(DRAW) == CHANGES


def _dtype_name(t: torch.Tensor) -> str:
    return DTYPE_NAMES[t.dtype]
