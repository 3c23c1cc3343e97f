"""The suite's command-line options and what they select: the devices,
dtypes, Hypothesis profile (conformance.profiles) and seed, the schema
operators and compile targets, and what an xdist worker is handed of them."""

from __future__ import annotations

import pytest
import torch

from conformance import watch
from conformance.compiled import targets as compile_targets
from conformance.run_state import RUN_FOLDER, SELECTION
from conformance.selection import Selection, SelectionError, select, set_current
from strategies.devices import build_kind


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "torch conformance")
    group.addoption(
        "--devices",
        default=None,
        help="comma-separated devices to run on (cpu, cuda, cuda:N, mps); "
        "default: every known device, the absent ones reported as skipped",
    )
    group.addoption(
        "--dtypes",
        default=None,
        help="comma-separated dtypes or groups (floating, complex, integral, grad, all)",
    )
    group.addoption("--profile", default=None, help="Hypothesis profile: dev, ci, thorough")
    group.addoption("--seed", default=None, help="Hypothesis seed (ci defaults to 0)")
    group.addoption(
        "--known-failures",
        action="append",
        default=[],
        metavar="TOML",
        help="a known-failure list (repeatable); the shipped list is always read first",
    )
    group.addoption(
        "--no-known-failures",
        action="store_true",
        help="read no known-failure list, not even the shipped one",
    )
    group.addoption(
        "--strict-xfail",
        action="store_true",
        help="a listed invariant that unexpectedly holds is an error",
    )
    group.addoption(
        "--invariants",
        default=None,
        help="only the tests of these invariant IDs (comma-separated, globs allowed)",
    )
    group.addoption(
        "--timeout",
        default=None,
        type=float,
        metavar="SECONDS",
        help=f"an example running longer is reported hung (default {watch.DEFAULT_LIMIT:g}; "
        f"{watch.CODEGEN_LIMIT:g} with a --compile backend that generates code, such as "
        "inductor; 0: no limit)",
    )
    group.addoption(
        "--schema",
        default=None,
        help="ATen operators the schema.* tests check: 'sample' (default; 'all' under the "
        "thorough profile), 'all', or comma-separated names and globs (aten::add*,neg.out)",
    )
    group.addoption(
        "--compile",
        default=None,
        metavar="BACKEND[=BASE][,...]",
        help="also run the compiled differential under these torch.compile backends "
        "(eager, aot_eager, inductor, any registered backend, or module:callable; "
        "=BASE: built on BASE, whose known failures it inherits)",
    )


def add_markers(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "invariant(*ids): the catalogue IDs a test checks")
    config.addinivalue_line(
        "markers", "seed: an example from the articles the project started from"
    )


def configure_selection(config: pytest.Config) -> Selection:
    """Read the options into the run's selection (made current) and compile
    targets; a bad option is a usage error."""
    # A worker takes the selection its controller made, so that every process
    # runs the same profile and seed.
    given = getattr(config, "workerinput", {}).get("conformance_selection")
    try:
        selection = (
            select(**given)
            if given
            else select(
                config.getoption("devices"),
                config.getoption("dtypes"),
                config.getoption("profile"),
                config.getoption("seed"),
            )
        )
    except SelectionError as error:
        raise pytest.UsageError(str(error)) from None
    set_current(selection)
    _check_schema_option(config.getoption("schema"))
    config.stash[SELECTION] = selection
    try:
        compile_targets.set_targets(compile_targets.parse_targets(config.getoption("compile")))
    except compile_targets.TargetError as error:
        raise pytest.UsageError(str(error)) from None
    return selection


def apply_hypothesis_options(config: pytest.Config, selection: Selection) -> None:
    """Hypothesis's own plugin applies these in its pytest_configure, after ours."""
    config.option.hypothesis_profile = selection.profile
    if selection.seed is not None:
        config.option.hypothesis_seed = str(selection.seed)


def _check_schema_option(spec: str | None) -> None:
    if spec in (None, "all", "sample"):
        return
    from conformance.schema.operators import select as select_operators

    try:
        select_operators(spec, 0)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


def hand_to_worker(node) -> None:  # xdist controller -> worker
    selection = node.config.stash[SELECTION]
    node.workerinput["conformance_run_folder"] = str(node.config.stash[RUN_FOLDER])
    node.workerinput["conformance_selection"] = {
        "devices": node.config.getoption("devices"),
        "dtypes": node.config.getoption("dtypes"),
        "profile": selection.profile,
        "seed": selection.seed,
    }


def header(config: pytest.Config) -> list[str]:
    selection = config.stash[SELECTION]
    git = (torch.version.git_version or "unknown")[:12]
    debug = ", debug build" if getattr(torch.version, "debug", False) else ""
    return [
        f"torch {torch.__version__} (git {git}), build: {build_kind()}{debug}",
        *selection.describe(),
        *(
            [compile_targets.describe(compile_targets.current_targets())]
            if compile_targets.current_targets()
            else []
        ),
    ]


def example_limit(config: pytest.Config) -> float:
    """Seconds an example may run before it is reported hung (0: no limit):
    --timeout, or by default longer where a compile target generates code."""
    given = config.getoption("timeout")
    if given is not None:
        return given
    codegen = any(t.available and not t.same_kernels for t in compile_targets.current_targets())
    return watch.CODEGEN_LIMIT if codegen else watch.DEFAULT_LIMIT
