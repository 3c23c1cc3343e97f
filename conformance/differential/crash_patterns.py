"""Programs that reach a known crash of torch, told by their steps.

The differential draws what torch promises, known bugs included: a program
is never steered around one. But a step that segfaults takes the process
down, and with it the rest of the test's programs. So a program that
reaches a crash pattern listed here runs in a child process
(`isolation.py`): where torch crashes, the known-crash entry that names the
pattern's finding (conformance/known-failures.toml) reports it and the
search goes on; where it does not (a build with the fix), the child's
lockstep check counts like any other program's.

Each pattern is decided from the program's steps, replayed on the model
(no torch): whatever torch release runs, the same programs are flagged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from conformance.differential.growth import BACKWARD, Growth
from oracle import OPS, OracleError, OTensor
from oracle.hook_rows import hooking
from strategies.programs import Program

_TENSOR_HOOKS = hooking("tensor")


@dataclass(frozen=True)
class CrashPattern:
    finding: str  # the finding's id (findings.toml), named by its known-crash entry
    reaches: Callable[[Program], bool]


def stale_view(t: OTensor) -> bool:
    """A view whose grad_fn the next read regenerates (or refuses)."""
    return t.base is not None and t.attr_version != t.counter.value


def hooks_an_unread_stale_view(program: Program) -> bool:
    """register_hook on a view whose base was written in place, its grad_fn
    unread since: register_hook regenerates it while it makes the hook
    dictionary, which segfaults torch up to 2.14.1 (pytorch/pytorch#196459).
    Only a lazy program leaves grad_fn unread between steps; the others read
    it after every step, which regenerates it first."""
    if program.reads != "lazy" or not any(s.op in _TENSOR_HOOKS for s in program.steps):
        return False  # the common case, decided without replaying the model
    g = Growth((), ())
    for step in program.steps:
        if g.over:
            return False  # a failed backward ends the program: no step after it runs
        if step.op in _TENSOR_HOOKS and _regenerates_in_register_hook(g.pool[step.tensors[0]]):
            return True
        g.apply(step)
    return False


def _regenerates_in_register_hook(t: OTensor) -> bool:
    """Whether register_hook on `t` regenerates its grad_fn, as the model's
    register_hook (oracle/gradapi.py) reads it: a tensor that requires grad,
    the first hook since its grad_fn changed, a stale view whose regeneration
    is not refused (one output of several, say: torch raises there instead).
    Reading it here changes the model's state: the replay stops right after."""
    if not t.requires_grad or not stale_view(t):
        return False
    made_for = getattr(t, "hook_dict_for", None)
    if made_for is not None and made_for[0] is t._fn:
        return False  # a later hook joins the dictionary made earlier, unread
    try:
        t.grad_fn()
    except OracleError:
        return False
    return True


def writes_a_retained_later_output_through_a_view(program: Program) -> bool:
    """retain_grad() on an output of a node other than its first (the second
    output of aminmax, var_mean, std_mean, max(dim); a later piece of
    unsafe_split and co.), an in-place write in
    grad mode through a view of it, then a backward: rebase_history looks up
    the retains_grad hook by the output number it has just reset to 0, and
    backward segfaults (torch 2.4.1 to 2.14.1; 2.0.1 computes)."""
    if not any(s.op == "retain_grad" for s in program.steps):
        return False  # the common case, decided without replaying the model
    g, armed = Growth((), ()), False
    for step in program.steps:
        if g.over:
            return False
        if armed and step.op in (*BACKWARD, "autograd_grad"):
            return True
        spec = OPS.get(step.op)
        if spec is not None and spec.inplace and not (step.no_grad or step.mode):
            armed = armed or _a_retained_later_output(g.pool[step.tensors[0]].base)
        g.apply(step)
    return False


def _a_retained_later_output(t: OTensor | None) -> bool:
    return t is not None and t.retain_node is not None and t.output_nr > 0


PATTERNS = (
    CrashPattern("register-hook-stale-view-segfault", hooks_an_unread_stale_view),
    CrashPattern(
        "retain-grad-second-output-view-write-segfault",
        writes_a_retained_later_output_through_a_view,
    ),
)


def reached(program: Program) -> tuple[str, ...]:
    """The findings of the crash patterns `program` reaches."""
    return tuple(p.finding for p in PATTERNS if p.reaches(program))
