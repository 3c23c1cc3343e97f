"""copy.*: copy_ writing, keeping storage, recording and passing gradient wrongly."""

from __future__ import annotations

from .patch import methods, runs_under, set_version
from .registry import plant


def _last_element(t):
    return t[(-1,) * t.dim()] if t.dim() else t


def _misses_last(torch, when) -> None:
    """copy_ leaves dst's last element as it was, where when(dst)."""

    def copy_(orig, self, src, *a, **k):
        if self.numel() < 2 or not when(self):
            return orig(self, src, *a, **k)
        with torch.no_grad():
            keep = _last_element(self).clone()
        out = orig(self, src, *a, **k)
        with torch.no_grad():
            orig(_last_element(torch._C.TensorBase.data.__get__(self)), keep)
        return out

    methods("copy_", copy_)


@plant("copy_misses_last", "copy.values_copied", "copy_ leaves dst's last element as it was")
def _(torch):
    _misses_last(torch, lambda dst: True)


@plant(
    "copy_misses_last@strided",
    "copy.values_copied",
    "copy_ into a non-contiguous dst leaves its last element as it was",
)
def _(torch):
    _misses_last(torch, lambda dst: not dst.is_contiguous())


@plant("copy_moves_storage", "copy.keeps_storage", "copy_ gives dst a new storage")
def _(torch):
    data = torch._C.TensorBase.data

    def copy_(orig, self, src, *a, **k):
        out = orig(self, src, *a, **k)
        data.__set__(self, data.__get__(self).clone())
        return out

    methods("copy_", copy_)


@plant("copy_untracked", "copy.result_in_graph", "copy_ into a plain dst is not recorded")
def _(torch):
    methods("copy_", runs_under(torch.no_grad, lambda self, *a, **k: not self.requires_grad))


@plant("copy_doubles_grad", "copy.grad_flows_to_src", "copy_'s gradient to src is doubled")
def _(torch):
    def copy_(orig, self, src, *a, **k):
        if (
            torch.is_grad_enabled()
            and src.requires_grad
            and self.is_floating_point()
            and src.is_floating_point()
        ):
            orig(self, src * 2, *a, **k)
            with torch.no_grad():
                torch._C.TensorBase.data.__get__(self).div_(2)
            return self
        return orig(self, src, *a, **k)

    methods("copy_", copy_)


@plant("copy_leaks_grad", "copy.overwritten_gets_no_grad", "overwritten values still get gradient")
def _(torch):
    def copy_(orig, self, src, *a, **k):
        if not (self.requires_grad and torch.is_grad_enabled() and not self.is_leaf):
            return orig(self, src, *a, **k)
        old = self + 0
        orig(self, src, *a, **k)
        version = self._version
        finite = torch.where(old.isfinite(), old, torch.zeros_like(old))
        self.add_(finite - finite.detach())  # adds zero, and a path to the old values
        set_version(self, version)
        return self

    methods("copy_", copy_)


@plant("copy_into_leaf", "copy.into_grad_leaf_raises", "copy_ into a grad leaf is allowed")
def _(torch):
    methods(
        "copy_",
        runs_under(torch.no_grad, lambda self, *a, **k: self.is_leaf and self.requires_grad),
    )
