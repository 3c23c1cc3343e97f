"""grad.*: backward, .grad, requires_grad and torch.autograd.grad going wrong
(hooks are in hooks.py)."""

from __future__ import annotations

from .patch import leaves, methods, own_backward, results, walk, wrap, wrap_property
from .registry import plant


@plant("grad_overwrites", "grad.accumulates_across_backward", "backward overwrites .grad")
def _(torch):
    def backward(orig, self, *a, **k):
        for leaf in leaves(self):
            leaf.grad = None
        return orig(self, *a, **k)

    methods("backward", backward)


@plant(
    "grad_is_the_gradient_argument",
    "grad.gradient_argument_kept",
    "y.backward(g) of a leaf y makes g itself y.grad (pytorch#34082 through no view at all)",
)
def _(torch):
    def backward(orig, self, *a, **k):
        gradient = a[0] if a else k.get("gradient")
        fresh = self.is_leaf and self.requires_grad and self.grad is None
        orig(self, *a, **k)
        if fresh and gradient is not None and gradient.shape == self.shape:
            self.grad = gradient.detach()  # g's own memory and version counter

    methods("backward", backward)


def _zero_input(index: int, torch):
    def hook(grad_inputs, grad_outputs):
        grads = list(grad_inputs)
        if grads[index] is not None:
            grads[index] = torch.zeros_like(grads[index])
        return tuple(grads)

    return hook


@plant("grad_one_path", "grad.accumulates_across_paths", "a leaf gets one path's gradient")
def _(torch):
    def backward(orig, self, *a, **k):
        # every node past the first that feeds a leaf's AccumulateGrad
        # passes it zeros instead
        fed: set[int] = set()
        for node in walk(self.grad_fn):
            for index, (child, _) in enumerate(node.next_functions):
                if child is not None and hasattr(child, "variable"):
                    if id(child) in fed:
                        node.register_hook(_zero_input(index, torch))
                    fed.add(id(child))
        return orig(self, *a, **k)

    methods("backward", backward)


@plant("grad_upcast@half", "grad.matches_leaf", ".grad of a float16 leaf is float32")
def _(torch):
    def grad(get, self):
        g = get(self)
        return g.float() if g is not None and g.dtype == torch.float16 else g

    wrap_property("grad", get=grad)


@plant("grad_on_nonleaf", "grad.leaves_only", "a non-leaf's .grad reads as zeros")
def _(torch):
    def grad(get, self):
        g = get(self)
        if g is None and not self.is_leaf:
            return torch.zeros_like(self)
        return g

    wrap_property("grad", get=grad)


@plant("retain_grad_noop", "grad.retain_grad", "retain_grad() does nothing")
def _(torch):
    methods("retain_grad", lambda orig, self: None)


@plant("backward_retains", "grad.backward_twice_raises", "backward always retains the graph")
def _(torch):
    def backward(orig, self, gradient=None, retain_graph=None, *a, **k):
        return orig(self, gradient, True, *a, **k)

    methods("backward", backward)


@plant("backward_implicit_ones", "grad.nonscalar_needs_gradient", "backward() fills in ones")
def _(torch):
    def backward(orig, self, gradient=None, *a, **k):
        if gradient is None and (self.numel() != 1 or self.is_complex()):
            gradient = torch.ones_like(self)
        return orig(self, gradient, *a, **k)

    methods("backward", backward)


@plant("backward_without_graph_ok", "grad.requires_graph", "backward() of a plain tensor passes")
def _(torch):
    methods(
        "backward", lambda orig, self, *a, **k: orig(self, *a, **k) if self.requires_grad else None
    )


@plant("sin_drops_graph", "grad.requires_grad_propagates", "x.sin() of a grad tensor is detached")
def _(torch):
    results("sin", lambda self, out: out.detach() if self.requires_grad else out)


@plant("sigmoid_grad_wrong", "grad.formula", "sigmoid's backward forgets the (1 - r) factor")
def _(torch):
    def forward(ctx, orig, x):
        out = orig(x)
        ctx.save_for_backward(out)
        return out

    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * r.conj()

    own_backward("sigmoid", forward, backward, "Sigmoid")


@plant(
    "requires_grad_off_ignored",
    "grad.requires_grad_flag_on_leaves",
    "requires_grad_(False) on a non-leaf is silently ignored",
)
def _(torch):
    def requires_grad_(orig, self, requires_grad=True):
        if not requires_grad and not self.is_leaf:
            return self
        return orig(self, requires_grad)

    methods("requires_grad_", requires_grad_)


@plant(
    "autograd_grad_accumulates",
    "grad.autograd_grad_returns",
    "torch.autograd.grad also accumulates into the leaves' .grad, as backward does",
)
def _(torch):
    def grad(orig, outputs, inputs, grad_outputs=None, retain_graph=None, *a, **k):
        try:
            torch.autograd.backward(outputs, grad_outputs, retain_graph=True)
        except RuntimeError:
            pass  # the real call raises it again
        return orig(outputs, inputs, grad_outputs, retain_graph, *a, **k)

    wrap(torch.autograd, "grad", grad)


@plant(
    "autograd_grad_unused_silent",
    "grad.autograd_grad_returns",
    "torch.autograd.grad of an input the outputs do not use returns None where"
    " allow_unused is False or left out, instead of raising",
)
def _(torch):
    def grad(orig, *a, **k):
        if len(a) > 6:  # allow_unused passed by position
            a = (*a[:6], True, *a[7:])
        else:
            k["allow_unused"] = True
        return orig(*a, **k)

    wrap(torch.autograd, "grad", grad)


@plant(
    "grad_assign_unchecked",
    "grad.assign_checks",
    "x.grad = g of another shape or dtype is silently ignored instead of refused",
)
def _(torch):
    def set_grad(put, self, value):
        try:
            put(self, value)
        except RuntimeError as error:
            if "attempting to assign a gradient" not in str(error):
                raise

    wrap_property("grad", put=set_grad)


@plant(
    "create_graph_detached",
    "grad.create_graph",
    "torch.autograd.grad(..., create_graph=True) hands back gradients outside any graph",
)
def _(torch):
    def grad(orig, outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, **k):
        got = orig(outputs, inputs, grad_outputs, retain_graph, create_graph, **k)
        if not create_graph:
            return got
        return tuple(None if g is None else g.detach() for g in got)

    wrap(torch.autograd, "grad", grad)


def _through_a_view_write(outputs) -> bool:
    """Whether the graph behind `outputs` holds a write into a view (CopySlices)."""
    outputs = (outputs,) if hasattr(outputs, "grad_fn") else tuple(outputs)
    return any(
        type(node).__name__ == "CopySlices"
        for t in outputs
        if t is not None
        for node in walk(t.grad_fn)
    )


@plant(
    "create_graph_detached@view_writes",
    "grad.create_graph",
    "create_graph=True through a write into a view (CopySlices) builds no graph: "
    "torch.autograd.grad's gradients and the leaves' .grad after backward come back detached",
)
def _(torch):
    def grad(orig, outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, **k):
        got = orig(outputs, inputs, grad_outputs, retain_graph, create_graph, **k)
        if not (create_graph and _through_a_view_write(outputs)):
            return got
        return tuple(None if g is None else g.detach() for g in got)

    def backward(orig, self, gradient=None, retain_graph=None, create_graph=False, *a, **k):
        reached = leaves(self) if create_graph and _through_a_view_write(self) else []
        orig(self, gradient, retain_graph, create_graph, *a, **k)
        for leaf in reached:
            if leaf.grad is not None:
                leaf.grad = leaf.grad.detach()

    wrap(torch.autograd, "grad", grad)
    methods("backward", backward)


@plant(
    "grad_accumulates_out_of_place",
    "grad.accumulates_in_place",
    "backward adds into a copy of .grad, which then replaces it: a reference taken earlier "
    "keeps the old values",
)
def _(torch):
    def backward(orig, self, *a, **k):
        for leaf in leaves(self):
            if leaf.grad is not None:
                leaf.grad = leaf.grad.clone()  # what AccumulateGrad then adds into
        return orig(self, *a, **k)

    methods("backward", backward)


@plant(
    "set_data_replaces_grad",
    "grad.accumulates_in_place",
    "x.data = y puts a copy of x.grad in its place (same values, another tensor)",
)
def _(torch):
    def put(write, self, value):
        write(self, value)
        g = self.grad
        if g is not None and g.dtype == self.dtype and g.device == self.device:
            self.grad = g.clone()

    wrap_property("data", put=put)
