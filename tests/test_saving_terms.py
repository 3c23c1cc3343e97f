"""A saver whose gradient formula cancels (tanh's 1 - r * r) is compared with an
absolute part that scales with its terms (conformance/test_data.py)."""

from __future__ import annotations

import numpy as np
import torch

from conformance.check import TOLERANCES, close
from conformance.saving import SAVERS
from oracle.tolerances import summed_atol


def test_tanhs_cancelling_gradient_is_held_to_its_terms():
    # a thorough run on 2.13.0: complex64 x = 2.5+0.5j, g = 0.5j; .data.add_(0j)
    tanh = next(s for s in SAVERS if s.name == "y = x.tanh()")
    x = torch.tensor([2.5 + 0.5j], dtype=torch.complex64, requires_grad=True)
    g = np.array([0.5j])
    y = x.tanh()
    y.backward(torch.tensor(g, dtype=torch.complex64))
    r = y.detach().numpy().astype(np.complex128)
    expected = tanh.grad(g, r)
    actual = x.grad.numpy()
    assert not close(actual, expected, "complex64")  # the dtype's rtol alone: a false alarm
    rtol, _ = TOLERANCES["complex64"]
    terms = float(np.max(tanh.terms(np.abs(g), np.abs(r))))
    assert close(actual, expected, "complex64", (rtol, summed_atol("complex64", terms)))
    assert not close(actual * 1.001, expected, "complex64", (rtol, summed_atol("complex64", terms)))
