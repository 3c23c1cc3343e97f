"""The checks, one per annotation rule, on one recorded call.

Each returns the violations it saw as `Finding`s that name a `schema.*`
invariant of the catalogue. What the README's rules say, and where this
suite reads them strictly, is in docs/schema.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from conformance.schema.recorder import Call, TensorState, storage_of
from conformance.schema.signature import Return

ALIAS = "schema.alias_shares_storage"
FRESH = "schema.fresh_output"
UNCHANGED = "schema.input_unchanged"
BUMPED = "schema.mutable_bumps_version"
OUT = "schema.out_returns_out"
INPLACE = "schema.inplace_returns_self"
RULES = (ALIAS, FRESH, UNCHANGED, BUMPED, OUT, INPLACE)

# Operators whose schemas knowingly under-state aliasing: their results are
# views although no annotation says so. The rule is not checked for them.
EXEMPT: dict[tuple[str, str], str] = {
    (op, FRESH): "its schema knowingly omits the alias annotation: 'aten::_unsafe_view is "
    "intended to have incorrect aliasing notation (hence unsafe)' "
    "(torch/_subclasses/schema_check_mode.py); the unsafe_* ops return views unannotated "
    "so that autograd does not track them (native_functions.yaml)"
    for op in (
        "aten::_unsafe_view",
        "aten::unsafe_split.Tensor",
        "aten::unsafe_split_with_sizes",
        "aten::unsafe_chunk",
    )
}


@dataclass(frozen=True)
class Finding:
    invariant: str
    op: str
    message: str
    recorded: bool = False  # seen under the dispatch mode (a kernel's own result)


def _unchanged(call: Call) -> list[Finding]:
    written = {
        s.storage for p in call.signature.params if p.write for s in call.before.get(p.name, [])
    }
    found = []
    for p in call.signature.params:
        if p.write or not p.holds_tensors:
            continue
        for i, (before, after) in enumerate(
            zip(call.before.get(p.name, []), call.after.get(p.name, []), strict=False)
        ):
            if before.storage in written:
                continue  # the schema lets the op write it through the mutable alias
            changes = before.differences(after)
            if changes:
                where = p.name if len(call.before[p.name]) == 1 else f"{p.name}[{i}]"
                found.append(
                    Finding(
                        UNCHANGED,
                        call.op,
                        f"{call.op} changed `{where}`, which its schema does not mark "
                        f"mutable: {', '.join(changes)}",
                    )
                )
    return found


def _bumped(call: Call) -> list[Finding]:
    """Only meaningful where ADInplaceOrView ran: a call the sweep made itself."""
    found = []
    for p in call.signature.params:
        if not p.write:
            continue
        for before, after in zip(
            call.before.get(p.name, []), call.after.get(p.name, []), strict=False
        ):
            changes = [c for c in before.differences(after) if not c.startswith("version")]
            if changes and after.version <= before.version:
                found.append(
                    Finding(
                        BUMPED,
                        call.op,
                        f"{call.op} wrote `{p.name}` ({', '.join(changes)}) without bumping "
                        f"its version counter ({before.version} -> {after.version})",
                    )
                )
    return found


def _written_return(call: Call, j: int, ret: Return, outputs: list[torch.Tensor]) -> list[Finding]:
    sources = [p for p in call.signature.params_in(ret.alias) if p.write]
    if not sources or not outputs:
        return []
    rule = OUT if any(p.is_out for p in sources) else INPLACE
    candidates = [call.arguments.get(p.name) for p in sources]
    allowed = [t for c in candidates for t in (c if isinstance(c, list | tuple) else [c])]
    found = []
    for out in outputs:
        if not any(out is t for t in allowed if isinstance(t, torch.Tensor)):
            names = ", ".join(f"`{p.name}`" for p in sources)
            shared = any(
                isinstance(t, torch.Tensor) and storage_of(t) == storage_of(out) for t in allowed
            )
            found.append(
                Finding(
                    rule,
                    call.op,
                    f"{call.op} returned another tensor than {names} for return {j} "
                    f"(annotated Tensor({ret.alias}!)): "
                    + ("a view on the same memory" if shared else "on other memory"),
                )
            )
    return found


def _alias_return(call: Call, j: int, ret: Return, outputs: list[torch.Tensor]) -> list[Finding]:
    if len(ret.alias_sets) > 1:
        return []  # Tensor(b|a): a fresh tensor (set b) or an alias of a, as the call decides
    sources = call.signature.params_in(ret.alias)
    storages = {s.storage for p in sources for s in call.before.get(p.name, [])}
    if not storages:
        return []  # the aliased argument was None
    found = []
    for k, out in enumerate(outputs):
        if storage_of(out) not in storages:
            names = ", ".join(f"`{p.name}`" for p in sources)
            where = f"return {j}" + (f"[{k}]" if len(outputs) > 1 else "")
            found.append(
                Finding(
                    ALIAS,
                    call.op,
                    f"{call.op}'s {where} is annotated Tensor({ret.alias}), an alias of {names}, "
                    "but is on other memory (a copy)",
                )
            )
    return found


def _fresh_return(call: Call, j: int, outputs: list[torch.Tensor]) -> list[Finding]:
    if (call.op, FRESH) in EXEMPT:
        return []
    inputs = {s.storage: name for name, states in call.before.items() for s in states}
    found = []
    for k, out in enumerate(outputs):
        shared = inputs.get(storage_of(out))
        if shared is not None:
            same = any(out is t for t in _tensors(call.arguments.get(shared)))
            where = f"return {j}" + (f"[{k}]" if len(outputs) > 1 else "")
            found.append(
                Finding(
                    FRESH,
                    call.op,
                    f"{call.op}'s {where} has no alias annotation but "
                    + (f"is `{shared}` itself" if same else f"shares `{shared}`'s storage"),
                )
            )
    return found


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def check_call(call: Call, *, composite: bool = False, versions: bool = False) -> list[Finding]:
    """Every rule on one call. `composite`: a CompositeImplicitAutograd
    operator seen from above, whose result annotations only say what *may*
    alias (its decomposition is what reaches the dispatcher, and is checked
    call by call); `versions`: the call went through ADInplaceOrView, so
    written inputs must have been bumped."""
    if call.error:
        return []
    found = _unchanged(call)
    if versions:
        found += _bumped(call)
    for j, ret in enumerate(call.signature.returns):
        outputs = call.outputs[j] if j < len(call.outputs) else []
        if not ret.holds_tensors:
            continue
        if ret.alias and ret.write:
            found += _written_return(call, j, ret, outputs)
        elif ret.alias and not composite:
            found += _alias_return(call, j, ret, outputs)
        elif not ret.alias and not composite:
            found += _fresh_return(call, j, outputs)
    return found


def states_equal(a: list[TensorState], b: list[TensorState]) -> bool:
    return all(not x.differences(y) for x, y in zip(a, b, strict=False))
