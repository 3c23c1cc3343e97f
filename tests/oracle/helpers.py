"""Small helpers shared by the oracle's tests (no torch anywhere here)."""

from __future__ import annotations

import numpy as np

from oracle import Engine, OracleError

F64 = "float64"


def run(program, arrays, dtype=F64, grad_out=None):
    """Run program(eng, leaves) -> OTensor; backward with grad_out; return (out, grads)."""
    eng = Engine()
    leaves = [eng.leaf(a, dtype, requires_grad=True) for a in arrays]
    out = program(eng, leaves)
    w = np.ones(out.shape) if grad_out is None else grad_out
    eng.call("backward_g", [out, eng.leaf(w, out.dtype)], (False,))
    return out, [leaf.grad for leaf in leaves]


def numeric_grads(program, arrays, dtype, grad_out, eps=1e-6):
    """Central differences of L = Re(sum(conj(w) * out)) w.r.t. each input's real and
    imaginary parts, combined as dL/dx + i dL/dy: PyTorch's convention for .grad."""

    def loss(arrs):
        eng = Engine()
        out = program(eng, [eng.leaf(a, dtype) for a in arrs]).values()
        return float(np.real(np.sum(np.conj(grad_out) * out)))

    arrays = [np.array(a) for a in arrays]
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        units = (1, 1j) if np.iscomplexobj(a) else (1,)
        for idx in np.ndindex(a.shape):
            for unit in units:
                plus, minus = [x.copy() for x in arrays], [x.copy() for x in arrays]
                plus[i][idx] += eps * unit
                minus[i][idx] -= eps * unit
                g[idx] += (loss(plus) - loss(minus)) / (2 * eps) * unit
        grads.append(g)
    return grads


def raises(kind, fn, *args):
    """fn(*args) raises OracleError of this kind."""
    try:
        fn(*args)
    except OracleError as e:
        assert e.kind is kind, f"raised {e.kind}, expected {kind}"
        return
    raise AssertionError(f"did not raise {kind}")
