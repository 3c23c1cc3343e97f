"""--compile: targets parsed once, unavailable ones skipped with a reason,
unknown ones a usage error; known-failure entries narrowed to a target, ops
or message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conformance.compiled import targets
from conformance.compiled.targets import TargetError, column, parse_targets, split_column
from conformance.known_failures import KnownFailure, KnownFailuresError, load

ROOT = Path(__file__).resolve().parents[1]


def test_registered_backends_are_targets():
    found = parse_targets("eager, aot_eager,aot_eager")
    assert [t.name for t in found] == ["eager", "aot_eager"]
    assert all(t.available for t in found)
    assert found[1].backend == "aot_eager"


def test_a_users_backend_is_loaded_from_module_colon_callable():
    (target,) = parse_targets("tests.compile_plants:copies_views")
    from tests.compile_plants import copies_views

    assert target.backend is copies_views


@pytest.mark.parametrize(
    "spec, says",
    [
        ("no_such_backend", "unknown compile backend 'no_such_backend'"),
        ("no_such_module:fn", "cannot import 'no_such_module'"),
        ("tests.compile_plants:nothing_here", "has no callable 'nothing_here'"),
        (",", "needs at least one backend"),
        ("tests.compile_wrappers:passthrough=", "declare a base as BACKEND=BASE"),
        ("=aot_eager", "declare a base as BACKEND=BASE"),
        ("tests.compile_wrappers:passthrough=no_such", "unknown tests.compile_wrappers"),
    ],
)
def test_unknown_backends_are_usage_errors(spec, says):
    with pytest.raises(TargetError, match=says.replace("(", r"\(")):
        parse_targets(spec)


WRAPPER = "tests.compile_wrappers:passthrough"


@pytest.fixture
def declared():
    """The run's declared bases, as set_targets and a list leave them, reset after."""
    yield
    targets.set_targets(())
    targets.declare_listed({})


def test_a_backend_declared_on_the_command_line_inherits_its_bases_known_failures(declared):
    entry = KnownFailure("compile.raises", "r", "l", "test", target="aot_eager")
    assert not entry.covers("compile.raises", f"cpu/{WRAPPER}")  # says nothing itself
    (target,) = parse_targets(f"{WRAPPER}=aot_eager")
    assert (target.name, target.base, target.spec) == (WRAPPER, "aot_eager", f"{WRAPPER}=aot_eager")
    assert target.backend.__name__ == "passthrough"
    targets.set_targets((target,))
    assert targets.builds_on(WRAPPER) == "aot_eager"
    assert entry.covers("compile.raises", f"cpu/{WRAPPER}")
    assert "(built on aot_eager)" in targets.describe((target,))
    crash = KnownFailure(
        "", "r", "l", "test", target="aot_eager", status="crashed", test="t.py::test_c"
    )
    assert crash.covers_crash(f"t.py::test_c[cpu-{WRAPPER}]", "", "")
    assert not crash.covers_crash("t.py::test_c[cpu-eager]", "", "")


def test_a_backend_declared_in_a_known_failure_list_inherits_its_bases(tmp_path, declared):
    from conformance.known_failures import load_bases

    listed = tmp_path / "mine.toml"
    listed.write_text(f'[builds_on]\n"{WRAPPER}" = "aot_eager"\n')
    targets.declare_listed(load_bases([listed]))
    entry = KnownFailure("compile.raises", "r", "l", "test", target="aot_eager")
    assert entry.covers("compile.raises", f"cpu/{WRAPPER}")
    # the command line wins over a list
    targets.set_targets(parse_targets(f"{WRAPPER}=eager"))
    assert not entry.covers("compile.raises", f"cpu/{WRAPPER}")
    listed.write_text('[builds_on]\n"mine" = 3\n')
    with pytest.raises(KnownFailuresError, match="builds_on must be a table"):
        load_bases([listed])


def test_inductor_is_built_on_aot_eager():
    entry = KnownFailure("compile.raises", "r", "l", "test", target="aot_eager")
    assert targets.builds_on("inductor") == "aot_eager"
    assert entry.covers("compile.raises", "cpu/inductor")
    # and not the other way round
    own = KnownFailure("compile.raises", "r", "l", "test", target="inductor")
    assert not own.covers("compile.raises", "cpu/aot_eager")


def test_the_cli_refuses_an_unknown_backend_in_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "--compile", "no_such_backend"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 4
    assert done.stderr.count("\n") == 1 and "unknown compile backend" in done.stderr
    assert "Traceback" not in done.stderr


def test_inductor_without_a_compiler_is_skipped_with_the_reason(monkeypatch):
    import torch._inductor.cpp_builder as builder

    def no_compiler():
        raise RuntimeError("Unsupported: no C++ compiler found")

    monkeypatch.setattr(builder, "get_cpp_compiler", no_compiler)
    (inductor,) = parse_targets("inductor")
    assert not inductor.available
    assert "C++ compiler" in inductor.reason
    (aot,) = parse_targets("aot_eager")
    assert aot.available  # only inductor builds kernels


def test_a_python_torch_compile_refuses_skips_every_target(monkeypatch):
    monkeypatch.setattr(torch._dynamo, "is_dynamo_supported", lambda: False)
    found = parse_targets("aot_eager,inductor")
    assert [t.available for t in found] == [False, False]
    assert all("does not support Python" in t.reason for t in found)
    assert "skipped" in targets.describe(found)


def test_columns_put_the_target_beside_the_device():
    assert column("cpu", None) == "cpu"
    assert column("cuda:1", "aot_eager") == "cuda:1/aot_eager"
    assert split_column("cuda:1/aot_eager") == ("cuda:1", "aot_eager")
    assert split_column("cpu") == ("cpu", None)


def _entry(**fields) -> KnownFailure:
    return KnownFailure(invariant="compile.raises", reason="r", link="l", where="w", **fields)


def test_known_failures_narrow_to_target_ops_and_message():
    plain = _entry()
    assert plain.covers("compile.raises", "cpu/aot_eager") and plain.covers("compile.raises", "cpu")
    aot = _entry(target="aot_eager")
    assert aot.covers("compile.raises", "cpu/aot_eager")
    assert not aot.covers("compile.raises", "cpu/eager")
    assert not aot.covers("compile.raises", "cpu")
    ops = _entry(ops=("as_strided_copy",))
    assert ops.covers("compile.raises", "cpu/x", ops={"leaf", "as_strided_copy"})
    assert not ops.covers("compile.raises", "cpu/x", ops={"leaf", "narrow"})
    said = _entry(message="donated buffers")
    assert said.covers("compile.raises", "cpu/x", text="... non-empty donated buffers ...")
    assert not said.covers("compile.raises", "cpu/x", text="modified by an inplace operation")
    assert ops.narrowed and said.narrowed and not aot.narrowed


def test_known_failure_lists_check_ops(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[known]]\ninvariant = "compile.raises"\nreason = "r"\nlink = "l"\nops = "narrow"\n'
    )
    with pytest.raises(KnownFailuresError, match="ops must be a list"):
        load(bad)
    good = tmp_path / "good.toml"
    good.write_text(
        '[[known]]\ninvariant = "compile.raises"\nreason = "r"\nlink = "l"\n'
        'target = "aot_eager"\nops = ["narrow"]\nmessage = "m"\n'
    )
    (entry,) = load(good)
    assert (entry.target, entry.ops, entry.message) == ("aot_eager", ("narrow",), ("m",))


def test_hitting_the_recompile_limit_fails_loudly():
    """Past the limit Dynamo would run the frame eagerly, silently; the suite
    makes it raise."""
    from conformance.compiled.targets import guard_cache_limits

    # torch's own config.patch: pytest's monkeypatch, undone, left the
    # limit unreadable to every later compile of the process
    config = torch._dynamo.config
    limit = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    flags = [
        f for f in ("fail_on_recompile_limit_hit", "fail_on_cache_limit_hit") if hasattr(config, f)
    ]
    with config.patch({limit: 1, **dict.fromkeys(flags, False)}):
        torch._dynamo.reset()
        guard_cache_limits()

        def f(x):
            return x * 2

        compiled = torch.compile(f, backend="eager", dynamic=False)
        compiled(torch.ones(2))
        with pytest.raises(Exception, match="(?i)limit"):
            for n in range(3, 6):
                compiled(torch.ones(n))
    torch._dynamo.reset()


def test_a_compiled_tests_replay_gets_its_target_back():
    # a crashed or hung compiled example is replayed in a fresh process from
    # a JSON context: the target must survive the trip, by name
    import json
    from types import SimpleNamespace

    from conformance import run_state, runtest
    from conformance.selection import select

    config = SimpleNamespace(
        stash={run_state.SELECTION: select(profile="ci", seed=3)},
        getoption=lambda name: None,
    )
    params = {"device": "cpu", "shard": 0, "target": targets.Target("aot_eager")}
    item = SimpleNamespace(
        config=config,
        callspec=SimpleNamespace(params=params),
        module=SimpleNamespace(__name__="test_compiled"),
        obj=SimpleNamespace(__name__="test_compiled_agrees_with_eager"),
    )
    context = json.loads(json.dumps(runtest.replay_context(item)))
    assert context["params"] == {"device": "cpu", "shard": 0}
    assert parse_targets(context["target"]) == (targets.Target("aot_eager"),)


def test_a_backend_that_generates_code_gets_a_longer_example_limit(declared):
    from types import SimpleNamespace

    from conformance import options, watch

    def config(timeout):
        return SimpleNamespace(getoption=lambda name: timeout)

    targets.set_targets(())
    assert options.example_limit(config(None)) == watch.DEFAULT_LIMIT
    targets.set_targets(parse_targets("aot_eager"))  # eager's kernels: compiles in seconds
    assert options.example_limit(config(None)) == watch.DEFAULT_LIMIT
    targets.set_targets((targets.Target("inductor"),))
    assert options.example_limit(config(None)) == watch.CODEGEN_LIMIT > watch.DEFAULT_LIMIT
    targets.set_targets((targets.Target("inductor", False, "no compiler"),))  # skipped
    assert options.example_limit(config(None)) == watch.DEFAULT_LIMIT
    targets.set_targets((targets.Target("inductor"),))
    assert options.example_limit(config(7.0)) == 7.0  # --timeout wins, 0 (no limit) too
    assert options.example_limit(config(0.0)) == 0.0
