"""Programs as torch code: the listing in a counterexample, and the standalone
repro script a user pastes into a bug report.

Every line carries a comment that says what the step does and what the
reference model expects of it; steps that must raise are wrapped so the
script goes on past them, and the step where torch and the model disagree
ends in an assertion of what the model expected.
"""

from __future__ import annotations

import numpy as np

from conformance import build
from conformance.differential import functions, write_checks
from conformance.differential.modes import oracle_mode, wrap
from conformance.differential.torch_calls import call_source
from oracle import OPS, Engine, OracleError, OTensor
from oracle.errors import messages
from strategies.programs import Program, Step

_SAYS = {
    "clone": "a copy on new memory, in the graph of {0}",
    "detach": "shares {0}'s memory and version counter, outside the graph",
    "detach_": "detaches {0} in place: it becomes a leaf",
    "data": "shares {0}'s memory, with a version counter of its own",
    "set_data": "{0} now uses {1}'s memory",
    "copy_": "writes {1} into {0}'s own memory",
    "zeros_like": "a new tensor of zeros shaped like {0}",
    "backward": "backward from {0}: gradients accumulate into leaves' .grad",
    "backward_g": "backward from {0} with gradient {1}",
    "requires_grad_": "sets {0}.requires_grad",
    "retain_grad": "{0} will keep its .grad",
    "zero_grad": "{0}.grad = None",
    "set_grad": "{0}.grad is {1} (checked: shape, dtype, device)",
    "autograd_grad": "the gradient of {0} with respect to {1}, given {2}; no .grad changes",
    "hook_mul": "a hook on {0}'s grad_fn (a leaf: on {0}): the gradient, scaled, flows on",
    "hook_add": "a hook on {0}'s grad_fn (a leaf: on {0}): the gradient, shifted, flows on",
    "hook_none": "a hook on {0} that returns None: the gradient flows on unchanged",
    "hook_removed": "a hook on {0}, removed: it never runs",
    "post_hook_mul": "after each accumulation into {0}.grad: .grad scaled",
    "node_prehook_mul": "a pre-hook on {0}.grad_fn: the gradient that node gets, scaled",
    "node_prehook_add": "a pre-hook on {0}.grad_fn: the gradient that node gets, shifted",
    "node_prehook_none": "a pre-hook on {0}.grad_fn that returns None: nothing changes",
    "node_prehook_removed": "a pre-hook on {0}.grad_fn, removed: it never runs",
    "acc_prehook_mul": "a pre-hook on the node {0}.grad_fn passes to first: its gradient, scaled",
    "acc_prehook_add": "a pre-hook on the node {0}.grad_fn passes to first: its gradient, shifted",
    "node_hook_mul": "a hook on {0}.grad_fn: the gradients it passes on, scaled",
    "node_hook_add": "a hook on {0}.grad_fn: the gradients it passes on, shifted",
    "node_hook_none": "a hook on {0}.grad_fn that returns None: nothing changes",
    "node_hook_removed": "a hook on {0}.grad_fn, removed: it never runs",
    "grad_cg": "d{0}/d{1} given {2}, in a graph of its own (create_graph): no .grad changes",
}


def _says(step: Step, names: list[str]) -> str:
    if step.op == "leaf":
        leaf = step.leaf
        what = "a leaf that requires grad" if leaf.requires_grad else "a tensor"
        what += " made under inference_mode" if leaf.inference else ""
        return f"{what}: {leaf.dtype}{list(leaf.values.shape)}"
    spec = OPS[step.op]
    if step.op in _SAYS:
        return _SAYS[step.op].format(*names)
    if spec.view:
        return f"a view of {names[0]}"
    if spec.impl == "inplace_view":
        return f"changes {names[0]}'s own shape and strides in place (its version goes up)"
    if spec.inplace:
        return f"writes into {names[0]} in place (its version goes up)"
    return "a new tensor" + (f" (saves {', '.join(spec.saves)})" if spec.saves else "")


def _code(step: Step, names: list[str], result: str | None) -> str:
    if step.op == "leaf":
        return f"{result} = {step.leaf.source()}"
    call = call_source(step.op, names, step.params)
    return f"{result} = {call}" if result else call


class MalformedProgram(ValueError):
    """A step uses a tensor no earlier step made: a chain cut by the minimizer
    where a step it kept makes no tensor of its own any more (a reshape to
    the shape its operand now has hands back the operand itself)."""


def trace(program: Program) -> list[tuple[str | None, list[str], str | None]]:
    """For each step: the name it gives its result, its operands' names, and
    the error the oracle says it raises (or None)."""
    engine, pool, out = Engine(build.ORACLE_RELEASE), [], []
    for step in program.steps:
        names = [f"t{i}" for i in step.tensors]
        error = None
        result = None
        try:
            if step.op == "leaf":
                result = step.leaf.made_by(engine)
            else:
                if any(i >= len(pool) for i in step.tensors):
                    raise MalformedProgram(f"{step.op} uses t{max(step.tensors)} of {len(pool)}")
                tensors = [pool[i] for i in step.tensors]
                with oracle_mode(engine, step):
                    result = engine.call(step.op, tensors, step.params)
        except OracleError as e:
            error = e.kind
        new = isinstance(result, OTensor) and all(result is not t for t in pool)
        if new:
            pool.append(result)
        out.append((f"t{len(pool) - 1}" if new else None, names, error))
    return out


def step_lines(step: Step, name: str | None, names: list[str], error) -> list[str]:
    code = _code(step, names, name)
    comment = _says(step, names)
    if step.no_grad and not step.mode:
        comment += " (under no_grad)"
    if error is not None:
        said = messages(error)  # (torch words some errors otherwise in other releases)
        told = (
            f"{said[0]!r} in str(error)"
            if len(said) == 1
            else (f"any(s in str(error) for s in {said!r})")
        )
        lines = [
            "try:",
            f"    {code}  # {comment}",
            "except RuntimeError as error:",
            f"    assert {told}, error  # torch must refuse: {error.name}",
            "else:",
            f"    raise AssertionError('torch did not raise {error.name}')",
        ]
    else:
        lines = [f"{code}  # {comment}"]
    if step.mode:
        lines = wrap(step, lines)
    elif step.no_grad:
        lines = ["with torch.no_grad():"] + ["    " + line for line in lines]
    if step.op == "leaf" and step.leaf.inference:
        lines = ["with torch.inference_mode():"] + ["    " + line for line in lines]
    return lines


def listing(program: Program) -> list[str]:
    lines = functions.prelude(s.op for s in program.steps)  # custom Functions used
    for step, (name, names, error) in zip(program.steps, trace(program), strict=True):
        lines += step_lines(step, name, names, error)
    return lines


_HELPERS = """\
nan, inf = float("nan"), float("inf")  # as the expected values below spell them


def same_storage(a, b):
    return a.untyped_storage()._cdata == b.untyped_storage()._cdata


def close(tensor, expected, rtol, atol):
    actual = tensor.detach().cpu()
    if isinstance(expected, torch.Tensor):  # an empty one, whose shape a list loses
        wanted = expected.to(actual.dtype)
    else:
        wanted = torch.tensor(expected, dtype=actual.dtype)
    if actual.is_floating_point() or actual.is_complex():
        return actual.shape == wanted.shape and torch.allclose(
            actual.to(torch.complex128), wanted.to(torch.complex128), rtol=rtol, atol=atol,
            equal_nan=True)
    return torch.equal(actual, wanted)
"""


def _values(array: np.ndarray) -> str:
    array = np.asarray(array)
    if array.size == 0 and array.ndim > 1:  # [] would lose the shape (0, 2)
        return f"torch.empty({array.shape!r})"
    return repr(array.tolist())


def _checks(kind: str, tensors: tuple[int, ...], expected, tolerance) -> list[str]:
    """Assertions of what the model expected after the failing step."""
    t = [f"t{i}" for i in tensors]
    rtol, atol = tolerance
    if kind == "sharing":
        return [f"assert same_storage({t[0]}, {t[1]}) is {expected!r}"]
    if kind == "storage_moved":
        return [f"assert (storage_before != {t[0]}.untyped_storage()._cdata) is {expected!r}"]
    if kind == "values":
        return [f"assert close({t[0]}, {_values(expected)}, {rtol}, {atol}), {t[0]}"]
    if kind in ("shape", "dtype", "device"):
        attr = {"shape": "tuple({0}.shape)", "dtype": "str({0}.dtype)", "device": "{0}.device.type"}
        want = f"torch.{expected}" if kind == "dtype" else expected
        return [f"assert {attr[kind].format(t[0])} == {want!r}".replace("'torch.", "'torch.")]
    if kind == "version" and expected == "raises":  # an inference tensor: no counter
        return [
            "try:",
            f"    {t[0]}._version",
            "except RuntimeError as error:",
            "    assert 'Inference tensors do not track version counter' in str(error), error",
            "else:",
            f"    raise AssertionError('{t[0]} has a version counter')",
        ]
    if kind == "version":
        return [f"assert {t[0]}._version - version_before == {expected!r}, {t[0]}._version"]
    if kind in ("is_leaf", "has_grad_fn") and expected == "raises":  # a stale view's grad_fn
        read = f"{t[0]}.is_leaf" if kind == "is_leaf" else f"{t[0]}.grad_fn"
        return [
            "try:",
            f"    {read}",
            "except RuntimeError:",
            "    pass",
            "else:",
            f"    raise AssertionError('reading {read} did not raise')",
        ]
    if kind in ("requires_grad", "is_leaf"):
        return [f"assert {t[0]}.{kind} is {expected!r}"]
    if kind == "has_grad_fn":
        return [f"assert ({t[0]}.grad_fn is not None) is {expected!r}, {t[0]}.grad_fn"]
    if kind == "base":
        target = "None" if expected is None else f"t{expected}"
        return [f"assert {t[0]}._base is {target}"]
    if kind == "grad":
        if expected is None:
            return [f"assert {t[0]}.grad is None, {t[0]}.grad"]
        return [
            f"assert {t[0]}.grad is not None and close({t[0]}.grad, {_values(expected)}, "
            f"{rtol}, {atol}), {t[0]}.grad"
        ]
    if kind == "grad_identity":
        return [f"assert {t[0]}.grad is grad_before, 'another tensor is {t[0]}.grad'"]
    if kind == "grad_meta":
        shape, dtype, device = expected
        return [
            f"assert (tuple({t[0]}.grad.shape), str({t[0]}.grad.dtype)) == "
            f"({shape!r}, 'torch.{dtype}')"
        ]
    if kind == "strides":
        return [
            f"assert all(a == b for a, b, n in zip({t[0]}.stride(), {expected!r}, "
            f"{t[0]}.shape) if n > 1), {t[0]}.stride()"
        ]
    return []


def repro_script(
    program: Program, discrepancy, invariant: str, statement: str, tolerance: tuple[float, float]
) -> str:
    """A standalone torch script: passes on a conforming torch, fails here."""
    traced = trace(program)
    last = discrepancy.step
    lines = [
        f'"""Repro for {invariant}: {statement}',
        "",
        "Made by torch-conformance from a minimal failing chain of operations. It imports",
        "only torch. On a torch that keeps the rule it prints 'ok'; on this build the last",
        f"assertion fails: {discrepancy.message[:300]}",
        '"""',
        "import torch",
        "",
        _HELPERS,
        *functions.prelude(s.op for s in program.steps),  # custom Functions used
    ]
    for number, (step, (name, names, error)) in enumerate(zip(program.steps, traced, strict=True)):
        if number == last:
            lines.append("# torch and the reference model disagree after this step:")
            if discrepancy.kind == "version" and discrepancy.expected != "raises":
                lines.append(
                    f"version_before = t{discrepancy.tensors[0]}._version"
                    if discrepancy.tensors[0] < _pool_size(traced, number)
                    else "version_before = 0"
                )
            if discrepancy.kind == "storage_moved":
                lines.append(f"storage_before = t{discrepancy.tensors[0]}.untyped_storage()._cdata")
            if discrepancy.kind == "grad_identity":
                lines.append(f"grad_before = t{discrepancy.tensors[0]}.grad")
            if discrepancy.kind == "identity":
                code = f"result = {_code(step, names, None)}  # {_says(step, names)}"
                if step.mode:
                    code = "\n".join(wrap(step, [code]))
                elif step.no_grad:
                    code = f"with torch.no_grad():\n    {code}"
                lines.append(code)
                lines.append(f"assert result is {names[0]}, 'the in-place op did not return self'")
                break
            if discrepancy.kind == "warning":  # out=: the resize warning
                code = step_lines(step, name, names, error)
                lines += write_checks.warning_repro(code, discrepancy.expected)
                break
            if discrepancy.kind == "raise" and error is None:
                lines.append("try:")
                lines += ["    " + line for line in step_lines(step, name, names, None)]
                lines.append("except RuntimeError as error:")
                lines.append("    raise AssertionError(f'torch raised where it must not: {error}')")
                break
        lines += step_lines(step, name, names, error)
        if number == last:
            break
    if discrepancy.kind not in ("raise", "identity", "warning"):
        lines += _checks(discrepancy.kind, discrepancy.tensors, discrepancy.expected, tolerance)
    lines.append(f"print('ok: torch keeps {invariant}')")
    return "\n".join(lines) + "\n"


def _pool_size(traced, upto: int) -> int:
    return sum(1 for name, _, _ in traced[:upto] if name is not None)
