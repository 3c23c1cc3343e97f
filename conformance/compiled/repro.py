"""Standalone repro scripts for eager/compiled divergences.

The script imports only torch, resets Dynamo, runs the program eagerly and
compiled on identical fresh inputs, prints what a caller sees of each side
by side, and ends in an assertion that fails where the two differ.
"""

from __future__ import annotations

from conformance.compiled.compare import Divergence
from conformance.compiled.ops import MARK_DIRTY_SOURCE
from conformance.compiled.program import CompiledProgram
from conformance.compiled.targets import Target
from conformance.differential import functions

_OBSERVE = '''\
def observe(t, version_before=None):
    """What a caller can see of a tensor (for an input: whether its version rose)."""
    grad = t.grad if t.is_leaf or t.retains_grad else None
    rose = None if version_before is None else t._version > version_before
    return {
        "values": t.detach().tolist(),
        "shape": tuple(t.shape),
        "dtype": str(t.dtype),
        "stride": t.stride(),
        "storage": t.untyped_storage().data_ptr(),
        "offset": t.storage_offset(),
        "version rose": rose,
        "requires_grad": t.requires_grad,
        "is_leaf": t.is_leaf,
        "grad_fn": t.grad_fn is not None,
        "grad": None if grad is None else grad.tolist(),
    }
'''

_SAID = '''\
def said(error):
    """The error's type and first line (a backend's failure: also the error it wraps)."""
    inner = getattr(error, "inner_exception", None)
    if isinstance(inner, BaseException) and inner is not error:
        return type(error).__name__ + ": " + said(inner)
    text = str(error).strip()
    return type(error).__name__ + ": " + (text.splitlines()[0] if text else "")
'''


def _indent(lines: list[str], by: int = 4) -> list[str]:
    return [" " * by + line if line else line for line in lines]


def _backend_source(target: Target) -> tuple[list[str], str]:
    if ":" in target.name:
        module, _, name = target.name.partition(":")
        return [f"from {module} import {name}  # the backend under test"], name
    return [], repr(target.name)


def repro_script(program: CompiledProgram, target: Target, found: Divergence) -> str:
    imports, backend = _backend_source(target)
    args = [f"t{i}" for i in program.arg_tokens]
    outs = [f"t{i}" for i in program.output_tokens]
    watched = [f"t{i}" for i in found.tensors] or args + outs
    lines = [
        f"# {found.invariant}: {found.message}",
        "import torch",
        "import torch._dynamo",
        *imports,
        "",
    ]
    if "mark_dirty" in program.ops:
        lines += [MARK_DIRTY_SOURCE, ""]
    lines += functions.prelude(program.ops)  # the differential's custom Functions
    lines += _OBSERVE.splitlines() + [""]
    lines += _SAID.splitlines() + [""]
    lines += program.function_source().splitlines() + [""]
    lines += [
        "",
        "def run(fn):",
        '    """Fresh inputs, the call, then the eager steps after it."""',
    ]
    lines += _indent([line for s in program.args for line in s.source().splitlines()])
    lines += ["    seen, errors = {}, []"]
    lines += [f"    before = {{{', '.join(f'{a!r}: {a}._version' for a in args)}}}", "    try:"]
    call = f"{', '.join(outs)}{',' if len(outs) == 1 else ''} = " if outs else ""
    lines += [f"        {call}fn({', '.join(args)})"]
    lines += [
        "    except Exception as error:",
        '        return {"error": said(error)}',
    ]
    for step in program.tail:
        code = step.source()
        lines += ["    try:"]
        body = ["with torch.no_grad():", "    " + code] if step.no_grad else [code]
        lines += _indent(_indent(body))
        lines += ["    except Exception as error:", "        errors.append(type(error).__name__)"]
    lines += [f"    for name, t in {{{', '.join(f'{w!r}: {w}' for w in watched)}}}.items():"]
    lines += ["        seen[name] = observe(t, before.get(name))"]
    lines += ['    return {"error": None, "later errors": errors, **seen}', ""]
    lines += [
        "",
        "torch._dynamo.reset()",
        "eager = run(program)",
        f"compiled = run(torch.compile(program, backend={backend}"
        + (", dynamic=True" if program.dynamic else "")
        + "))",
        "for key in eager:",
        '    if key in ("error", "later errors"):',
        '        print(f"{key:>12}: eager {eager[key]!r}  compiled {compiled.get(key)!r}")',
        "        continue",
        "    for field in eager[key]:",
        '        if field == "storage":',
        "            continue  # addresses differ between runs; sharing is compared below",
        "        e, c = eager[key][field], compiled.get(key, {}).get(field)",
        '        mark = "" if e == c else "   <-- differs"',
        '        print(f"{key}.{field:>13}: eager {e!r}  compiled {c!r}{mark}")',
        "",
        "",
        "def sharing(side):",
        '    names = [k for k in side if k not in ("error", "later errors")]',
        "    return {(a, b): side[a]['storage'] == side[b]['storage']",
        "            for i, a in enumerate(names) for b in names[i + 1:]}",
        "",
        "",
        'strip = lambda side: {k: {f: v for f, v in o.items() if f != "storage"}'
        " if isinstance(o, dict) else o for k, o in side.items()}",
        'assert eager.get("error") == compiled.get("error"), "the call raised differently"',
        'if eager.get("error") is None:',
        '    assert sharing(eager) == sharing(compiled), "tensors share memory differently"',
        f'    assert strip(eager) == strip(compiled), "eager and {target.name} differ"',
    ]
    return "\n".join(lines) + "\n"
