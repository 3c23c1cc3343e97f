"""What attribution knows about a discrepancy's run: how the pool's tensors
came from each other (the chain of origins, ancestry, the relation each op
makes between its result and its operand), what each step wrote, and
whether a variant of the chain fails again the same way."""

from __future__ import annotations

from dataclasses import replace

from conformance.differential.lockstep import execute
from conformance.differential.minimize import same_failure
from conformance.differential.observe import RAISES, UNREAD
from conformance.differential.run import Discrepancy, Run
from oracle import OPS, OracleError
from strategies.programs import Step

# The relation an op creates between its result and its first operand.
RELATION = {
    "clone": "clone",
    "detach": "detach",
    "data": "data",
    "zeros_like": "op",
    "reshape": "view",
    # lazily resolved views (conj(), _neg_view()) and what materialises them
    "conj": "conj",
    "neg_view": "conj",
    "resolve_conj": "resolve",
    "resolve_neg": "resolve",
    # views that read memory as another dtype
    "view_as_real": "reinterpret",
    "view_as_complex": "reinterpret",
    "real": "reinterpret",
    "imag": "reinterpret",
    "view_dtype": "dtype_view",
}

# ops no gradient flows back through, from their result to their operand
GRAD_OPAQUE = ("zeros_like", "detach", "data", "detach_", "leaf")


# When no single link misbehaves on its own, the relation that most
# constrains the pair decides.
PRIORITY = ("resolve", "clone", "copy", "data", "set_data", "detach", "conj", "reinterpret")
PRIORITY += ("dtype_view", "view", "op")


def relation_of(op: str) -> str:
    if op in RELATION:
        return RELATION[op]
    if op == "leaf":
        return "op"
    return "view" if OPS[op].view else "op"


class Facts:
    """What attribution needs to know about a run, computed on demand."""

    def __init__(self, run: Run, d: Discrepancy) -> None:
        self.run, self.d = run, d
        self.steps = run.program.steps
        self.step = self.steps[d.step]
        self.origins = run.origins

    def fails_again(self, steps: list[Step]) -> bool:
        """Whether `steps`, a variant of the chain up to the failing step, fail
        there the same way."""
        run, found = execute(replace(self.run.program, steps=steps), exhaustive=True)
        return found is not None and found.step == self.d.step and same_failure(self.d)(run, found)

    # -- lineage --------------------------------------------------------
    def is_leaf(self, i: int) -> object:
        """The model's is_leaf for pool tensor `i` (True, False or RAISES): as
        observed, or, where a lazy program left it unread, read from the model
        now (the run is over: a regenerated grad_fn changes nothing after it)."""
        ours = self.run.observed[0][i].is_leaf
        if ours is not UNREAD:
            return ours
        try:
            return self.run.oracle_pool[i].is_leaf
        except OracleError:
            return RAISES

    def chain(self, i: int) -> list[int]:
        """i, its first operand, that one's first operand... up to a leaf."""
        out = [i]
        while self.origins[out[-1]].parents and self.origins[out[-1]].op != "leaf":
            parent = self.origins[out[-1]].parents[0]
            if parent in out:
                break
            out.append(parent)
        return out

    def ancestry(
        self, i: int, writes: bool = True, grad_only: bool = False, upto: int | None = None
    ) -> set[int]:
        """Every pool tensor `i` was computed from, operands of all kinds, and
        (with `writes`) whatever was written into it in place before step
        `upto` (default: up to the discrepancy); with `grad_only`, only through
        ops a gradient can flow back through."""
        end = self.d.step + 1 if upto is None else upto
        seen, stack = set(), [i]
        while stack:
            j = stack.pop()
            if j in seen or j >= len(self.origins):
                continue
            seen.add(j)
            if not (grad_only and self.origins[j].op in GRAD_OPAQUE):
                stack.extend(self.origins[j].parents)
            if writes:
                for step in self.steps[:end]:
                    if self._writes(step) == j:
                        stack.extend(step.tensors[1:])
        return seen

    def path(self, i: int, j: int) -> list[tuple[int, int]] | None:
        """Links (child, parent) between i and j through their lowest common
        ancestor, or None if they share none."""
        a, b = self.chain(i), self.chain(j)
        common = next((x for x in a if x in b), None)
        if common is None:
            return None
        links = []
        for c in (a, b):
            k = c.index(common)
            links += [(c[n], c[n + 1]) for n in range(k)]
        return links

    def relation(self, i: int, j: int, prop: str) -> str:
        links = self.path(i, j)
        if links is None:
            if self._copied_between(i, j):
                return "copy"
            # no common ancestor: their memory is shared, if at all, through
            # `x.data = y` on one of them (y of another dtype included)
            set_data = any(s.op == "set_data" for s in self._steps_on(i, j))
            return "set_data" if set_data else "op"
        for child, parent in links:
            if self._link_misbehaves(child, parent, prop):
                return self._relation_of(child)
        kinds = {self._relation_of(c) for c, _ in links}
        kinds |= {"set_data"} if any(s.op == "set_data" for s in self._steps_on(i, j)) else set()
        return next((k for k in PRIORITY if k in kinds), "op")

    def _relation_of(self, i: int) -> str:
        """relation_of its op; H, mH, adjoint() of a complex tensor are conj views."""
        op, pool = self.origins[i].op, self.run.oracle_pool
        if op in ("H", "mH", "adjoint") and i < len(pool) and pool[i].conj:
            return "conj"
        return relation_of(op)

    def _steps_on(self, i: int, j: int):
        return [s for s in self.steps[: self.d.step + 1] if set(s.tensors) & {i, j}]

    def _copied_between(self, i: int, j: int) -> bool:
        return any(
            s.op == "copy_" and set(s.tensors[:2]) == {i, j} for s in self.steps[: self.d.step + 1]
        )

    def _link_misbehaves(self, child: int, parent: int, prop: str) -> bool:
        ours, theirs = self.run.observed
        if prop in ("storage", "write"):
            return (ours[child].storage == ours[parent].storage) != (
                theirs[child].storage == theirs[parent].storage
            )
        if prop == "version":
            prev_o, prev_t = self._previous()
            if max(child, parent) >= len(prev_o):
                return False
            d_o = [ours[k].version - prev_o[k].version for k in (child, parent)]
            d_t = [theirs[k].version - prev_t[k].version for k in (child, parent)]
            return (d_o[0] == d_o[1]) != (d_t[0] == d_t[1])
        return False

    def _previous(self):
        return self.run.previous

    # -- steps ------------------------------------------------------------
    @staticmethod
    def _writes(step) -> int | None:
        """The pool index a step writes into, if it writes."""
        if step.op == "leaf":
            return None
        spec = OPS[step.op]
        if spec.inplace or step.op in ("set_data", "detach_"):
            return step.tensors[0]
        return None

    def written(self) -> int | None:
        return self._writes(self.step)

    def new_result(self, i: int) -> bool:
        return self.origins[i].step == self.d.step

    def writes_through(self, kind: str) -> bool:
        """Some earlier step wrote in place into a tensor made by `kind` (or
        into a view of one)."""
        for step in self.steps[: self.d.step]:
            target = self._writes(step)
            if target is not None and any(self.origins[k].op == kind for k in self.chain(target)):
                return True
        return False

    def via(self, i: int, kinds: tuple[str, ...]) -> bool:
        return any(self.origins[k].op in kinds for k in self.ancestry(i))
