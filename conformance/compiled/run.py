"""Run a compiled program eagerly or under a target, and observe it.

Both sides start from identical fresh inputs (built from the same leaf
values) and are observed the same way: after the call, every argument and
every output; after each later eager step, the same tensors and those the
step made. Each observation is the differential's (observe.observe_torch),
plus storage offsets and, for the arguments, their version counters.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, field

import torch

from conformance.compiled.program import CompiledProgram, run_step
from conformance.compiled.targets import Target, guard_cache_limits
from conformance.differential.observe import Observed, error_kind, observe_torch
from conformance.differential.write_checks import is_write
from oracle import classify as oracle_classify


@dataclass
class Snapshot:
    """Everything a caller can see at one point."""

    tokens: list[int]  # which tensors, in this order
    seen: list[Observed]
    offsets: list[int]
    versions_before: dict[int, object]  # arguments' versions before the call / step


@dataclass
class Outcome:
    """The call, or one later step: the error it raised, or what it left."""

    where: str  # "call", or "step N" of the tail
    error: str | None = None  # the error's class (observe.error_kind)
    message: str = ""
    snapshot: Snapshot | None = None


@dataclass
class Trace:
    outcomes: list[Outcome] = field(default_factory=list)  # the first call and its tail
    graphs: int = 0  # graphs Dynamo compiled for the first call (0: it ran eagerly)
    later: list[list[Outcome]] = field(default_factory=list)  # each later call's outcomes
    later_graphs: list[int] = field(default_factory=list)  # graphs compiled for each

    def calls(self) -> list[list[Outcome]]:
        """Every call's outcomes, the first call's first."""
        return [self.outcomes, *self.later]


def _version(t: torch.Tensor) -> object:
    try:
        return t._version
    except RuntimeError:
        return None  # an inference tensor: no counter


def _snapshot(
    env: dict[int, torch.Tensor], tokens: list[int], before: dict, resizable: bool
) -> Snapshot:
    """What a caller sees of the tensors `tokens` name. `resizable`: read
    without marking their storage non-resizable (Tensor.numpy does), where a
    later step may resize it (out=, resize_): torch.mul(a, b, out=o) would
    otherwise grow o's sizes, fail to grow its storage, and leave o reading
    past it (the repro, reading nothing, grows it)."""
    pool = [env[t] for t in tokens]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seen = observe_torch(pool, resizable=resizable)
    return Snapshot(list(tokens), seen, [t.storage_offset() for t in pool], before)


def compile_function(program: CompiledProgram, target: Target):
    torch._dynamo.reset()  # every program starts from empty caches
    guard_cache_limits()
    return torch.compile(
        program.function(), backend=target.backend, dynamic=program.compile_dynamic
    )


def execute(program: CompiledProgram, target: Target | None) -> Trace:
    """Run `program`: eagerly when `target` is None, else compiled for it;
    then each of its later calls, through the same function, on fresh inputs."""
    trace = Trace()
    fn = program.function() if target is None else compile_function(program, target)
    for number in range(len(program.calls) + 1):
        frames_before = _graphs()
        outcomes = _call(program, number, fn)
        graphs = _graphs() - frames_before
        if number == 0:
            trace.outcomes, trace.graphs = outcomes, graphs
        else:
            trace.later.append(outcomes)
            trace.later_graphs.append(graphs)
    return trace


def _call(program: CompiledProgram, number: int, fn) -> list[Outcome]:
    """Call `number` (0: the first) on fresh inputs, then the eager steps after it."""
    outcomes: list[Outcome] = []
    resizes = any(is_write(op) for op in program.ops)
    env: dict[int, torch.Tensor] = {}
    made = program.call_args(number)
    for step in made:
        run_step(step, env)
    args = program.arg_tokens
    before = {s.out: _version(env[s.out]) for s in made}
    mode = program.call_mode(number)
    try:
        with warnings.catch_warnings(), grad_mode(mode):
            warnings.simplefilter("ignore")
            outputs = fn(*(env[t] for t in args))
    except Exception as error:  # noqa: BLE001 - every error is an outcome to compare
        return [Outcome("call", classify(error), _first_line(error))]
    outs = program.output_tokens
    env.update(zip(outs, outputs, strict=True))
    # the arguments, any tensor they were made from (a buffer two slices share), the outputs
    tokens = list(dict.fromkeys([*args, *(s.out for s in made), *outs]))
    outcomes.append(Outcome("call", snapshot=_snapshot(env, tokens, before, resizes)))
    for step_number, step in enumerate(program.tail):
        before = {t: _version(env[t]) for t in tokens}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run_step(step, env)
        except Exception as error:  # noqa: BLE001
            outcome = Outcome(f"step {step_number}", classify(error), _first_line(error))
        else:
            outcome = Outcome(f"step {step_number}")
        # torch.autograd.grad's result is None for an input it does not reach
        if step.out is not None and env.get(step.out) is not None and step.out not in tokens:
            tokens.append(step.out)
        outcome.snapshot = _snapshot(env, tokens, before, resizes)
        outcomes.append(outcome)
    return outcomes


def grad_mode(mode: str):
    if mode == "no_grad":
        return torch.no_grad()
    if mode == "inference_mode":
        return torch.inference_mode()
    return contextlib.nullcontext()


# The same errors as eager's, as the meta functions Dynamo traces with spell
# them (a TorchRuntimeError quotes the fake tensor's error)
META_SPELLINGS = {
    "Attempting to broadcast a dimension": "NOT_BROADCASTABLE",
    # copy_ from a src of more dimensions than dst: eager's "The size of
    # tensor a (2) must match the size of tensor b (3)"; the meta kernel
    # expands src to dst's shape and says so
    "expand: the requested shape has too few dimensions": "NOT_BROADCASTABLE",
    # expand() to a size that is not the tensor's at a non-singleton dimension:
    # eager's "The expanded size of the tensor (1) must match the existing size
    # (2)"; the meta kernel says "expand: attempting to expand a dimension of
    # length 2 -> 1!" (a later call's other shape, ci seed 9)
    "expand: attempting to expand a dimension of length": "NOT_BROADCASTABLE",
    # mm of a tensor that is not 2-d: eager's "self must be a matrix"
    "a must be 2D": "SHAPE_MISMATCH",
    "b must be 2D": "SHAPE_MISMATCH",
    # view() of a shape the strides cannot give: eager's "view size is not
    # compatible with input tensor's size and stride"; the reference
    # decomposition's ValueError (seed 6 of the ci sweep, movedim then view)
    "Cannot view a tensor with shape": "VIEW_INCOMPATIBLE",
    # out= of a dtype the result cannot be cast into: eager's "result type
    # Float can't be cast to the desired output type Long"; the reference's
    # _safe_copy_out says "Attempting to cast from ... but this can't be cast
    # because it is not safe!"
    "can't be cast because it is not safe": "OUT_CAST",
}


def classify(error: BaseException) -> str:
    """The error's class: the differential's, or the eager class of a meta error."""
    kind = error_kind(error)
    if kind.startswith("unclassified"):
        # a backend's failure wraps torch's error in an exception of its own
        # (BackendCompilerFailed is no RuntimeError for every backend)
        text = " ".join(str(e) for e in _chain(error))
        found = oracle_classify(text)
        if found is not None:
            return found.name
        for spelling, name in META_SPELLINGS.items():
            if spelling in text:
                return name
    return kind


def _chain(error: BaseException) -> list[BaseException]:
    """The error and those it wraps (its cause, context or inner exception)."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        current = (
            current.__cause__ or getattr(current, "inner_exception", None) or current.__context__
        )
    return seen


def _first_line(error: BaseException) -> str:
    """The error's type and first line; for a backend's failure, whose own
    first line says only "backend='aot_eager' raised:", the type and first
    line of the error it wraps, the real cause (BackendCompilerFailed:
    AssertionError: ...), so reports and known-failure `message`s see it."""
    inner = getattr(error, "inner_exception", None)
    if isinstance(inner, BaseException) and inner is not error:
        return f"{type(error).__name__}: {_first_line(inner)}"
    text = str(error).strip()
    line = f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"
    cause = _chain(error)[-1]
    if type(error).__name__ == "TorchRuntimeError" and cause is not error:
        # its first line says only "RuntimeError when making fake tensor call":
        # the error the fake tensor raised is the cause
        said = str(cause).strip()
        line += f": {type(cause).__name__}: {said.splitlines()[0] if said else ''}"
    return line


def _graphs() -> int:
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return 0
    return int(counters["stats"].get("unique_graphs", 0))
