""".grad: accumulation across calls and paths, leaves only, retain_grad, and
the errors backward raises."""

from __future__ import annotations

import warnings

import numpy as np
import torch
from hypothesis import assume
from hypothesis import strategies as st

from conformance.check import (
    attributed_to,
    expect,
    expect_no_raise,
    expect_raises,
    expect_values,
)
from conformance.harness import rule_test
from conformance.saving import draw_scenario
from oracle.dtypes import round_to
from strategies.argspace import Operand, arguments, keywords
from strategies.dtypes import DTYPES, arrays
from strategies.gradapi_args import SPACES
from strategies.tensors import GRAD_ROLES, to_numpy


def _as_tensor(values: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(values, dtype=like.dtype, device=like.device)


@rule_test("grad.accumulates_across_backward")
def test_grad_accumulates_across_backward_calls(ex):
    x = ex.tensor("x", roles=GRAD_ROLES)
    total = np.zeros(tuple(x.root.shape), dtype=DTYPES[x.dtype].compute_dtype)
    calls = ex.draw(st.integers(2, 4), "backward calls")
    for call in range(1, calls + 1):
        scale = ex.draw(st.integers(-3, 3), f"scale {call}")
        grad = ex.gradient(x, f"gradient {call}")
        with attributed_to("grad.accumulates_across_backward", f"backward call {call}"):
            # retain_graph: x itself may come out of a graph that saved something
            (x.tensor * scale).backward(_as_tensor(grad, x.tensor), retain_graph=True)
        # each backward rounds its sum into .grad in the leaf's dtype
        total = round_to(total + round_to(x.grad_for_root(grad * scale), x.dtype), x.dtype)
        expect_values(
            "grad.accumulates_across_backward",
            x.root.grad,
            total,
            f".grad after backward call {call}",
        )


_PATHS = (
    ("x * {0}", lambda x, s: x * s, lambda s: s),
    ("(x + 0) * {0}", lambda x, s: (x + 0) * s, lambda s: s),
    ("x.neg() * {0}", lambda x, s: x.neg() * s, lambda s: -s),
    ("x.clone() * {0}", lambda x, s: x.clone() * s, lambda s: s),
    ("x.view_as(x) * {0}", lambda x, s: x.view_as(x) * s, lambda s: s),
)


@rule_test("grad.accumulates_across_paths")
def test_grad_sums_over_paths(ex):
    x = ex.tensor("x", roles=GRAD_ROLES)
    paths = ex.draw(st.lists(st.sampled_from(_PATHS), min_size=2, max_size=4), "paths")
    scales = [ex.draw(st.integers(-3, 3), f"scale of path {i + 1}") for i in range(len(paths))]
    out = sum(f(x.tensor, s) for (_, f, _), s in zip(paths, scales, strict=True))
    grad = ex.gradient(x)
    with attributed_to("grad.accumulates_across_paths", "backward"):
        out.backward(_as_tensor(grad, x.tensor))
    factor = sum(d(s) for (_, _, d), s in zip(paths, scales, strict=True))
    names = " + ".join(n.format(s) for (n, _, _), s in zip(paths, scales, strict=True))
    expect_values(
        "grad.accumulates_across_paths",
        x.root.grad,
        x.grad_for_root(grad * factor),
        f"the leaf's gradient of {names}",
    )


# y = path(x): view-like paths (where torch 2.0-2.14 hand g itself to the
# leaf's .grad, pytorch#34082) and arithmetic ones, with the factor each
# scales the gradient by
_HANDED_PATHS = (
    ("x", lambda x: x, 1),
    ("x.view_as(x)", lambda x: x.view_as(x), 1),
    ("x.reshape(x.shape)", lambda x: x.reshape(x.shape), 1),
    ("x.view(x.shape)", lambda x: x.view(x.shape), 1),
    ("x * 1", lambda x: x * 1, 1),
    ("x.neg()", lambda x: x.neg(), -1),
)


@rule_test("grad.gradient_argument_kept")
def test_the_gradient_handed_to_backward_is_only_read(ex):
    x = ex.tensor("x", roles=GRAD_ROLES)
    name, path, factor = ex.draw(st.sampled_from(_HANDED_PATHS), "y = path(x)")
    grad = ex.gradient(x)
    g = _as_tensor(grad, x.tensor)
    with attributed_to("grad.gradient_argument_kept", f"y = {name}; y.backward(g)"):
        path(x.tensor).backward(g, retain_graph=True)
    expected = x.grad_for_root(grad * factor)
    version = g._version
    with torch.no_grad():
        g.add_(1)  # the user's own tensor: theirs to write
    expect_values(
        "grad.gradient_argument_kept",
        x.root.grad,
        expected,
        f"the leaf's .grad after y = {name}; y.backward(g), then g.add_(1)",
    )
    written = to_numpy(g).copy()
    with attributed_to("grad.gradient_argument_kept", f"a second backward of y = {name}"):
        path(x.tensor).backward(_as_tensor(grad, x.tensor))
    expect_values(
        "grad.gradient_argument_kept",
        g,
        written,
        f"g after a second backward of y = {name}, once g had been handed to the first",
    )
    expect(
        "grad.gradient_argument_kept",
        g._version == version + 1,
        f"g's version is {g._version} after g.add_(1) and a second backward; "
        f"it was {version} before g.add_(1)",
    )


@rule_test("grad.matches_leaf")
def test_grad_has_leaf_shape_dtype_device(ex):
    x = ex.tensor("x", roles=GRAD_ROLES)
    (x.tensor * 2).backward(_as_tensor(ex.gradient(x), x.tensor))
    g, leaf = x.root.grad, x.root
    expect("grad.matches_leaf", g is not None, "backward left the leaf's .grad None")
    got, want = (g.shape, g.dtype, g.device), (leaf.shape, leaf.dtype, leaf.device)
    expect("grad.matches_leaf", got == want, f".grad is {got}, the leaf is {want}")


@rule_test("grad.leaves_only")
def test_backward_fills_grad_of_leaves_only(ex):
    x = ex.tensor("x", roles=("view", "nonleaf"))
    y = x.tensor * 2
    y.backward(_as_tensor(ex.gradient(x), x.tensor))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reading a non-leaf's .grad warns
        got = (x.tensor.grad, y.grad)
    expect(
        "grad.leaves_only",
        got == (None, None),
        f"non-leaf .grad after backward: x.grad={got[0]}, y.grad={got[1]}",
    )
    expect("grad.leaves_only", x.root.grad is not None, "the leaf's .grad stayed None")


@rule_test("grad.retain_grad")
def test_retain_grad(ex):
    x = ex.tensor("x", roles=GRAD_ROLES)
    scale = ex.draw(st.integers(-3, 3), "scale")
    x.tensor.retain_grad()
    grad = ex.gradient(x)
    (x.tensor * scale).backward(_as_tensor(grad, x.tensor))
    if x.tensor.is_leaf:
        expect(
            "grad.retain_grad",
            not x.tensor.retains_grad,
            "retain_grad() on a leaf set retains_grad",
        )
        expect_values("grad.retain_grad", x.tensor.grad, grad * scale, "the leaf's .grad")
        return
    expect("grad.retain_grad", x.tensor.retains_grad, "retain_grad() did not set retains_grad")
    expect("grad.retain_grad", x.tensor.grad is not None, "the non-leaf's .grad stayed None")
    expect_values("grad.retain_grad", x.tensor.grad, grad * scale, "the retained .grad")


@rule_test("grad.backward_twice_raises")
def test_second_backward_needs_retain_graph(ex):
    scenario = draw_scenario(ex)
    # True, False or left out, which "defaults to the value of create_graph"
    operand = Operand(tuple(scenario.y.shape))
    (retain,) = ex.draw(arguments(SPACES["backward_g"], operand), "retain_graph on the first call")
    with attributed_to("grad.backward_twice_raises", f"the first backward, {retain=}"):
        scenario.y.backward(scenario.gradient, **keywords(retain_graph=retain))
    first = scenario.x.root.grad.clone()
    if retain:
        expect_no_raise(
            "grad.backward_twice_raises",
            lambda: scenario.y.backward(scenario.gradient),
            f"a second backward of {scenario.op} after retain_graph=True",
        )
        expect_values(
            "grad.backward_twice_raises",
            scenario.x.root.grad,
            2 * to_numpy(first),
            "the leaf's .grad after two backward calls",
        )
    else:
        expect_raises(
            "grad.backward_twice_raises",
            "BACKWARD_TWICE",
            lambda: scenario.y.backward(scenario.gradient),
            f"a second backward of {scenario.op} after retain_graph={retain!r}",
        )


@rule_test("grad.nonscalar_needs_gradient")
def test_implicit_gradient_only_for_real_scalars(ex):
    x = ex.tensor("x", roles=GRAD_ROLES)
    y = x.tensor * 2
    if y.numel() != 1 or y.is_complex():
        expect_raises(
            "grad.nonscalar_needs_gradient",
            "NONSCALAR_BACKWARD",
            y.backward,
            f"backward() without a gradient on {y.dtype}{list(y.shape)}",
        )
        return
    expect_no_raise("grad.nonscalar_needs_gradient", y.backward, "backward() of a one-element y")
    expected = x.grad_for_root(np.full(x.shape, 2.0))
    expect_values("grad.nonscalar_needs_gradient", x.root.grad, expected, "implicit gradient")


@rule_test("grad.requires_graph")
def test_backward_without_graph_raises(ex):
    x = ex.tensor("x", roles=("plain",))
    assume(x.tensor.numel() > 0)
    grad_mode = ex.draw(st.booleans(), "grad mode when computing")
    with torch.set_grad_enabled(grad_mode):
        y = x.tensor.sum()
    expect_raises(
        "grad.requires_graph",
        "NO_GRAD_FN",
        y.backward if not y.is_complex() else lambda: y.backward(torch.ones_like(y)),
        f"backward of sum() of a {x.dtype} tensor that does not require grad",
    )


# what happens to x's leaf between reads of its .grad: a backward (plain or
# with create_graph=True) through y = x * scale, or the leaf's .data replaced
_GRAD_EVENTS = ("backward", "backward(create_graph=True)", "leaf.data = new values")


@rule_test("grad.accumulates_in_place")
def test_accumulation_keeps_the_grad_tensor(ex):
    """A reference to .grad taken before each event: a plain backward adds
    into that very tensor (the reference sees the sum), .data = ... leaves it
    there, and a backward with create_graph=True puts a new tensor in its place
    and leaves the old one as it was (accumulate_grad.h)."""
    x = ex.tensor("x", roles=GRAD_ROLES)
    leaf = x.root
    total = None  # .grad's values, in the compute dtype
    events = ex.draw(st.lists(st.sampled_from(_GRAD_EVENTS), min_size=2, max_size=5), "events")
    for number, event in enumerate(events, 1):
        held = leaf.grad
        kept = None if held is None else to_numpy(held).copy()
        what = f"event {number}, {event}"
        if event.startswith("leaf.data"):
            fresh = ex.draw(arrays(x.dtype, tuple(leaf.shape)), f"new values {number}")
            leaf.data = _as_tensor(fresh, leaf)
        else:
            scale = ex.draw(st.integers(-3, 3), f"scale {number}")
            grad = ex.gradient(x, f"gradient {number}")
            create_graph = event.endswith("(create_graph=True)")
            with attributed_to("grad.accumulates_in_place", what), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # create_graph: "a reference cycle"
                (x.tensor * scale).backward(
                    _as_tensor(grad, x.tensor), retain_graph=True, create_graph=create_graph
                )
            added = round_to(x.grad_for_root(grad * scale), x.dtype)
            total = added if total is None else round_to(total + added, x.dtype)
        if total is None:  # no backward yet
            expect("grad.accumulates_in_place", leaf.grad is None, f".grad after {what}")
            continue
        expect("grad.accumulates_in_place", leaf.grad is not None, f".grad is None after {what}")
        expect_values("grad.accumulates_in_place", leaf.grad, total, f".grad after {what}")
        if held is None:
            continue
        replaced = event == "backward(create_graph=True)"
        expect(
            "grad.accumulates_in_place",
            (leaf.grad is held) is not replaced,
            f"after {what} x.grad is {'still' if leaf.grad is held else 'no longer'} the "
            f"tensor it was before",
        )
        if replaced:  # out of place: the old tensor keeps what it held
            expect_values("grad.accumulates_in_place", held, kept, f"the old .grad after {what}")
        else:  # in place: a reference taken before sees the sum
            expect_values("grad.accumulates_in_place", held, total, f"the old .grad after {what}")
