"""A generated program as a Python function of its inputs.

The differential's programs (conformance.differential.generate) are chains
of steps over a pool of tensors. Here they become three parts:

- `args`: the leaves, and views of them, made outside and passed in
  (so a tensor and its view can be two arguments);
- `body`: the steps up to the first backward, as the body of
  `def program(t0, t1, ...)`, which returns every tensor it made;
- `tail`: what follows (backward, accumulation, later writes), run eagerly
  on the call's inputs and outputs, the same on both sides;
- `calls`: later calls of the same compiled function (issue 35), each on
  fresh inputs made by its own `args` steps, with one property changed from
  the first call's (aliasing, shape, strides, dtype, requires_grad, grad
  mode, an inference tensor); each is followed by the same `tail`.

Tensors are named by tokens (`t3`), so steps can move between the parts.
The same source text runs eagerly, under torch.compile and in repro scripts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch

from conformance.compiled.ops import COMPILE_OPS, namespace
from conformance.differential.torch_calls import call_source
from conformance.differential.torch_calls import compiled as torch_call
from oracle import OPS
from oracle.hook_rows import GRADAPI_OPS
from strategies.programs import Leaf, Program
from strategies.tensors import leaf_tensor

# steps that run backward start the eager tail: torch.autograd.grad too (its
# result may be None, never a compiled program's output)
BACKWARD = ("backward", "backward_g", "autograd_grad", *GRADAPI_OPS)  # gradapi: eager
ALIASED_INPUTS = "aliased inputs"

# Steps that only make a later call's inputs (conformance/compiled/calls.py):
# the same tensor passed twice, and a leaf's values laid out with other strides.
CALL_OPS = {
    "same": "{t0}",
    "restrided": "torch.empty_strided({p0}, {p1}, dtype={t0}.dtype, device={t0}.device)"
    ".copy_({t0}).requires_grad_({p2})",
}
# The grad modes a later call may run under, as the repro script enters them
MODES = {"no_grad": "torch.no_grad()", "inference_mode": "torch.inference_mode()"}


@dataclass(frozen=True)
class CStep:
    op: str  # "leaf", a row of oracle.OPS, or of COMPILE_OPS
    ins: tuple[int, ...] = ()  # tokens of the tensor operands
    params: tuple = ()
    no_grad: bool = False
    out: int | None = None  # token of the new tensor it makes
    leaf: Leaf | None = field(default=None, compare=False)

    def source(self) -> str:
        names = [f"t{i}" for i in self.ins]
        if self.op == "leaf":
            code = self.leaf.source()
            if self.leaf.inference:
                return f"with torch.inference_mode():\n    t{self.out} = {code}"
        elif self.op in COMPILE_OPS:
            code = COMPILE_OPS[self.op].source(names, self.params)
        elif self.op in CALL_OPS:
            code = _call_op_source(self.op, names, self.params)
        else:
            code = call_source(self.op, names, self.params)
        return f"t{self.out} = {code}" if self.out is not None else code

    @property
    def is_view(self) -> bool:
        if self.op in COMPILE_OPS:
            return COMPILE_OPS[self.op].view
        return self.op in OPS and OPS[self.op].view and self.op != "reshape"


def _call_op_source(op: str, names: list[str], params: tuple) -> str:
    values = {f"t{i}": n for i, n in enumerate(names)}
    values.update({f"p{i}": repr(p) for i, p in enumerate(params)})
    return CALL_OPS[op].format(**values)


@dataclass(frozen=True)
class Call:
    """A later call of the compiled function: fresh inputs, one property changed.

    `args` make its inputs, as the program's `args` make the first call's:
    every token the function takes (the program's `arg_tokens`), and any
    helper they are made from (a buffer two overlapping slices share)."""

    change: str  # the property changed: one of calls.CHANGES
    detail: str  # how, in words: "t3 is t1 (the same tensor twice)"
    args: tuple[CStep, ...]
    mode: str = ""  # "", or a grad mode of MODES the call runs under

    def describe(self) -> str:
        return f"{self.change}: {self.detail}"


@dataclass(frozen=True)
class CompiledProgram:
    args: tuple[CStep, ...]
    body: tuple[CStep, ...]
    tail: tuple[CStep, ...] = ()
    dynamic: bool = False
    calls: tuple[Call, ...] = ()  # later calls of the same compiled function
    mode: str = ""  # the first call's grad mode (MODES), where a later call's is tried alone

    @property
    def compile_dynamic(self) -> bool | None:
        """torch.compile's `dynamic`: True, or where later calls may change
        shapes, None (static first, dynamic on a shape's recompile: Dynamo's
        automatic dynamic shapes, the default), else False."""
        if self.dynamic:
            return True
        return None if self.calls else False

    def call_args(self, number: int) -> tuple[CStep, ...]:
        """The steps that make call `number`'s inputs (0: the first call)."""
        return self.args if number == 0 else self.calls[number - 1].args

    def call_mode(self, number: int) -> str:
        return self.mode if number == 0 else self.calls[number - 1].mode

    def alone(self, number: int) -> CompiledProgram:
        """The function compiled afresh for call `number`'s inputs alone."""
        if number == 0:
            return replace(self, calls=())
        call = self.calls[number - 1]
        return replace(self, args=call.args, calls=(), mode=call.mode)

    @property
    def arg_tokens(self) -> list[int]:
        return [s.out for s in self.args]

    @property
    def output_tokens(self) -> list[int]:
        return [s.out for s in self.body if s.out is not None]

    @property
    def ops(self) -> set[str]:
        """Its op names, and "aliased inputs" when an argument is a view (or
        any op) of another: the classes known failures are narrowed by."""
        names = {s.op for s in (*self.args, *self.body, *self.tail)}
        if any(s.op != "leaf" for s in self.args):
            names.add(ALIASED_INPUTS)
        for call in self.calls:  # a later call's change: "later call: aliasing"
            names.add(f"later call: {call.change}")
        return names

    def function_source(self) -> str:
        params = ", ".join(f"t{i}" for i in self.arg_tokens)
        lines = [f"def program({params}):"]
        for step in self.body:
            if step.no_grad:
                lines += ["    with torch.no_grad():", f"        {step.source()}"]
            else:
                lines.append(f"    {step.source()}")
        outs = "".join(f"t{i}, " for i in self.output_tokens)
        lines.append(f"    return ({outs})")
        return "\n".join(lines)

    def function(self):
        """A fresh Python function (a new code object: Dynamo's caches start empty)."""
        scope = namespace()
        exec(compile(self.function_source(), "<program>", "exec"), scope)
        return scope["program"]

    def listing(self) -> list[str]:
        lines = ["# made outside, passed in:"]
        lines += [line for s in self.args for line in s.source().splitlines()]
        dynamic = self.compile_dynamic
        lines += ["", "# compiled" + ("" if dynamic is False else f" (dynamic={dynamic})") + ":"]
        lines += self.function_source().splitlines()
        first = f"with {MODES[self.mode]}: " if self.mode else ""
        lines += [
            "",
            f"{first}{', '.join(f't{i}' for i in self.output_tokens) or '()'} = "
            f"program({', '.join(f't{i}' for i in self.arg_tokens)})",
        ]
        if self.tail:
            lines += ["", "# then, eagerly:"] + [_tail_line(s) for s in self.tail]
        for number, call in enumerate(self.calls, 2):
            lines += ["", f"# call {number} of {len(self.calls) + 1}, {call.describe()}:"]
            lines += [line for s in call.args for line in s.source().splitlines()]
            mode = f"with {MODES[call.mode]}: " if call.mode else ""
            lines += [
                f"{mode}{', '.join(f't{i}' for i in self.output_tokens) or '()'} = "
                f"program({', '.join(f't{i}' for i in self.arg_tokens)})"
            ]
            if self.tail:
                lines += ["# then the same eager steps"]
        return lines


def _tail_line(step: CStep) -> str:
    if step.no_grad:
        return f"with torch.no_grad():\n    {step.source()}"
    return step.source()


def make_leaf(leaf: Leaf) -> torch.Tensor:
    with torch.inference_mode(leaf.inference):  # as leaf.source() spells it
        return leaf_tensor(leaf.values, leaf.dtype, leaf.device, leaf.requires_grad)


def run_step(step: CStep, env: dict[int, torch.Tensor]) -> object:
    """Run one step eagerly on the tensors `env` names; store its new tensor."""
    if step.op == "leaf":
        result = make_leaf(step.leaf)
    elif step.op == "same":
        result = env[step.ins[0]]
    else:
        args = [env[i] for i in step.ins]
        with torch.set_grad_enabled(not step.no_grad and torch.is_grad_enabled()):
            if step.op in COMPILE_OPS:
                scope = namespace()
                names = [f"t{i}" for i in range(len(args))]
                scope.update(zip(names, args, strict=True))
                code = COMPILE_OPS[step.op].source(names, step.params)
                result = eval(code, scope)  # noqa: S307 - our own template
            elif step.op in CALL_OPS:
                scope = {"torch": torch, **dict(zip(("t0",), args, strict=True))}
                code = _call_op_source(step.op, ["t0"], step.params)
                result = eval(code, scope)  # noqa: S307 - our own template
            else:
                result = torch_call(step.op)(*args, *step.params)
    if step.out is not None:
        env[step.out] = result
    return result


def tokens_of(program: Program) -> list[CStep]:
    """The program's steps with tokens: each new tensor named by its pool index.

    Which steps make a new tensor is seen by running them eagerly (the same
    rule as the differential's: a result that is no tensor of the pool)."""
    pool: list[torch.Tensor] = []
    out: list[CStep] = []
    for step in program.steps:
        if step.op == "grad_cg":  # aot_autograd does not support double backward: cut
            break
        cstep = CStep(step.op, step.tensors, step.params, step.no_grad, None, step.leaf)
        try:
            if step.op == "leaf":
                result = make_leaf(step.leaf)
            else:
                args = [pool[i] for i in step.tensors]
                with torch.set_grad_enabled(not step.no_grad):
                    result = torch_call(step.op)(*args, *step.params)
        except Exception:  # noqa: BLE001 - a step that raises ends the body there
            out.append(cstep)
            return out + [CStep("raised")]
        if isinstance(result, torch.Tensor) and all(result is not t for t in pool):
            cstep = replace(cstep, out=len(pool))
            pool.append(result)
        out.append(cstep)
    return out


def split(program: Program, dynamic: bool = False) -> CompiledProgram:
    """Leaves outside, the steps before the first backward (or up to the
    first that raises) inside, the rest after."""
    steps = tokens_of(program)
    raised = bool(steps) and steps[-1].op == "raised"
    if raised:
        steps = steps[:-1]
    args = tuple(s for s in steps if s.op == "leaf")
    rest = [s for s in steps if s.op != "leaf"]
    first_backward = next((k for k, s in enumerate(rest) if s.op in BACKWARD), len(rest))
    if raised and first_backward == len(rest):
        return CompiledProgram(args, tuple(rest), (), dynamic)
    return CompiledProgram(
        args, tuple(rest[:first_backward]), tuple(rest[first_backward:]), dynamic
    )
