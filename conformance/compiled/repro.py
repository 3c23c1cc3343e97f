"""Standalone repro scripts for eager/compiled divergences.

The script imports only torch, resets Dynamo, runs the program eagerly and
compiled on identical fresh inputs, prints what a caller sees of each side
by side, and ends in an assertion that fails where the two differ.
"""

from __future__ import annotations

from conformance.compiled.compare import Divergence
from conformance.compiled.ops import MARK_DIRTY_SOURCE
from conformance.compiled.program import MODES, CompiledProgram
from conformance.compiled.targets import Target
from conformance.differential import functions

_OBSERVE = '''\
def read(attribute):
    """attribute(), or "raises" (a view's stale grad_fn: one output of several)."""
    try:
        return attribute()
    except RuntimeError:
        return "raises"


def observe(t, version_before=None):
    """What a caller can see of a tensor (for an input: whether its version rose)."""
    leaf = read(lambda: t.is_leaf)
    grad = t.grad if leaf is True or read(lambda: t.retains_grad) is True else None
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
        "is_leaf": leaf,
        "grad_fn": read(lambda: t.grad_fn is not None),
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


def _run_function(
    program: CompiledProgram, number: int, watched_tokens: tuple[int, ...]
) -> list[str]:
    """`run_N(fn)`: call N's fresh inputs, the call, the eager steps after it."""
    made = program.call_args(number)
    args = [f"t{i}" for i in program.arg_tokens]
    outs = [f"t{i}" for i in program.output_tokens]
    inputs = list(dict.fromkeys([*args, *(f"t{s.out}" for s in made)]))
    watched = [f"t{i}" for i in watched_tokens] or list(dict.fromkeys(inputs + outs))
    total = len(program.calls) + 1
    said = "" if number == 0 else f" ({program.calls[number - 1].describe()})"
    lines = [
        f"def run_{number + 1}(fn):",
        f'    """Call {number + 1} of {total}{said}: fresh inputs, the call, then the eager '
        'steps after it."""',
    ]
    lines += _indent([line for s in made for line in s.source().splitlines()])
    lines += ["    seen, errors = {}, []"]
    lines += [f"    before = {{{', '.join(f'{a!r}: {a}._version' for a in inputs)}}}", "    try:"]
    call = f"{', '.join(outs)}{',' if len(outs) == 1 else ''} = " if outs else ""
    mode = program.call_mode(number)
    if mode:
        lines += [f"        with {MODES[mode]}:", f"            {call}fn({', '.join(args)})"]
    else:
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
    lines += ['    return {"error": None, "later errors": errors, **seen}', "", ""]
    return lines


def repro_script(program: CompiledProgram, target: Target, found: Divergence) -> str:
    imports, backend = _backend_source(target)
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
    lines += _AGREE.splitlines() + ["", ""]
    lines += program.function_source().splitlines() + ["", ""]
    runs = []
    for number in range(len(program.calls) + 1):
        lines += _run_function(program, number, found.tensors if number == found.call else ())
        runs.append(f"run_{number + 1}")
    dynamic = ", dynamic=True" if program.dynamic else ""
    lines += [
        "torch._dynamo.reset()",
        f"compiled_program = torch.compile(program, backend={backend}{dynamic})",
        "failed = []",
        f"for number, run in enumerate(({', '.join(runs)},), 1):",
        "    eager = run(program)",
        "    compiled = run(compiled_program)  # the same compiled function, called again",
        f'    print(f"call {{number}} of {len(runs)}:")',
        "    for key in eager:",
        '        if key in ("error", "later errors"):',
        '            print(f"{key:>12}: eager {eager[key]!r}  compiled {compiled.get(key)!r}")',
        "            continue",
        "        for field in eager[key]:",
        '            if field == "storage":',
        "                continue  # addresses differ between runs; sharing is compared below",
        "            e, c = eager[key][field], compiled.get(key, {}).get(field)",
        '            mark = "" if e == c else "   <-- differs"',
        '            print(f"{key}.{field:>13}: eager {e!r}  compiled {c!r}{mark}")',
        "    problem = disagree(eager, compiled)",
        "    if problem:",
        '        print(f"call {number}: {problem}")',
        "        failed.append(number)",
        "",
        f'assert not failed, f"eager and {target.name} differ at call(s) {{failed}}"',
    ]
    return "\n".join(lines) + "\n"


_AGREE = '''\
def disagree(eager, compiled):
    """How the two sides of one call differ, or None."""
    if eager.get("error") != compiled.get("error"):
        return "the call raised differently"
    if eager.get("error") is not None:
        return None

    def sharing(side):
        names = [k for k in side if k not in ("error", "later errors")]
        return {(a, b): side[a]["storage"] == side[b]["storage"]
                for i, a in enumerate(names) for b in names[i + 1:]}

    def strip(side):
        return {k: {f: v for f, v in o.items() if f != "storage"} if isinstance(o, dict) else o
                for k, o in side.items()}

    if sharing(eager) != sharing(compiled):
        return "tensors share memory differently"
    if strip(eager) != strip(compiled):
        return "eager and compiled differ"
    return None
'''
