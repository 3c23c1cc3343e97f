"""Run a program on torch and on the oracle, step by step, and compare.

After every step, for every tensor in the pool: values (within the dtype's
tolerance), shape, dtype, device, strides where torch documents them,
requires_grad, is_leaf, grad_fn, .grad, the version counter (equal, or
increased where torch may bump more than once) and the storage identity;
for every pair, whether they share storage; for every leaf, that its .grad
is the tensor it was unless the step assigned it (grad_identity). A step raises in torch if and
only if the oracle predicts an error of the same class.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch

from conformance import build, watch
from conformance.check import dense
from conformance.differential import grad_argument, grad_identity, write_checks
from conformance.differential.compare import compare_outcome, compare_pool
from conformance.differential.modes import oracle_mode, torch_mode
from conformance.differential.observe import (
    error_kind,
    storages_oracle,
    storages_torch,
)
from conformance.differential.run import BACKWARD_OPS, Discrepancy, Origin, Run
from conformance.differential.tolerated import feeding
from conformance.differential.torch_calls import compiled
from conformance.internal import suite_code
from oracle import OPS, OracleError, OTensor
from strategies.programs import Leaf, Program, Step
from strategies.tensors import leaf_tensor

# Ops after which torch documents the result's strides.
STRIDED_ORIGINS = ("leaf", "clone")


def retired_by(step: Step) -> set[int]:
    """Tensors a step hands over to torch for good.

    A tensor assigned to x.grad is x's .grad from then on: backward
    accumulates into it in place, as documented. autograd.grad's gradient
    may come back as its result.

    The gradient handed to backward stays the program's: it is read, reused
    and written like any other tensor, so that torch's AccumulateGrad taking
    it for a leaf's .grad (pytorch/pytorch#34082: later writes to it change
    .grad, a later backward writes it) is drawn, not stepped around.
    """
    if step.op in ("autograd_grad", "grad_cg"):  # (its gradient may come back as the result)
        return {step.tensors[2]}
    return {step.tensors[1]} if step.op == "set_grad" else set()


def _torch_step(run: Run, step: Step) -> tuple[object, BaseException | None]:
    if step.op == "leaf":
        leaf = step.leaf
        # inference_mode(False) is a no-op outside inference mode with grad mode
        # on, and entering it costs more than making the tensor
        switch = leaf.inference or torch.is_inference_mode_enabled() or not torch.is_grad_enabled()
        with torch.inference_mode(leaf.inference) if switch else nullcontext():
            return _made(leaf), None
    args = [run.torch_pool[i] for i in step.tensors] + list(step.params)
    try:
        if step.mode:  # enable_grad, set_grad_enabled, inference_mode (modes.py)
            with torch_mode(step.mode, step.no_grad):
                return compiled(step.op)(*args), None
        if step.no_grad and torch.is_grad_enabled():  # else grad mode stays as it is
            with torch.set_grad_enabled(False):
                return compiled(step.op)(*args), None
        return compiled(step.op)(*args), None
    except Exception as error:  # noqa: BLE001 - every torch error is an outcome to compare
        if watch.out_of_memory(error):  # not an outcome a rule speaks of: the build gave up
            raise watch.ExampleCrashed(f"torch ran out of memory: {error}") from error
        return None, error


def _made(leaf: Leaf) -> torch.Tensor:
    # the tensor leaf.source() spells and the oracle's leaf models: contiguous
    # strides, an empty one's included (torch.tensor of an empty NumPy array
    # keeps its zero strides, which view_as_complex refuses)
    return leaf_tensor(
        leaf.values, leaf.dtype, leaf.device, leaf.requires_grad, leaf.geometry(), leaf.layout
    )


def _view_write_base(run: Run, step: Step) -> tuple[torch.Tensor | None, object]:
    """For an in-place step on a view whose base requires grad, in grad mode:
    the base and its grad_fn now (held, so that identity means the same node)."""
    if step.op == "leaf" or not OPS[step.op].inplace or step.no_grad:
        return None, None
    if OPS[step.op].impl == "inplace_view":  # (a view's own node: its base's stays)
        return None, None
    if not torch.is_grad_enabled():
        return None, None
    base = run.torch_pool[step.tensors[0]]._base
    if base is None or not base.requires_grad or base.is_leaf:
        return None, None
    return base, base.grad_fn


def _oracle_step(run: Run, step: Step) -> tuple[object, OracleError | None]:
    # The model's own OracleError is its prediction that torch refuses the
    # step; anything else it raises is the suite's bug.
    with suite_code(f"running the reference model's {step.op}"):
        return _oracle_outcome(run, step)


def _oracle_outcome(run: Run, step: Step) -> tuple[object, OracleError | None]:
    engine = run.engine
    try:
        if step.op == "leaf":
            return step.leaf.made_by(engine), None
        tensors = [run.oracle_pool[i] for i in step.tensors]
        if step.no_grad or step.mode:
            with oracle_mode(engine, step):
                return engine.call(step.op, tensors, step.params), None
        return engine.call(step.op, tensors, step.params), None
    except OracleError as error:
        return None, error


def execute(program: Program, exhaustive: bool = False) -> tuple[Run, Discrepancy | None]:
    """Run `program` on torch and the oracle; return the first discrepancy.

    After each step, the tensors the step can have changed are read and
    compared: its operands and result, whatever shares storage with them on
    either side, and every tensor after a backward. After the last step,
    every tensor is. Reading every tensor after every step made chains twice
    as slow, for the same verdicts: when anything differs, the program runs
    again with every tensor compared after every step (`exhaustive`), and the
    first discrepancy of that run is the one returned, so that what is
    reported (the step, the tensors, the rule) never depends on the shortcut.
    """
    run, found = _execute(program, exhaustive)
    if found is None or exhaustive:
        return run, found
    return _execute(program, exhaustive=True)


def _execute(program: Program, exhaustive: bool) -> tuple[Run, Discrepancy | None]:
    run = Run(program, resizes=write_checks.resizes(program))
    partial = False  # the last comparison left some tensors unread
    for number, step in enumerate(program.steps):
        base, before = _view_write_base(run, step)
        watch.note(step=number)  # a crash or hang in this step leaves its number
        # the tensors leaves' .grad are
        grads = grad_identity.held(run.torch_pool, program.reads == "lazy")
        with write_checks.recording(run, step):  # out=: the resize warning
            t_result, t_error = _torch_step(run, step)
        if step.op == "backward_g":
            grad_argument.note_handed(run, step.tensors[1])
        if t_error is not None and missing_kernel(run, step, t_error) is not None:
            # not in this build: the step is skipped (and counted), the chain
            # ends, and nothing after it is compared (torch may have run part
            # of it: a backward that accumulated some gradients first)
            partial = False
            break
        if base is not None and t_error is None and base.grad_fn is before:
            run.unrecorded_view_writes.append(number)
        o_result, o_error = _oracle_step(run, step)
        refusable = run.engine.may_refuse
        if refusable is not None and t_error is not None:
            # a refusal torch may make before anything else: either outcome is
            # allowed (the model's own, an error it raises later, included), and
            # what follows differs
            if error_kind(t_error) == refusable.name:
                break
        found = compare_outcome(run, number, step, t_result, t_error, o_result, o_error)
        if found is None and (warned := write_checks.warning_differs(run, step, o_error)):
            found = Discrepancy(number, "warning", step.tensors[:1], *warned)
        if found is not None:
            return run, found
        if isinstance(o_result, OTensor) and all(o_result is not t for t in run.oracle_pool):
            run.torch_pool.append(t_result)
            run.oracle_pool.append(o_result)
            run.origins.append(
                Origin(number, step.op, step.tensors, _strides_documented(run, step))
            )
        if step.op in _ADOPTS_GEOMETRY and t_error is None:
            if _layout_unknown(run, step.tensors[1]):
                run.adopted_unknown_layout.add(step.tensors[0])
        run.retired |= retired_by(step)
        undefined = run.engine.undefined
        scope = None if exhaustive else _scope(run, step)
        partial = scope is not None
        found = compare_pool(run, number, step, bool(undefined), scope)
        if found is None and t_error is None:  # (after the values: a wrong .grad says more)
            found = grad_identity.replaced(run, number, step, grads)
        run.steps_checked += 1
        if found is not None:
            return run, found
        if undefined or (o_error is not None and step.op in BACKWARD_OPS):
            break  # the rest would depend on values or state torch leaves undefined
    if partial:
        # every tensor, each version change exact: a tensor left out of the
        # last steps' reads may have moved during any of them
        undefined = bool(run.engine.undefined)
        return run, compare_pool(run, number, step, undefined, None, exact_versions=True)
    return run, None


def _scope(run: Run, step: Step) -> list[int] | None:
    """The pool tensors `step` can have changed, or None for all of them."""
    seen = len(run.observed[0])
    if step.op in BACKWARD_OPS or not seen:
        return None  # gradients land anywhere
    count = len(run.oracle_pool)
    touched = {i for i in step.tensors if i < count} | set(range(seen, count))
    if count:
        touched.add(count - 1)
    ours = storages_oracle(run.oracle_pool)
    theirs = storages_torch(run.torch_pool)
    # a version counter can outlive its storage's sharing (t1 = t0.detach();
    # t0.data = t2: t0's writes still move t1's version)
    counters = [id(t.counter) for t in run.oracle_pool]
    shared_o = {ours[i] for i in touched}
    shared_t = {theirs[i] for i in touched}
    shared_c = {counters[i] for i in touched}
    return [
        i
        for i in range(count)
        if i in touched or ours[i] in shared_o or theirs[i] in shared_t or counters[i] in shared_c
    ]


def _operands(run: Run, tensors: tuple[int, ...]) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(run.oracle_pool[i].shape), run.oracle_pool[i].dtype) for i in tensors]


def missing_kernel(run: Run, step: Step, error: BaseException) -> build.MissingKernel | None:
    """The kernel this build lacks that made `step` raise `error`, when a
    narrow probe confirms it (conformance.build), counted; None otherwise. A
    backward step is blamed on an op of its graph whose backward is missing."""
    if step.op == "leaf" or not build.is_missing_kernel(error):
        return None
    device = str(run.torch_pool[step.tensors[0]].device) if step.tensors else "cpu"
    if step.op not in BACKWARD_OPS:
        suspects = [(step.op, step.tensors, step.params, False)]
    else:
        suspects = [
            (o.op, o.parents, run.program.steps[o.step].params, True)
            for o in (run.origins[k] for k in sorted(feeding(run, step)))
            if o.op != "leaf"
        ]
    for op, tensors, params, backward in suspects:
        operands = _operands(run, tensors)
        found = build.lacks(op, compiled(op), operands, device, params, backward)
        if found is not None:
            return found
    return None


# Ops whose result's layout torch leaves undocumented and the model does not
# follow: a gradient takes its layout from whatever computed it (a transposed
# gradient argument makes a transposed gradient through a pointwise backward).
_UNKNOWN_LAYOUT = ("autograd_grad", "grad_cg")
# ops that give t0 t1's memory and geometry: t0's layout is t1's from then on
_ADOPTS_GEOMETRY = ("set_data", "set_")


def _layout_unknown(run: Run, i: int) -> bool:
    """Whether pool tensor i was made from (or is) a tensor whose layout the model
    does not know: its own layout may follow it (TensorIterator, a view), and a
    view of it then has undocumented strides too."""
    unknown: set[int] = set(run.adopted_unknown_layout)
    for j, origin in enumerate(run.origins[: i + 1]):
        if origin.op in _UNKNOWN_LAYOUT or (
            origin.op != "leaf" and any(p in unknown for p in origin.parents)
        ):
            unknown.add(j)
    return i in unknown


def _strides_documented(run: Run, step: Step) -> bool:
    """Leaves and views have documented strides; a clone keeps a dense source's."""
    if step.op == "leaf":
        return True
    if OPS[step.op].view and step.op != "reshape":
        return not _layout_unknown(run, step.tensors[0])
    if step.op == "clone":  # (a source of unknown layout: its strides are not the model's)
        source = run.oracle_pool[step.tensors[0]]
        return dense(source.shape, source.strides) and not _layout_unknown(run, step.tensors[0])
    return False
