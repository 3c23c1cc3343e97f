"""A gradient that sums terms, in stages torch rounds in the gradient's dtype,
is held to a few epsilons of its terms (conformance/summing.py)."""

from __future__ import annotations

import numpy as np
import torch

from conformance.check import close
from conformance.summing import summed_tolerance
from oracle.nodes import sum_to
from strategies.layouts import Layout, ViewStep
from strategies.tensors import build_case


def test_an_expanded_srcs_gradient_is_held_to_the_terms_it_sums():
    # a thorough run on 2.13.0 (copy.grad_flows_to_src): float16 dst.copy_(src)
    # with src = root.expand(3, 1, 1) of a (1, 1, 1) root; src's gradient is
    # float16, its third element 34.046875 rounds to 34.0625, and the root's
    # gradient, -31 + 34.0625, is 3.0625 where the sum of every term is 3.046875
    g = np.zeros((3, 4, 4))
    g[1, 3, 2:] = [-11, -20]
    g[2, 0, 0] = 22
    g[2, 1, 2:] = [-24, -16]
    g[2, 2] = [-36, 56, -24, -24]
    g[2, 3] = [-48, 56, 72, 0.046875]
    layout = Layout("expanded", (3, 1, 1), (1, 1, 1), (ViewStep("expand", ((3, 1, 1),)),))
    src = build_case(np.zeros((1, 1, 1)), "float16", "cpu", "view", layout)
    dst = torch.zeros(3, 4, 4, dtype=torch.float16)
    dst.copy_(src.tensor)
    dst.backward(torch.tensor(g, dtype=torch.float16))
    got = src.root.grad.numpy()
    expected = src.grad_for_root(sum_to(g, src.shape))
    assert expected.tolist() == [[[3.046875]]]
    assert not close(got, expected, "float16")  # the dtype's own tolerance: a false alarm
    tolerance = summed_tolerance("float16", g, src)
    assert close(got, expected, "float16", tolerance)
    assert not close(got + 4, expected, "float16", tolerance)  # 8 eps of the 409 summed
    # where nothing is summed, the dtype's own tolerance stays
    plain = Layout("contiguous", (3, 4, 4), (3, 4, 4), ())
    assert (
        summed_tolerance("float16", g, build_case(g * 0, "float16", "cpu", "leaf", plain)) is None
    )
