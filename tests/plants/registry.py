"""The tables of plants and the decorators that fill them. Each decorated
function takes torch (imported only when a plant is installed) and patches
it; a kernel plant's returns the kernel."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .patch import torch_module


@dataclass(frozen=True)
class Plant:
    name: str
    breaks: str  # the invariant ID the suite must report violated
    what: str
    install: Callable[[], None]


PLANTS: dict[str, Plant] = {}

# Crashes, hangs and the suite's own errors (tests/test_crashes.py): they break
# no rule, so they are kept apart from PLANTS, whose every entry must break an
# invariant. PROBLEM_PLANTS maps each to the status its test must get.
PLANTS_PROBLEMS: dict[str, Plant] = {}
PROBLEM_PLANTS: dict[str, str] = {}

# Builds that lack a kernel (issue 9): the suite must skip and count them.
LACKING: dict[str, Plant] = {}

# name -> (operator, dispatch key, factory of the kernel)
SCHEMA_KERNELS: dict[str, tuple[str, str, Callable[[], Callable]]] = {}
_LIBRARIES: list = []  # a Library unregisters its kernels when collected


def _registering(table: dict, name: str, breaks: str, what: str) -> Callable:
    def register(body: Callable) -> Callable:
        table[name] = Plant(name, breaks, what, lambda: body(torch_module()))
        return body

    return register


def plant(name: str, breaks: str, what: str) -> Callable:
    return _registering(PLANTS, name, breaks, what)


def problem_plant(name: str, status: str, what: str) -> Callable:
    PROBLEM_PLANTS[name] = status
    return _registering(PLANTS_PROBLEMS, name, "", what)


def lacking(name: str, what: str) -> Callable:
    return _registering(LACKING, name, "", what)


def kernel_plant(name: str, breaks: str, what: str, op: str, key: str = "CPU") -> Callable:
    """A plant that overrides `op`'s kernel for dispatch key `key` with the
    function the decorated factory returns: the one way a plant patches a kernel."""

    def register(factory: Callable) -> Callable:
        SCHEMA_KERNELS[name] = (op, key, lambda: factory(torch_module()))
        PLANTS[name] = Plant(name, breaks, what, lambda: _LIBRARIES.append(override_kernel(name)))
        return factory

    return register


def crash_kernel(name: str, op: str) -> Callable:
    """A kernel that takes the process down: not a plant of any rule (the
    sweep must survive it), installed by tests/site when CONFORMANCE_KERNEL
    names it."""

    def register(factory: Callable) -> Callable:
        SCHEMA_KERNELS[name] = (op, "CPU", lambda: factory(torch_module()))
        return factory

    return register


def override_kernel(name: str):
    """Install one kernel plant; returns the Library (destroy it to undo)."""
    import warnings

    torch = torch_module()
    op, key, factory = SCHEMA_KERNELS[name]
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
        library.impl(op, factory(), key)
    return library


def install(name: str) -> None:
    (PLANTS.get(name) or PLANTS_PROBLEMS.get(name) or LACKING[name]).install()
