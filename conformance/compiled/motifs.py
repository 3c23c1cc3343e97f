"""Compile-only motifs: short chains added to a program where
functionalization has the most to get right.

- a strided input written in place, then read by a stride-sensitive op
  (as_strided, as_strided_copy, narrow, diagonal, unfold);
- a tensor and its view passed as two arguments, one written, the other read;
- overlapping views of one tensor, one written;
- a non-leaf input mutated, then backward through it;
- a custom autograd.Function that marks its input dirty;
- as_strided_ changing a tensor's geometry in place;
- .data =, detach_(), requires_grad_(), retain_grad() on what the body made;
- a graph break somewhere in the body.

Motifs are grown against eager torch (the reference for these ops): each
step runs as it is added, so its operands and parameters fit; a step that
raises ends the body there, as in the differential.
"""

from __future__ import annotations

from dataclasses import replace
from random import Random

import torch
from hypothesis import assume
from hypothesis import strategies as st

from conformance.compiled.calls import with_calls
from conformance.compiled.ops import COMPILE_OPS, EAGER_ONLY, overlapping
from conformance.compiled.program import CompiledProgram, CStep, run_step, split
from conformance.differential import crash_patterns
from conformance.differential.generate import programs
from strategies.dtypes import DTYPES, seeded_values
from strategies.programs import Leaf, Program

# the share of programs called again (calls.py): each later call may recompile,
# and the default profile's compiled run stays within five minutes at 0.3
SEQUENCES = 0.3
_SCALARS = (0.5, -1.5, 2.0, 3.0, -0.25)
_WRITES = ("add_s_", "mul_s_", "neg_", "zero_", "fill_", "mark_dirty")
_WRITES_VARIED = ("add_s_", "mul_s_", "neg_", "mark_dirty")  # values stay distinct


class Builder:
    """A compiled program being extended, with eager tensors for every token."""

    def __init__(
        self, program: CompiledProgram, rng: Random, dtypes: tuple[str, ...], device: str = "cpu"
    ) -> None:
        self.rng = rng
        self.dtypes = dtypes
        self.device = device
        self.args, self.body, self.tail = list(program.args), list(program.body), []
        self.rest = list(program.tail)  # the base program's tail, appended at the end
        self.dynamic = program.dynamic
        self.env: dict[int, torch.Tensor] = {}
        self.closed = False  # the body raised: nothing more goes in
        tokens = [s.out for s in (*program.args, *program.body, *program.tail) if s.out is not None]
        self.next = max(tokens, default=-1) + 1
        for step in self.args:
            run_step(step, self.env)
        for step in self.body:
            try:
                run_step(step, self.env)
            except Exception:  # noqa: BLE001 - the body ends with a step that raises
                self.closed = True
                break

    def program(self) -> CompiledProgram:
        tail = () if self.closed else (*self.tail, *self.rest)
        return CompiledProgram(tuple(self.args), tuple(self.body), tuple(tail), self.dynamic)

    def _token(self) -> int:
        self.next += 1
        return self.next - 1

    def leaf(self, shape: tuple[int, ...], requires_grad: bool, dtype: str | None = None) -> int:
        floating = [d for d in self.dtypes if DTYPES[d].can_require_grad]
        dtype = dtype or self.rng.choice(floating or list(self.dtypes))
        requires_grad = requires_grad and DTYPES[dtype].can_require_grad
        values = seeded_values(dtype, shape, self.rng.getrandbits(32) | 1)
        step = CStep(
            "leaf", out=self._token(), leaf=Leaf(values, dtype, self.device, requires_grad)
        )
        run_step(step, self.env)
        self.args.append(step)
        return step.out

    def outside(self, op: str, x: int, params: tuple = ()) -> int:
        """A view (or any op) of an argument, made outside: one more argument."""
        step = CStep(op, (x,), params, out=self._token())
        run_step(step, self.env)
        self.args.append(step)
        return step.out

    def inside(
        self,
        op: str,
        ins: tuple[int, ...],
        params: tuple = (),
        new: bool = True,
        no_grad: bool = False,
    ) -> int | None:
        """A body step; None once the body has raised."""
        if self.closed:
            return None
        step = CStep(op, ins, params, no_grad, self._token() if new else None)
        self.body.append(step)
        try:
            run_step(step, self.env)
        except Exception:  # noqa: BLE001 - kept: the compiled call must raise too
            self.closed = True
            return None
        return step.out if new else ins[0]

    def after(self, op: str, ins: tuple[int, ...], params: tuple = ()) -> None:
        """An eager step after the call (backward)."""
        if not self.closed:
            self.tail.append(CStep(op, ins, params))

    def sample(self, op: str, x: int) -> tuple | None:
        return COMPILE_OPS[op].sample(self.rng, self.env[x])

    def view(self, x: int, inside: bool = True) -> int | None:
        """A view of x that can be written: strided, offset, transposed, diagonal..."""
        t = self.env[x]
        choices = ["as_strided", "narrow", "getitem", "t", "transpose", "diagonal"]
        op = self.rng.choice(choices)
        if op in ("t", "transpose") and t.dim() < 2:
            op = "getitem"
        if op == "diagonal" and t.dim() < 2:
            op = "narrow"
        if op == "getitem":
            params = (tuple(slice(None, None, 2) if n > 1 else slice(None) for n in t.shape[:2]),)
        elif op == "t":
            params = () if t.dim() == 2 else None
            if params is None:
                op, params = "transpose", (0, 1)
        elif op == "transpose":
            params = (0, t.dim() - 1)
        else:
            params = self.sample(op, x)
        if params is None or (op == "getitem" and not t.dim()):
            return None
        if op == "as_strided" and overlapping(params[0], params[1]):
            return None
        return self.inside(op, (x,), params) if inside else self.outside(op, x, params)

    def write(self, x: int, no_grad: bool = False, uniform: bool = True) -> None:
        op = self.rng.choice(_WRITES if uniform else _WRITES_VARIED)
        t = self.env[x]
        if op == "mark_dirty" and not (t.is_floating_point() or t.is_complex()):
            op = "mul_s_"
        params = (self.rng.choice(_SCALARS),) if op in ("add_s_", "mul_s_", "fill_") else ()
        if not (t.is_floating_point() or t.is_complex()) and params:
            params = (int(params[0] * 2),)
        self.inside(op, (x,), params, new=False, no_grad=no_grad)

    def backward_from(self, x: int) -> None:
        if self.closed or x not in self.env or not self.env[x].requires_grad:
            return
        s = self.inside("sum", (x,))
        if s is not None:
            self.after("backward", (s,), (True,))
            self.after("backward", (s,), (True,))  # and again: gradients accumulate


def _graded_shape(rng: Random) -> tuple[int, ...]:
    return rng.choice(((6,), (5,), (3, 4), (2, 3), (4, 4), (2, 3, 2)))


def strided_input_then_stride_sensitive(b: Builder) -> None:
    """pytorch#133512's shape: a strided input written in place, then read by
    an op that sees strides."""
    base = b.leaf(_graded_shape(b.rng), requires_grad=False)
    x = b.view(base, inside=False)
    if x is None:
        return
    b.write(x, uniform=False)
    reader = b.rng.choice(_STRIDE_READERS)
    params = b.sample(reader, x) if x in b.env else None
    if params is not None and not b.closed:
        out = b.inside(reader, (x,), params)
        if out is not None and b.rng.random() < 0.5:
            b.inside("mul_s", (out,), (2.0,))


# as_strided_copy reads its input's memory as laid out: the most sensitive
_STRIDE_READERS = ("as_strided_copy",) * 3 + ("as_strided", "narrow", "diagonal", "unfold")


def aliased_inputs(b: Builder) -> None:
    """A tensor and its view as two arguments: write through one, read the other."""
    grad = b.rng.random() < 0.5
    base = b.leaf(_graded_shape(b.rng), requires_grad=grad)
    if grad:
        base = b.outside("mul_s", base, (1.0,))  # a non-leaf input: writable, in the graph
    v = b.view(base, inside=False)
    if v is None:
        return
    target, other = (v, base) if b.rng.random() < 0.5 else (base, v)
    b.write(target)
    read = b.inside(b.rng.choice(("clone", "exp", "sin")), (other,))
    if b.rng.random() < 0.5:
        b.view(other)  # an output that is a view of an input
    if read is not None and grad:
        b.backward_from(read)


def overlapping_views(b: Builder) -> None:
    """Two overlapping windows of one tensor; one is written, both returned."""
    x = b.leaf((6,), requires_grad=b.rng.random() < 0.5)
    y = b.inside("mul_s", (x,), (1.5,))
    if y is None:
        return
    a = b.inside("narrow", (y,), (0, 0, 4))
    c = b.inside("narrow", (y,), (0, 2, 4))
    if a is None or c is None:
        return
    b.write(b.rng.choice((a, c)))
    out = b.inside("mul", (a, c))
    if out is not None:
        b.backward_from(out)


def input_mutation_then_backward(b: Builder) -> None:
    x = b.leaf(_graded_shape(b.rng), requires_grad=True)
    y = b.outside("mul_s", x, (2.0,))  # a non-leaf argument
    target = y if b.rng.random() < 0.5 else b.view(y)
    if target is None:
        return
    op = b.rng.choice(("mul_s_", "add_s_", "mark_dirty", "exp_", "sin_"))
    b.inside(op, (target,), (1.5,) if op in ("mul_s_", "add_s_") else (), new=False)
    b.backward_from(y)


def mark_dirty_on_a_view(b: Builder) -> None:
    x = b.leaf(_graded_shape(b.rng), requires_grad=True)
    y = b.inside("clone", (x,))
    target = b.view(y) if y is not None and b.rng.random() < 0.5 else y
    if target is None:
        return
    b.inside("mark_dirty", (target,), new=False)
    b.backward_from(y)


def geometry_in_place(b: Builder) -> None:
    x = b.leaf(_graded_shape(b.rng), requires_grad=False)
    y = b.inside("clone", (x,)) if b.rng.random() < 0.5 else x
    if y is None:
        return
    params = b.sample("as_strided_", y)
    if params is None or overlapping(params[0], params[1]):
        return
    b.inside("as_strided_", (y,), params, new=False)
    b.write(y)


def autograd_calls(b: Builder) -> None:
    """.data =, detach_(), requires_grad_(), retain_grad() inside the body."""
    x = b.leaf(_graded_shape(b.rng), requires_grad=True)
    op = b.rng.choice(("mul_s", "exp", "sin"))
    y = b.inside(op, (x,), (2.0,) if op == "mul_s" else ())
    if y is None:
        return
    what = b.rng.choice(("set_data", "detach_", "requires_grad_", "retain_grad"))
    if what == "set_data":
        other = b.leaf(tuple(b.env[x].shape), requires_grad=False, dtype=_dtype(b.env[x]))
        b.inside("set_data", (x, other), new=False)
    elif what == "requires_grad_":
        z = b.inside("detach", (y,))
        if z is not None:
            b.inside("requires_grad_", (z,), (True,), new=False)
    else:
        b.inside(what, (y,), new=False)
    w = b.inside("mul_s", (y,), (3.0,))
    if w is not None:
        b.backward_from(w)


def reads_a_written_view(b: Builder) -> None:
    """In-place through a view of a body-made tensor, then the base is read."""
    x = b.leaf(_graded_shape(b.rng), requires_grad=b.rng.random() < 0.5)
    y = b.inside("mul_s", (x,), (2.0,))
    v = b.view(y) if y is not None else None
    if v is None:
        return
    b.write(v, no_grad=b.rng.random() < 0.25)
    reader = b.rng.choice(("as_strided_copy", "unfold", "diagonal", "narrow"))
    params = b.sample(reader, y) if not b.closed else None
    if params is not None:
        b.inside(reader, (y,), params)
    b.backward_from(y)


def saved_then_written_after(b: Builder) -> None:
    """The compiled graph saves a tensor for backward; it is written after the
    call: backward must refuse, as eager's does (or not, where nothing saved
    is written)."""
    x = b.leaf(_graded_shape(b.rng), requires_grad=True)
    op = b.rng.choice(("exp", "tanh", "sigmoid", "sin", "mul_s"))
    y = b.inside(op, (x,), (2.0,) if op == "mul_s" else ())
    if y is None:
        return
    s = b.inside("sum", (y,))
    if s is None:
        return
    target = b.rng.choice((x, y)) if op in ("sin", "mul_s") else y
    if target == x:  # a leaf: written through detach(), which shares its version counter
        target = b.outside("detach", x)
    b.after(b.rng.choice(("mul_s_", "add_s_")), (target,), (1.5,))
    b.after("backward", (s,), (False,))


def _dtype(t: torch.Tensor) -> str:
    from strategies.tensors import DTYPE_NAMES

    return DTYPE_NAMES[t.dtype]


MOTIFS = (
    strided_input_then_stride_sensitive,
    strided_input_then_stride_sensitive,  # where pytorch#133512 lives: twice as often
    aliased_inputs,
    overlapping_views,
    input_mutation_then_backward,
    mark_dirty_on_a_view,
    geometry_in_place,
    autograd_calls,
    reads_a_written_view,
    saved_then_written_after,
    saved_then_written_after,  # the version check through a compiled graph: twice as often
)


def _without_inference(program: Program) -> Program:
    """The program with its inference_mode leaves made ordinary: inference
    tensors as inputs of a compiled function are outside this differential
    (docs/compile.md); the generator's program, with them, is still held to
    the reference model."""
    steps = [
        replace(s, leaf=replace(s.leaf, inference=False)) if s.op == "leaf" else s
        for s in program.steps
    ]
    cut = next((i for i, s in enumerate(steps) if s.op in EAGER_ONLY), len(steps))  # (ops.py)
    return Program(steps[:cut], render=program.render)


def graph_break(b: Builder) -> None:
    """A graph break at a random place in the body."""
    if not b.body:
        return
    at = b.rng.randint(0, len(b.body))
    b.body.insert(at, CStep("graph_break"))


def extend(
    program: CompiledProgram, rng: Random, dtypes: tuple[str, ...], motifs: int, device: str = "cpu"
) -> CompiledProgram:
    """`program` with `motifs` compile-only motifs added to its body."""
    b = Builder(program, rng, dtypes, device)
    for _ in range(motifs):
        if b.closed:
            break
        rng.choice(MOTIFS)(b)
    if rng.random() < 0.3:
        graph_break(b)
    return b.program()


@st.composite
def compiled_programs(
    draw: st.DrawFn,
    devices: tuple[str, ...],
    dtypes: tuple[str, ...],
    salt: int = 0,
    max_steps: int = 24,
    sequences: float = SEQUENCES,
) -> tuple[Program, CompiledProgram]:
    """A program of the differential's generator, and its compiled form with
    compile-only motifs added; a quarter of them with dynamic=True shapes;
    `sequences` of them called again, one to three times (calls.py)."""
    base = draw(programs(devices, dtypes, max_steps=max_steps, salt=salt), label="program")
    # a program whose eager run takes the process down (a known crash: register_hook
    # on a stale view, pytorch/pytorch#196459) leaves no eager run to hold a backend
    # to, and splitting it runs it here, reading no grad_fn between steps (as a lazy
    # program does); the eager differential runs such programs in a child process
    assume(not crash_patterns.reached(replace(base, reads="lazy")))
    seed = draw(st.integers(0, 2**64 - 1), label="motif seed")
    rng = Random(seed)
    compiled = split(_without_inference(base), dynamic=rng.random() < 0.25)
    compiled = extend(compiled, rng, dtypes, rng.randint(1, 2), devices[0])
    # the later calls from a stream of their own: the programs are drawn as before
    calls = Random(f"later calls {seed}")
    if calls.random() < sequences:
        compiled = with_calls(compiled, calls, dtypes, devices[0])
    return base, compiled
