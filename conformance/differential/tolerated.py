"""How far torch's values and gradients may be from the model's: per dtype
(oracle.tolerances), widened where a step sums terms, where float memory
holds complex parts, and for a gradient by the magnitudes and divisors on
the path it was computed through."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from conformance.check import close
from conformance.differential.observe import Observed
from conformance.differential.run import BACKWARD_OPS, Run
from conformance.internal import suite_code
from oracle import OPS, OTensor, tolerance
from oracle.ops import OpSpec
from oracle.tolerances import EPS, part_atol, summed_atol
from strategies.dtypes import LARGEST_FINITE

if TYPE_CHECKING:
    from strategies.programs import Step


def value_tolerance(run: Run, step: Step, number: int, i: int, dtype: str) -> tuple:
    """(rtol, atol) for pool tensor i's values after step `number`
    (oracle.tolerances): a result cast into another dtype takes the coarser
    tolerance of the two, in every tensor of its memory; this step's sum of
    terms, and a float part of complex memory, an absolute part besides."""
    tensor = run.oracle_pool[i]
    # an out= cast written through a view lands in its base too
    computed = {t.computed_in for t in run.oracle_pool if t.storage is tensor.storage}
    rtol, atol = max([tolerance(dtype), *(tolerance(c) for c in computed if c)])
    spec = OPS.get(step.op)
    if spec is not None and spec.sums and _summed_into(run, spec, step, number, i):
        # (an in-place sum's self is read after the write: at most twice its terms)
        operands = [np.abs(run.oracle_pool[k].values()) for k in step.tensors[: spec.arity]]
        with suite_code(f"the magnitude of {step.op}'s terms"):
            terms = np.abs(spec.fwd(operands, tuple(step.params), dtype))
        terms = np.atleast_1d(terms)  # (a 0-d sum's nan too: no nan atol)
        finite = terms[np.isfinite(terms)]
        atol += summed_atol(dtype, float(finite.max())) if finite.size else 0.0
    if dtype in PART_OF and _read_as_complex(run, tensor):
        buf = tensor.storage.buf
        parts = np.abs(buf[np.isfinite(buf)])
        # (|z| is at most twice its largest part; a complex buffer gives |z| itself)
        largest = float(parts.max()) * (1 if buf.dtype.kind == "c" else 2) if parts.size else 0.0
        atol += part_atol(PART_OF[dtype], largest)
    return rtol, atol


def _summed_into(run: Run, spec: OpSpec, step: Step, number: int, i: int) -> bool:
    """Whether pool tensor i holds this step's sums: its result, or for an
    in-place sum (index_add_), any tensor of the memory it wrote."""
    if spec.inplace:
        return run.oracle_pool[i].storage is run.oracle_pool[step.tensors[0]].storage
    return run.origins[i].step == number


def _read_as_complex(run: Run, tensor: OTensor) -> bool:
    """Whether the tensor's memory holds complex numbers (x.real of a complex
    x) or is read as such (x of torch.view_as_complex(x)): a complex op may
    have written its parts."""
    storage = tensor.storage
    if storage.buf.dtype.kind == "c":
        return True
    return any(t.storage is storage and t.dtype in COMPLEX for t in run.oracle_pool)


# The complex dtype whose parts a float dtype is.
PART_OF = {"float32": "complex64", "float64": "complex128"}
COMPLEX = frozenset(PART_OF.values())


# Machine epsilon (twice the unit roundoff) per floating dtype. Gradient
# formulas fuse several operations that torch rounds one by one in the dtypes
# along the path (float16 backward runs in float16), where the model rounds
# once: a gradient that cancels (x * c / x) keeps a residue of a few units of
# the size of its terms, not of its result, and a float64 leaf fed through a
# bfloat16 copy carries bfloat16 errors.
UNIT = EPS  # (2**(1 - precision): twice the unit roundoff)
_SCALE_CAP = 1e3  # beyond that, overflowing chains: their gradients are compared at the cap


def feeding(run: Run, step: Step) -> set[int]:
    """The pool tensors a backward from `step`'s first operand computes through:
    its origins' operands, and whatever was written into them in place."""
    if step.op not in BACKWARD_OPS:
        return set()
    writes: dict[int, list[int]] = {}
    for earlier in run.program.steps:
        if earlier is step:
            break
        if earlier.op != "leaf" and (OPS[earlier.op].inplace or earlier.op == "set_data"):
            writes.setdefault(earlier.tensors[0], []).extend(earlier.tensors[1:])
    seen, stack = set(), [step.tensors[0]]
    while stack:
        j = stack.pop()
        if j in seen or j >= len(run.origins):
            continue
        seen.add(j)
        stack.extend(run.origins[j].parents)
        stack.extend(writes.get(j, ()))
    return seen


def grad_tolerance(
    dtype: str, pool: list[Observed], divisors: Iterable[np.ndarray] = ()
) -> tuple[float, float]:
    """(rtol, atol) for a gradient: the tolerance of the least precise floating
    dtype on its path (`pool`: the tensors it was computed through), with an
    absolute part of a few units of the size of the gradient's terms.

    A term is a product of values and gradients, bounded by the square of
    the largest magnitude on the path; where the path divides (`divisors`:
    what div, log, sqrt and pow with an exponent below 1 divide by), also by
    the reciprocal of the smallest nonzero divisor. `x / x` at x = 0.0067 in
    float32 has terms of 558 that cancel to a residue of 6e-5, not to 0."""
    floating = [o.dtype for o in pool if o.dtype in UNIT] + [dtype]
    coarsest = max((d for d in floating if d in UNIT), key=lambda d: UNIT[d], default=dtype)
    rtol, atol = tolerance(coarsest if coarsest in UNIT else dtype)
    if coarsest not in UNIT:
        return rtol, atol
    largest = max(1.0, _largest_magnitude(pool))
    smallest = 1.0
    for divisor in divisors:
        magnitude = np.abs(divisor[np.isfinite(divisor)])
        nonzero = magnitude[magnitude > 0]
        if nonzero.size:
            smallest = min(smallest, float(nonzero.min()))
    terms = min(largest * largest / smallest, _SCALE_CAP * _SCALE_CAP)
    return rtol, atol + 8 * UNIT[coarsest] * terms


def parts_atol(dtype: str, grad: np.ndarray, path: list[Observed]) -> float:
    """The absolute part for a float gradient computed through complex tensors
    on its path (view_as_complex's input gets view_as_real of a complex
    gradient): each element is a part of a complex number, exact to that
    number, not to the part (as value_tolerance's float part of complex
    memory). 0 where no complex tensor is on the path."""
    if dtype not in PART_OF or not any(o.dtype in COMPLEX for o in path):
        return 0.0
    finite = np.abs(grad[np.isfinite(grad)])
    # (|z| is at most twice its largest part)
    return part_atol(PART_OF[dtype], 2 * float(finite.max())) if finite.size else 0.0


def cancelled_atol(run: Run, step: Step, i: int, fed: set[int]) -> np.ndarray | None:
    """Per element, the absolute part for t{i}'s gradient that the backward
    formulas which cancel (OpSpec.grad_terms: tanh's 1 - r * r) add where
    they read t{i} itself: a few units of the terms they summed, which the
    oracle recorded. grad_tolerance's bound is one number for the whole
    path, capped where the path's magnitudes overflow; theirs is taken
    where each element's terms are."""
    shape = run.oracle_pool[i].shape
    atol: np.ndarray | None = None
    for k in fed:
        number, steps = run.origins[k].step, run.program.steps
        earlier = steps[number] if 0 <= number < len(steps) else None
        if earlier is None or earlier is step or earlier.tensors[:1] != (i,):
            continue
        spec = OPS.get(earlier.op)
        node = run.oracle_pool[k]._fn
        if spec is None or spec.grad_terms is None or spec.inplace or node is None:
            continue
        terms = getattr(node, "terms", None)
        if node.name != earlier.op or terms is None or terms.shape != shape:
            continue  # (rebased by a later write, or not run by this backward)
        unit = UNIT.get(run.oracle_pool[k].dtype, 0.0)
        added = 8 * unit * np.where(np.isfinite(terms), terms, 0.0)
        atol = added if atol is None else atol + added
    return atol


def accumulated_atol(prior: object, grad: np.ndarray, dtype: str) -> np.ndarray | None:
    """The absolute part a gradient accumulated into an old .grad (`prior`)
    adds: where the two cancel (backward with g, then with -g), a few units
    of |old .grad| are left."""
    if isinstance(prior, np.ndarray) and prior.shape == grad.shape and dtype in UNIT:
        return 8 * UNIT[dtype] * np.where(np.isfinite(prior), np.abs(prior), 0.0)
    return None


def _largest_magnitude(pool: list[Observed]) -> float:
    """The largest finite magnitude among the floating values and gradients of `pool`."""
    largest = 0.0
    for seen in pool:
        for array in (seen.values, seen.grad):
            if array is not None and array.size and array.dtype.kind in "fc":
                finite = np.abs(array[np.isfinite(array)])
                if finite.size:
                    largest = max(largest, float(finite.max()))
    return largest


def overflow_excuses(actual, expected, dtype: str, tolerated, path: list[Observed]) -> bool:
    """Whether torch's gradient differs only where it is not finite, on a path
    whose terms can overflow its narrowest dtype. torch computes float16
    gradients in float16: 3 * x**2 * g at x = 421.875 is inf there, and nan
    where g is 0, while the model, computing in float64, rounds 0 once."""
    floating = [o.dtype for o in path if o.dtype in LARGEST_FINITE] + [dtype]
    narrowest = min((LARGEST_FINITE[d] for d in floating if d in LARGEST_FINITE), default=None)
    if narrowest is None:
        return False
    largest = _largest_magnitude(path)
    if largest * largest <= narrowest:
        return False
    finite = np.isfinite(actual)
    rtol, atol = tolerated
    if np.ndim(atol):
        atol = np.broadcast_to(atol, np.shape(actual))[finite]
    return not finite.all() and close(actual[finite], expected[finite], dtype, (rtol, atol))


def divisors_on_path(run: Run, step: Step, fed: set[int], ours: list[Observed]) -> list:
    """What the gradient formulas on the path divide by: for each step
    before `step` that reads a tensor of `fed` and divides in its backward
    (div: by the divisor; log: by x; sqrt: by sqrt(x); pow(x, p < 1): by x)."""
    found: list[np.ndarray] = []
    for earlier in run.program.steps:
        if earlier is step:
            break
        if earlier.op not in _QUOTIENTS or not fed.intersection(earlier.tensors):
            continue
        operands = [ours[i].values for i in earlier.tensors if i < len(ours)]
        if earlier.op in ("div", "div_") and len(operands) == 2:
            found.append(operands[1])
        elif earlier.op in ("div_s", "div_s_"):
            found.append(np.asarray([earlier.params[0]], dtype=np.complex128))
        elif earlier.op == "sqrt" and operands:
            found.append(np.sqrt(np.abs(operands[0])))
        elif earlier.op == "log" and operands:
            found.append(operands[0])
        elif earlier.op == "pow_s" and operands and np.real(earlier.params[0]) < 1:
            found.append(operands[0])
    return found


_QUOTIENTS = ("div", "div_", "div_s", "div_s_", "sqrt", "log", "pow_s")
