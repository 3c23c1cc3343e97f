"""Which rule a discrepancy breaks.

A discrepancy says what differs (values, sharing, a version, a raise...), on
which tensors and after which step. The rule it breaks follows from that and
from how the tensors are related: the ops along the chain of origins between
two tensors (clone, detach, .data, a view...) say which aliasing rule should
have made them share memory or a version counter, or keep them apart. When
a chain has several such ops, each link is checked on its own in torch, and
the first link that misbehaves names the rule. Failures are shrunk first, so
a minimal chain rarely leaves room for doubt.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from conformance.differential import (
    grad_argument,
    grad_identity,
    gradapi,
    inplace_view_motifs,
    write_motifs,
)
from conformance.differential.facts import Facts, relation_of
from conformance.differential.function_rules import function_rule
from conformance.differential.index_params import INDEX_WRITES
from conformance.differential.modes import GRAD_MODE_RULES
from conformance.differential.observe import RAISES
from conformance.differential.run import Discrepancy, Run
from oracle import OPS
from strategies.dtypes import GRAD_DTYPES as GRADED

# rule broken, by property and relation: a copy, a lazy view and a view as
# another dtype break their own rule whatever the property
_SAME_FOR_ALL = {
    "copy": "copy.keeps_storage",
    "conj": "view.conj_lazy",
    "resolve": "view.conj_resolve",
    "reinterpret": "view.complex_reinterprets",
    "dtype_view": "view.dtype_reinterprets",
}
BY_RELATION = {
    "storage": {
        "clone": "clone.new_storage",
        "detach": "detach.shares_storage",
        "data": "data.shares_storage",
        "set_data": "data.shares_storage",
        "view": "view.shares_storage_and_version",
        "op": "ops.out_of_place_new_tensor",
        **_SAME_FOR_ALL,
    },
    "version": {
        "clone": "clone.own_version",
        "detach": "detach.shares_version",
        "data": "data.own_version",
        "set_data": "data.own_version",
        "view": "view.shares_storage_and_version",
        "op": "version.unchanged_out_of_place",
        **_SAME_FOR_ALL,
    },
    "write": {
        "clone": "clone.write_isolated",
        "detach": "detach.write_visible",
        "data": "data.shares_storage",
        "set_data": "data.shares_storage",
        "view": "view.write_visible",
        "op": "ops.out_of_place_new_tensor",
        **_SAME_FOR_ALL,
    },
}

RAISED = {
    "INPLACE_ON_LEAF_VIEW": "leaf.view_inplace_raises",
    "NO_GRAD_VIEW_INPLACE": "nograd.view_inplace_raises",
    "BACKWARD_TWICE": "grad.backward_twice_raises",
    "DTYPE_CANNOT_REQUIRE_GRAD": "dtype.only_float_complex_require_grad",
    "NONSCALAR_BACKWARD": "grad.nonscalar_needs_gradient",
    "GRAD_SHAPE_MISMATCH": "grad.nonscalar_needs_gradient",
    "OVERLAPPING_WRITE": "view.overlapping_write_raises",
    "PARTIAL_OVERLAP": "view.overlapping_write_raises",
    "NOT_BROADCASTABLE": "ops.shape_errors",
    "SHAPE_MISMATCH": "ops.shape_errors",
    "VIEW_INCOMPATIBLE": "ops.shape_errors",
    "INVALID_SHAPE": "ops.shape_errors",
    "INDEX_OUT_OF_RANGE": "ops.shape_errors",
    "NONLEAF_REQUIRES_GRAD": "grad.requires_grad_flag_on_leaves",
    "DETACH_VIEW_INPLACE": "detach.inplace_makes_leaf",
    "SAVED_TENSOR_DETACHED": "detach.inplace_saved_input_raises",
    "RETAIN_GRAD_NO_GRAD": "grad.retain_grad",
    "LEAF_MOVED": "leaf.inplace_raises",
    "INFERENCE_SAVED": "inference.not_saved_for_backward",
    "INFERENCE_REQUIRES_GRAD": "inference.not_saved_for_backward",
    "INFERENCE_VERSION": "inference.no_version_counter",
    "INFERENCE_INPLACE": "inference.inplace_outside_raises",
    "INFERENCE_VIEW_INPLACE": "inference.view_inplace_raises",
    "MULTI_OUTPUT_VIEW_INPLACE": "view.multi_output_inplace_raises",
    "INPUT_NO_GRAD": "grad.autograd_grad_returns",
    "UNUSED_INPUT": "grad.autograd_grad_returns",
    "CUSTOM_FUNCTION_VIEW": "function.view_output",
    "GRAD_ASSIGN_MISMATCH": "grad.assign_checks",
    "MUTABLE_LIST_BIT": "foreach.inplace_grad",
    "UNRESOLVED_CONJ": "view.complex_reinterprets",
    "NOT_COMPLEX": "view.complex_reinterprets",
    "COMPLEX_LAYOUT": "view.complex_reinterprets",
    "DTYPE_VIEW_LAYOUT": "view.dtype_reinterprets",
    "HOOK_NO_GRAD": "grad.hook_replaces_gradient",
    "POST_HOOK_NON_LEAF": "grad.post_accumulate_hook",
    "NO_NODE": "grad.node_prehook_replaces_grad_outputs",
}


# discrepancies that a write through a view, left out of the base's history,
# explains
_HISTORY_KINDS = ("raise", "grad", "requires_grad", "has_grad_fn", "is_leaf")


def attribute(run: Run, d: Discrepancy) -> str:
    f = Facts(run, d)
    kind = d.kind
    if kind == grad_identity.KIND:  # torch's side alone: nothing else explains it
        return grad_identity.RULE
    if f.step.mode in GRAD_MODE_RULES and _mode_at_fault(f):  # grad modes (modes.py)
        return GRAD_MODE_RULES[f.step.mode]
    if kind == "raise" and d.expected == "INFERENCE_VIEW_INPLACE":  # (before the history)
        return "inference.view_inplace_raises"
    if (rule := _unsafe_split_rule(f)) is not None:  # pieces that are no views
        return rule
    rule = function_rule(f)  # custom Functions and saved-tensor hooks: narrower, first
    if rule is not None:
        return rule
    if (aliased := grad_argument.rule(run, d)) is not None:  # pytorch/pytorch#34082
        return aliased
    if (detached := _after_detach_(f)) is not None:
        return detached
    if (written := write_motifs.rule(f)) is not None:  # out=, resize_, set_, _foreach_
        return written
    if (changed := inplace_view_motifs.rule(f)) is not None:  # transpose_, t_...
        return changed
    if kind in _HISTORY_KINDS and any(n <= d.step for n in run.unrecorded_view_writes):
        return "view.inplace_updates_base_grad"
    if (rule := gradapi.attribute(f)) is not None:  # hooks, retain_grad: before the rest
        return rule
    if kind == "raise":
        return _raise(f)
    if kind == "identity":
        if f.step.op in INDEX_WRITES:
            return "index.writes_in_place"
        return "copy.values_copied" if f.step.op == "copy_" else "ops.inplace_writes_self"
    if kind == "storage_moved":
        if f.step.op == "copy_":
            return "copy.keeps_storage"
        return "data.shares_storage" if f.step.op == "set_data" else "ops.inplace_writes_self"
    if kind == "sharing":
        return BY_RELATION["storage"][f.relation(*d.tensors, "storage")]
    if kind in ("values", "shape", "dtype", "device"):
        return _values(f, d.tensors[0])
    if kind == "version":
        return _version(f, d.tensors[0])
    if kind in ("requires_grad", "is_leaf", "has_grad_fn"):
        return _autograd_flags(f, d.tensors[0])
    if kind == "base":
        op = f.origins[d.tensors[0]].op
        if op in OWN_RULE:  # conj(), view_as_real()...: an alias of the wrong kind
            return OWN_RULE[op]
        return "detach.never_requires_grad" if op == "detach" else ("view.base_is_root")
    if kind == "strides":
        return (
            "clone.preserves_strides"
            if f.origins[d.tensors[0]].op == "clone"
            else ("view.shares_storage_and_version")
        )
    if kind == "grad_meta":
        return "grad.matches_leaf"
    if kind == "grad":
        return _grad(f, d.tensors[0])
    return "ops.values"


# ops whose results only their own rule speaks of
OWN_RULE = {
    "conj": "view.conj_lazy",
    "neg_view": "view.conj_lazy",
    "resolve_conj": "view.conj_resolve",
    "resolve_neg": "view.conj_resolve",
    "view_as_real": "view.complex_reinterprets",
    "view_as_complex": "view.complex_reinterprets",
    "real": "view.complex_reinterprets",
    "imag": "view.complex_reinterprets",
    "view_dtype": "view.dtype_reinterprets",
}

MULTI_OUTPUT_OPS = tuple(name for name, spec in OPS.items() if spec.multi_output)
UNSAFE_SPLITS = tuple(name for name, spec in OPS.items() if spec.impl == "unsafe_split")


def _unsafe_split_rule(f: Facts) -> str | None:
    """A piece of unsafe_split and co. that is a view where it should be none, shares
    a version counter with what shares its memory, or refuses an in-place write as
    a multi-output view: the rule that these are no views."""
    d, pool = f.d, f.run.oracle_pool
    pieces = [i for i, o in enumerate(f.origins[: len(pool)]) if o.op in UNSAFE_SPLITS]
    if not pieces:
        return None
    if d.kind == "raise" and "MULTI_OUTPUT_VIEW_INPLACE" in (d.expected, d.actual):
        return "ops.unsafe_split_outputs_writable" if f.step.tensors[0] in pieces else None
    if f.step.op == "resize_":  # a version a resize_ left as it was: resize's own rule
        return None
    shared = {id(pool[i].storage) for i in pieces}
    if d.kind in ("base", "version", "sharing") and any(
        i < len(pool) and id(pool[i].storage) in shared for i in d.tensors
    ):
        return "ops.unsafe_split_outputs_writable"
    return None


def _multi_output_rule(f: Facts) -> str:
    """An in-place op on a multi-output view is refused as such; any other use of
    one whose base was written fails when its grad_fn is regenerated."""
    op = f.step.op
    if op != "leaf" and OPS[op].inplace and f.run.oracle_pool[f.step.tensors[0]].multi_output:
        return "view.multi_output_inplace_raises"
    return "view.multi_output_base_written_raises"


def _after_detach_(f: Facts) -> str | None:
    """torch's internal asserts after x.detach_() (docs/findings.md): an
    in-place op on a detached tensor that had called retain_grad() ("old_fn
    INTERNAL ASSERT"), and the flags of a conj / neg / other-dtype view of a
    detached base, read after a write ("new_fn INTERNAL ASSERT")."""
    detached = {s.tensors[0] for s in f.steps[: f.d.step] if s.op == "detach_"}
    if not detached:
        return None
    d = f.d
    if d.kind == "raise" and "INTERNAL ASSERT" in d.message:
        return "detach.inplace_makes_leaf"
    flags = ("is_leaf", "requires_grad", "has_grad_fn")
    if d.kind in flags and RAISES in (d.expected, d.actual):
        roots = {f.chain(i)[-1] for i in detached} | detached
        if set(f.chain(d.tensors[0])) & roots:
            return "detach.inplace_makes_leaf"
    return None


def _raise(f: Facts) -> str:
    expected, actual, op = f.d.expected, f.d.actual, f.step.op
    if "MULTI_OUTPUT_VIEW_INPLACE" in (expected, actual):
        return _multi_output_rule(f)
    if "SAVED_TENSOR_DETACHED" in (expected, actual):  # checked before the version
        return "detach.inplace_saved_input_raises"
    if expected is not None:
        if expected == "INPLACE_ON_LEAF":
            return "copy.into_grad_leaf_raises" if op == "copy_" else "leaf.inplace_raises"
        if expected == "SAVED_TENSOR_MODIFIED":
            if f.writes_through("detach") and not _fails_writing_directly(f):
                return "detach.write_then_backward_raises"
            return "version.saved_modified_raises"
        if expected == "NO_GRAD_FN":
            root = f.step.tensors[0]
            return (
                "detach.blocks_gradient"
                if f.via(root, ("detach", "data"))
                else ("grad.requires_graph")
            )
        return RAISED.get(expected, "ops.values")
    if actual == "SAVED_TENSOR_MODIFIED":
        return "data.write_is_silent" if f.writes_through("data") else "version.unsaved_modified_ok"
    if actual in ("INPLACE_ON_LEAF", "INPLACE_ON_LEAF_VIEW") and f.step.no_grad:
        return "nograd.inplace_on_leaf_allowed"
    if actual in ("INPLACE_ON_LEAF", "INPLACE_ON_LEAF_VIEW") and f.written() is not None:
        # written through an alias that should stand outside the graph
        kinds = {f.origins[k].op for k in f.chain(f.written())}
        if "detach" in kinds:
            return "detach.blocks_gradient"
        if "data" in kinds:
            return "data.never_requires_grad"
    if actual in RAISED and actual not in ("NOT_BROADCASTABLE", "SHAPE_MISMATCH"):
        return RAISED[actual]
    if op in ("backward", "backward_g"):
        return "grad.formula"
    if op == "copy_":
        return "copy.values_copied"
    if op == "clone":
        return "clone.same_values"
    if op != "leaf" and OPS[op].view:
        return "view.shares_storage_and_version"
    return "ops.values"


def _fails_writing_directly(f: Facts) -> bool:
    """Whether torch still misses the modified saved tensor when every write
    through a detach() alias is made instead on the alias's source, under
    no_grad: the same memory and version counter, with no alias in between.
    If it does, the saved-tensor check is at fault, not detach."""
    steps = list(f.steps[: f.d.step + 1])
    for number, step in enumerate(steps):
        target = f._writes(step)
        if target is None or not any(f.origins[k].op == "detach" for k in f.chain(target)):
            continue
        if f.origins[target].op != "detach":
            return False  # through a view of the alias: no direct equivalent, so no verdict
        source = f.origins[target].parents[0]
        steps[number] = replace(step, tensors=(source, *step.tensors[1:]), no_grad=True)
    return f.fails_again(steps)


def _fails_in_grad_mode(f: Facts) -> bool:
    """Whether the failing step, a no_grad one, fails the same way in grad
    mode: if so, the fault is not no_grad's."""
    steps = list(f.steps[: f.d.step + 1])
    steps[-1] = replace(steps[-1], no_grad=False)
    return f.fails_again(steps)


def _mode_at_fault(f: Facts) -> bool:
    """Whether the failing step, run in a grad mode set by enable_grad or
    set_grad_enabled, passes once it runs under plain no_grad or grad mode."""
    steps = list(f.steps[: f.d.step + 1])
    steps[-1] = replace(steps[-1], mode="")
    return not f.fails_again(steps)


def _values(f: Facts, i: int) -> str:
    op = f.origins[i].op
    if f.new_result(i):
        return (
            {
                "autograd_grad": "grad.autograd_grad_returns",
                "clone": "clone.same_values",
                "detach": "detach.write_visible",
                "data": "data.shares_storage",
            }
            | OWN_RULE
        ).get(op, "view.write_visible" if relation_of(op) == "view" else "ops.values")
    target = f.written()
    if target is None:
        return "ops.out_of_place_new_tensor"
    if target == i:
        if f.step.op in INDEX_WRITES:
            return "index.writes_in_place"
        return {"copy_": "copy.values_copied", "set_data": "data.shares_storage"}.get(
            f.step.op, "ops.values"
        )
    return BY_RELATION["write"][f.relation(i, target, "write")]


def _version(f: Facts, i: int) -> str:
    if RAISES in (f.d.expected, f.d.actual):  # one side has a counter, the other none
        return "inference.no_version_counter"
    target = f.written()
    if target is None:
        return "version.unchanged_out_of_place"
    if target == i:
        origin = f.origins[i]
        kinds = ("view", "detach", "conj", "reinterpret", "dtype_view")
        if origin.parents and relation_of(origin.op) in kinds:
            parent = origin.parents[0]
            if f._link_misbehaves(i, parent, "version"):  # the alias's counter is its own
                return BY_RELATION["version"][relation_of(origin.op)]
        if f.step.no_grad and not _fails_in_grad_mode(f):
            return "version.no_grad_bumps"
        return "version.bumps_on_inplace"
    return BY_RELATION["version"][f.relation(i, target, "version")]


def _autograd_flags(f: Facts, i: int) -> str:
    op = f.step.op
    ours, theirs = f.run.observed[0][i], f.run.observed[1][i]
    seen = (getattr(ours, f.d.kind), getattr(theirs, f.d.kind))
    if RAISES in seen and f.via(i, MULTI_OUTPUT_OPS):  # a stale multi-output view's grad_fn
        return "view.multi_output_base_written_raises"
    if theirs.requires_grad and theirs.dtype not in GRADED:
        return (
            "dtype.inplace_keeps_int_out_of_graph"
            if f.written() == i
            else "dtype.only_float_complex_require_grad"
        )
    if f.new_result(i):
        special = {
            "clone": "clone.result_in_graph",
            "detach": "detach.never_requires_grad",
            "data": "data.never_requires_grad",
        } | OWN_RULE
        if op in special:
            return special[op]
        if f.step.no_grad:
            return "nograd.results_dont_require_grad"
        if f.via(i, ("detach", "data")):
            return "detach.blocks_gradient"
        return "grad.requires_grad_propagates"
    target = f.written()
    if target == i:
        if op == "copy_":
            return "copy.result_in_graph"
        if op == "detach_":
            return "detach.inplace_makes_leaf"
        if op == "requires_grad_":
            return "dtype.only_float_complex_require_grad"
        if f.step.no_grad:
            return "nograd.inplace_on_leaf_allowed"
        return "grad.requires_grad_propagates"
    if op == "requires_grad_":
        return "dtype.only_float_complex_require_grad"
    if target is not None:
        return "view.inplace_updates_base_grad"
    return "grad.requires_grad_propagates"


def _made_by(f: Facts, step: int) -> int | None:
    """The pool index of the tensor a step made, or what it wrote into."""
    for index, origin in enumerate(f.origins):
        if origin.step == step:
            return index
    return f._writes(f.steps[step])


def _grad(f: Facts, i: int) -> str:
    run, d = f.run, f.d
    before_o = run.previous[0]
    ours, theirs = run.observed[0][i], run.observed[1][i]
    is_leaf = f.is_leaf(i)
    if f.step.op == "autograd_grad":  # a .grad that torch.autograd.grad changed
        return "grad.autograd_grad_returns"
    if f.step.op == "set_grad":
        return "grad.assign_checks"
    if theirs.grad is RAISES:
        return "grad.matches_leaf" if is_leaf is True else "grad.leaves_only"
    if ours.grad is None and theirs.grad is not None:
        if is_leaf is False:
            return "grad.leaves_only"
        return (
            "detach.blocks_gradient"
            if f.via(f.step.tensors[0], ("detach", "data"))
            else ("grad.formula")
        )
    if ours.grad is not None and theirs.grad is None and is_leaf is False:
        return "grad.retain_grad"
    if theirs.grad is None and i < len(before_o) and before_o[i].grad is not None:
        return "grad.accumulates_across_backward"  # a .grad that a backward call dropped
    if i < len(before_o) and before_o[i].grad is not None:
        increment = ours.grad - before_o[i].grad
        if theirs.grad is not None and np.allclose(theirs.grad, increment, equal_nan=True):
            return "grad.accumulates_across_backward"
    if any(s.op in INDEX_WRITES for s in f.steps[: d.step]):
        return "index.grad_to_source"
    copies = [(n, s) for n, s in enumerate(f.steps[: d.step]) if s.op == "copy_"]
    if copies:
        # a leaf behind the values copy_ overwrote (what made them, and what
        # was written into them before) must get nothing from them
        overwritten = set().union(
            *(f.ancestry(s.tensors[0], grad_only=True, upto=n) for n, s in copies)
        )
        return "copy.overwritten_gets_no_grad" if i in overwritten else "copy.grad_flows_to_src"
    if any(s.op == "clone" for s in f.steps[: d.step]):
        return "clone.grad_flows_to_source"
    if f.writes_through("data"):
        return "data.write_changes_gradient"
    for step in f.steps[: d.step]:
        target = f._writes(step)
        if target is not None and run.oracle_pool[target].is_view:
            return "view.inplace_updates_base_grad"
    # several uses of the leaf on the way to what backward started from
    root = f.step.tensors[0]
    feeding = f.ancestry(root)
    uses = sum(
        s.tensors.count(i)
        for n, s in enumerate(f.steps[: d.step])
        if s.op != "leaf" and _made_by(f, n) in feeding
    )
    if uses > 1:
        return "grad.accumulates_across_paths"
    return "grad.formula"
