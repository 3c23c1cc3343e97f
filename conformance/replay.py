"""Replay one example of a property test in a fresh process, writing every
torch call it makes as torch code, so that a crash or hang there becomes a
standalone script.

    python -m conformance.replay EVIDENCE.json LOG

EVIDENCE holds the test's node ID, device and the Hypothesis choices its
draws consumed (recorded before the example ran); LOG receives, one line
each, the code that builds each drawn tensor and then each torch call, as
it starts: when the process dies, the last line is the call that killed it.

Calls are seen through a TorchFunctionMode, at the level where torch hands
an op to its kernels: whatever crashes below that (C++ kernels, a backend)
is in the script.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import re
import sys
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from strategies.tensors import TENSOR_BASE

# Written after a call that raised (its line is already written: a crash
# inside a call must leave that call as the last line).
RAISED = "# raised"

# Attribute reads the tests make all the time and that never crash alone.
_QUIET = {"dim", "numel", "size", "stride", "is_floating_point", "is_complex", "data_ptr"}


class Tracer(TorchFunctionMode):
    """Writes each torch call as a line of code before running it."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd
        self.names: dict[int, str] = {}
        self.keep: list[Any] = []  # the named objects stay alive, so ids stay theirs
        self.count = 0

    def name(self, obj: Any, name: str) -> None:
        self.names[id(obj)] = name
        self.keep.append(obj)

    def write(self, line: str) -> None:
        os.write(self.fd, (json.dumps(line) + "\n").encode())

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch.compiler.is_compiling() or _compiler_tensors(args, kwargs):
            # Dynamo traces into an active mode, and calls tensor methods on
            # its fake tensors while compiling: writing those would read
            # values they do not have and fail the example's compilation
            return func(*args, **kwargs)
        call = self.render(func, args, kwargs)
        if call is not None:
            result_name = f"v{self.count}"
            self.count += 1
            prefix = "" if call.startswith(("del ", "#")) else f"{result_name} = "
            mode = []
            if not torch.is_grad_enabled():
                mode.append("torch.no_grad()")
            if torch.is_inference_mode_enabled():
                mode.append("torch.inference_mode()")
            line = f"{prefix}{call}"
            if mode:
                line = f"with {', '.join(mode)}:\n    {line}"
            self.write(line)
        try:
            result = func(*args, **kwargs)
        except Exception:
            if call is not None:
                self.write(RAISED)
            raise
        if call is not None:
            self._name_result(result, result_name)
        return result

    def _name_result(self, result: Any, name: str) -> None:
        if isinstance(result, torch.Tensor) and id(result) not in self.names:
            self.name(result, name)
        elif isinstance(result, tuple | list):
            for i, item in enumerate(result):
                if isinstance(item, torch.Tensor) and id(item) not in self.names:
                    self.name(item, f"{name}[{i}]")

    def render(self, func: Any, args: tuple, kwargs: dict) -> str | None:
        name = getattr(func, "__name__", "")
        if name in ("__get__", "__set__", "__delete__"):
            attribute = getattr(getattr(func, "__self__", None), "__name__", "?")
            if name == "__get__":
                return None if attribute in _QUIET else f"{self.arg(args[0])}.{attribute}"
            if name == "__set__":
                return f"setattr({self.arg(args[0])}, {attribute!r}, {self.arg(args[1])})"
            return f"del {self.arg(args[0])}.{attribute}"
        if name in _QUIET or name.startswith("__") and name in ("__repr__", "__format__"):
            return None
        if getattr(torch.Tensor, name, None) is func or getattr(TENSOR_BASE, name, None) is func:
            head = f"torch.Tensor.{name}"
        elif getattr(torch, name, None) is func:
            head = f"torch.{name}"
        elif getattr(torch.nn.functional, name, None) is func:
            head = f"torch.nn.functional.{name}"
        else:
            module = getattr(func, "__module__", "") or ""
            head = f"{module}.{name}" if module.startswith("torch") else None
            if head is None:
                return f"# a call torch-conformance cannot write out: {func!r}"
        parts = [self.arg(a) for a in args]
        parts += [f"{k}={self.arg(v)}" for k, v in kwargs.items()]
        return f"{head}({', '.join(parts)})"

    def arg(self, value: Any) -> str:
        if isinstance(value, torch.Tensor):
            known = self.names.get(id(value))
            if known is not None:
                return known
            return _materialized(value)
        if isinstance(value, torch.dtype):
            return str(value)
        if isinstance(value, torch.device):
            return f"torch.device({str(value)!r})"
        if isinstance(value, torch.Size):
            return repr(tuple(value))
        if isinstance(value, tuple):
            inner = ", ".join(self.arg(v) for v in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        if isinstance(value, list):
            return "[" + ", ".join(self.arg(v) for v in value) + "]"
        if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
            return repr(value.tolist())  # a drawn leaf's values
        if isinstance(value, slice):
            return f"slice({value.start!r}, {value.stop!r}, {value.step!r})"
        if value is Ellipsis:
            return "..."
        if isinstance(value, float) and value != value:
            return "float('nan')"
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            return f"float({str(value)!r})"
        return repr(value)


def _trace_compiled_calls(tracer: Tracer) -> None:
    """Write a compiled program's call (conformance.compiled) as its source,
    then torch.compile of it called on the traced tensors; the call itself
    runs untraced, so the script compiles what the example compiled rather
    than replaying the ops the compiled code ran."""
    from conformance.compiled import run
    from conformance.compiled.ops import MARK_DIRTY_SOURCE
    from conformance.compiled.repro import _backend_source

    compile_function = run.compile_function

    def traced(program, target):
        compiled = compile_function(program, target)

        def call(*args):
            name = f"v{tracer.count}"
            tracer.count += 1
            function = f"program_{name}"
            imports, backend = _backend_source(target)
            head = [*imports, MARK_DIRTY_SOURCE] if "mark_dirty" in program.ops else imports
            source = program.function_source().replace("def program(", f"def {function}(", 1)
            dynamic = ", dynamic=True" if program.dynamic else ""
            operands = ", ".join(tracer.arg(a) for a in args)
            call_line = (
                f"{name} = torch.compile({function}, backend={backend}{dynamic})({operands})"
            )
            tracer.write("\n".join([*head, source, call_line]))
            try:
                with torch._C.DisableTorchFunction():
                    result = compiled(*args)
            except Exception:
                tracer.write(RAISED)
                raise
            tracer._name_result(result, name)
            return result

        return call

    run.compile_function = traced


def _compiler_tensors(args: tuple, kwargs: dict) -> bool:
    """Whether a call is on a compiler's stand-in tensors (a subclass of
    Tensor, such as fake or functional tensors), not the example's own."""
    leaves = torch.utils._pytree.tree_leaves((args, kwargs))
    return any(
        isinstance(a, torch.Tensor) and type(a) not in (torch.Tensor, torch.nn.Parameter)
        for a in leaves
    )


def _materialized(tensor: torch.Tensor) -> str:
    """A tensor the trace did not see made: its values (not its memory)."""
    with torch._C.DisableTorchFunction():
        values = tensor.detach().cpu().tolist()
    return f"torch.tensor({values!r}, dtype={tensor.dtype}, device={str(tensor.device)!r})"


def _input_source(label: str, case: Any, names: set[str]) -> tuple[str, str]:
    """torch code for a drawn TensorCase under a fresh name; (name, code)."""
    from conformance.harness import _name

    base = _name(label)
    name, n = base, 1
    while name in names:
        n += 1
        name = f"{base}_{n}"
    names.add(name)
    return name, case.source(name).replace("root", f"{name}_root")


def main(argv: list[str]) -> int:
    evidence_path, log_path = argv
    evidence = json.loads(Path(evidence_path).read_text())
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    tracer = Tracer(fd)
    choices = pickle.loads(base64.b64decode(evidence["choices"]))

    import importlib

    from conformance import harness
    from conformance.hypothesis_adapter import example_from_choices
    from conformance.selection import select, set_current
    from strategies.tensors import TensorCase

    set_current(select(**evidence["selection"]))
    module_name, _, function = evidence["test"].partition("::")
    test = getattr(importlib.import_module(module_name), function)
    names: set[str] = set()
    draw = harness.Example.draw

    def traced_draw(self, strategy, label):  # inputs are built outside the trace
        with torch._C.DisableTorchFunction():
            value = draw(self, strategy, label)
        if isinstance(value, TensorCase):
            name, source = _input_source(label, value, names)
            tracer.write(source)
            tracer.name(value.tensor, name)
            if value.root is not None and value.root is not value.tensor:
                tracer.name(value.root, f"{name}_root")
        return value

    harness.Example.draw = traced_draw
    _trace_compiled_calls(tracer)
    params = dict(evidence["params"])
    if evidence.get("target"):
        from conformance.compiled.targets import parse_targets

        (params["target"],) = parse_targets(evidence["target"])
    context, run = example_from_choices(test, choices)
    if evidence.get("hang_after"):  # the example itself, not the imports, is timed
        import faulthandler

        faulthandler.dump_traceback_later(evidence["hang_after"], exit=True)
    with context, tracer:
        run(**params)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def replay_script(
    context: dict, choices: str, timeout: float, hang_after: float | None = None
) -> tuple[str, list[str]] | None:
    """Run the replay in a fresh interpreter (with this one's sys.path): how
    it ended ("crashed", "hung", "ok", "error ...") and the lines it wrote.
    `hang_after`: seconds the example may run before it counts as hung."""
    import subprocess
    import tempfile

    from conformance import children

    with tempfile.TemporaryDirectory() as folder:
        evidence, log = Path(folder) / "evidence.json", Path(folder) / "calls.log"
        evidence.write_text(json.dumps({**context, "choices": choices, "hang_after": hang_after}))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        try:
            done = subprocess.run(
                children.command("conformance.replay", str(evidence), str(log), module=True),
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            if done.returncode < 0:
                how = "crashed"
            elif hang_after and "Timeout (" in done.stderr:
                how = "hung"
            elif done.returncode == 0:
                how = "ok"
            else:
                out_of_memory = "out of memory" in done.stderr or "allocate memory" in done.stderr
                last = (done.stderr.strip().splitlines() or [""])[-1]
                how = "crashed" if out_of_memory else f"error ({last[:300]})"
        except subprocess.TimeoutExpired:
            how = "hung"
        if not log.exists():
            return None
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return how, _guarded(lines)


def _guarded(lines: list[str]) -> list[str]:
    """The calls, each one that raised in the example (the test expected or
    caught it) wrapped so that the script goes on past it as the example did;
    never the last: an error that ended the example (out of memory) is what
    the script must show."""
    last_call = max((k for k, line in enumerate(lines) if line != RAISED), default=-1)
    out: list[str] = []
    for k, line in enumerate(lines):
        if line == RAISED and out and k < last_call:
            body = "\n".join("    " + part for part in out[-1].splitlines())
            out[-1] = f"try:\n{body}\nexcept Exception:\n    pass  # raised in the example too"
        elif line != RAISED:
            out.append(line)
    return out


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# in-place ops, attribute writes, and calls that change a tensor's autograd
# state without writing it (a later backward crashes or not because of them)
_WRITES = re.compile(r"\.[a-z]\w*_\(|setattr\(|\.retain_grad\(|\.backward\(")


def sliced(lines: list[str]) -> list[str]:
    """The last line, and the lines that made what it uses, transitively."""
    if not lines:
        return lines
    defines = [set(re.findall(r"^\s*([A-Za-z_]\w*) = ", line, re.M)) for line in lines]
    needed = set(_NAME.findall(lines[-1]))
    keep = [len(lines) - 1]
    for i in range(len(lines) - 2, -1, -1):
        mentions = set(_NAME.findall(lines[i]))
        # what made a name it uses, and what wrote into one in place
        writes = bool(_WRITES.search(lines[i])) and bool(mentions & needed)
        if defines[i] & needed or writes:
            keep.append(i)
            needed |= mentions
    return [lines[i] for i in sorted(keep)]
