"""The differential's lockstep comparison reads, after each step, only the
tensors the step can have changed, then every tensor after the last step; a
discrepancy makes it run the chain again reading everything after every
step. These tests hold it to what that promises: nothing it misses, and the
step it reports is the step where torch went wrong."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conformance.differential.listing import listing
from conformance.differential.lockstep import execute
from conformance.differential.minimize import well_formed, without
from conformance.differential.tolerated import cancelled_atol
from strategies.programs import Leaf, Program, Step


def _leaf(values, requires_grad=False) -> Step:
    array = np.array(values, dtype=np.float64)
    return Step("leaf", leaf=Leaf(array, "float32", "cpu", requires_grad))


# t0 and t1 are unrelated; t2 = t1.exp(); t3 = t1 * 2: nothing but t1 and
# its results can change after step 2
CHAIN = [
    _leaf([1.0, 2.0]),
    _leaf([0.5, 0.25]),
    Step("exp", (1,)),
    Step("mul_s", (1,), (2.0,)),
]


@pytest.fixture
def exp_writes_into_the_first_tensor(monkeypatch):
    """torch.Tensor.exp also writes, silently (no version bump), into the
    last tensor `torch.tensor` made holding [1, 2] (t0): memory no rule
    connects to the step."""
    made: list[torch.Tensor] = []
    real_tensor, real_exp = torch.tensor, torch.Tensor.exp

    def tensor(*args, **kwargs):
        result = real_tensor(*args, **kwargs)
        if result.tolist() == [1.0, 2.0]:
            made.append(result)
        return result

    def exp(self):
        with torch.no_grad():
            made[-1].data.add_(1)
        return real_exp(self)

    monkeypatch.setattr(torch, "tensor", tensor)
    monkeypatch.setattr(torch.Tensor, "exp", exp)


def test_a_clean_chain_agrees_both_ways():
    program = Program(list(CHAIN), render=listing)
    for exhaustive in (False, True):
        run, found = execute(program, exhaustive=exhaustive)
        assert found is None, found
        assert run.steps_checked == len(CHAIN)


@pytest.mark.usefixtures("exp_writes_into_the_first_tensor")
def test_a_write_into_memory_the_step_does_not_touch_is_found_where_it_happened():
    program = Program(list(CHAIN), render=listing)
    run, found = execute(program)
    assert found is not None
    # reported as the exhaustive run sees it: after step 2 (the exp), on t0
    assert (found.step, found.kind, found.tensors) == (2, "values", (0,)), found
    again = execute(program, exhaustive=True)[1]
    assert again is not None and again.message == found.message


def test_repro_scripts_compare_empty_tensors_with_their_shape():
    from conformance.differential.listing import _HELPERS, _values

    scope: dict = {"torch": torch}
    exec(_HELPERS, scope)  # noqa: S102 - the helpers every repro script starts with
    close = scope["close"]
    empty = np.zeros((0, 2))
    expected = eval(_values(empty), scope)  # noqa: S307 - as the script spells it
    assert close(torch.empty((0, 2)), expected, 0.0, 0.0)
    assert not close(torch.empty((0, 3)), expected, 0.0, 0.0)
    assert close(torch.tensor([1.0, 2.0]), eval(_values(np.array([1.0, 2.0])), scope), 0.0, 0.0)  # noqa: S307


def test_minimizer_plain_values_keep_the_leaf_kind():
    import numpy as np

    from conformance.differential.minimize import _plain_values
    from strategies.programs import Leaf, Step

    leaf = Leaf(np.array([2.0, 3.0]), "float32", "cpu", requires_grad=False, inference=True)
    plain = _plain_values(Step("leaf", leaf=leaf)).leaf
    assert plain.inference and plain.dtype == "float32" and not plain.requires_grad
    assert plain.values.tolist() == [1.0, 1.0]


def test_a_refusal_torch_may_make_instead_ends_the_chain_without_a_finding():
    """x[...] = scalar on expanded memory: torch 2.13 refuses, 2.0 filled; the
    model takes either (Engine.may_refuse) and compares nothing after it."""
    chain = [
        _leaf([1.0, 2.0, 3.0]),
        Step("expand", (0,), ((2, 3),)),
        Step("setitem_s", (1,), ((slice(None),), 0.0)),
        Step("mul_s_", (0,), (2.0,)),
    ]
    run, found = execute(Program(chain, render=listing))
    assert found is None, found
    # the chain ends at the setitem, refused (2.2 on) or filled (2.0, 2.1)
    assert run.steps_checked < len(chain)


def test_a_refusal_torch_may_make_first_wins_over_the_models_later_error():
    """An inference tensor's expanded view, t1[:] = t0 (0-d: fill_): 2.2 on refuse
    the overlap before anything is written, where the model fills, then raises
    INFERENCE_INPLACE as 2.0 and 2.1 do (a ci run at seed 7 on 2.13.0)."""
    chain = [
        Step("leaf", leaf=Leaf(np.array(1.0), "float64", "cpu", False, inference=True)),
        Step("expand", (0,), ((2,),)),
        Step("setitem", (1, 0), ((slice(None),),)),
    ]
    _, found = execute(Program(chain, render=listing))
    assert found is None, found  # (2.0.1: both raise INFERENCE_INPLACE)


def test_a_cut_chain_whose_steps_no_longer_make_their_tensors_is_not_run():
    """Without the resize_, reshaping the empty t0 to (3, 2) raises and makes
    no t1: the minimizer must not run the mul_s that uses t1."""
    chain = [
        Step("leaf", leaf=Leaf(np.ones(0), "float32", "cpu", False)),
        Step("resize_", (0,), ((2, 3),)),
        Step("reshape", (0,), ((3, 2),)),
        Step("mul_s", (1,), (2.0,)),
    ]
    program = Program(chain, render=listing)
    assert well_formed(program)
    assert not well_formed(without(program, {1}))


def test_an_empty_leaf_is_the_tensor_its_listing_spells():
    """NumPy gives a new empty array zero strides and torch.tensor keeps them, while
    view_as_complex checks an empty tensor's strides as any other's: torch must run the
    leaf that the listing, the repro script and the model build (strides (2, 2, 1))."""
    leaf = Leaf(np.ones((1, 0, 2)), "float32", "cpu", requires_grad=True)
    chain = [Step("leaf", leaf=leaf), Step("clone", (0,)), Step("view_as_complex", (1,))]
    run, found = execute(Program(chain, render=listing))
    assert found is None, found
    spelled = eval(leaf.source(), {"torch": torch})  # noqa: S307 - as the listing spells it
    for t in (run.torch_pool[0], run.torch_pool[1], spelled):
        assert (t.stride(), t.storage_offset()) == ((2, 2, 1), 0)
    assert tuple(run.oracle_pool[0].strides) == (2, 2, 1)
    assert tuple(run.torch_pool[2].stride()) == (1, 1)


def test_a_tensor_case_is_the_tensor_its_source_spells():
    """Sizes, strides and storage offset, for an empty root as for any other."""
    from strategies.layouts import Layout, ViewStep
    from strategies.tensors import ROLES, build_case

    layouts = [
        Layout("contiguous", (1, 0, 2), (1, 0, 2), ()),
        Layout("strided", (1, 0, 2), (1, 0, 4), (ViewStep("slice", (2, 1, None, 2)),)),
        Layout("offset", (1, 0, 2), (1, 0, 3), (ViewStep("slice", (2, 1, 3, 1)),)),
        Layout("transposed", (2, 1, 0), (0, 2, 1), (ViewStep("permute", ((1, 2, 0),)),)),
    ]
    for layout in layouts:
        for role in ROLES:
            case = build_case(np.ones(layout.root_shape), "float32", "cpu", role, layout)
            scope: dict = {"torch": torch}
            exec(case.source("x"), scope)  # noqa: S102 - as a repro spells it
            built, spelled = case.tensor, scope["x"]
            assert (built.shape, built.stride(), built.storage_offset()) == (
                spelled.shape,
                spelled.stride(),
                spelled.storage_offset(),
            ), (role, str(layout))


def test_reading_a_grad_leaves_the_memory_it_shares_resizable():
    """t0.grad is the gradient handed to backward (pytorch#34082): reading it with
    Tensor.numpy would mark that tensor's storage non-resizable, and the resize_ of
    a tensor set_ to it would raise in the run where the repro script passes."""
    chain = [
        _leaf([[1.0, 1.0], [1.0, 1.0]], requires_grad=True),
        Step("reshape", (0,), ((1, 2, 2),)),
        _leaf([[[1.0, 1.0], [1.0, 1.0]]]),
        Step("backward_g", (1, 2), (False,)),
        _leaf([[1.0, 1.0], [1.0, 1.0]]),
        Step("set_", (3, 2), no_grad=True),
        Step("resize_", (3,), ((2, 2, 2, 2),), no_grad=True),
    ]
    unbumped = torch.__version__ < "2.1"  # resize_ bumps no version (pytorch#93776)
    for exhaustive in (False, True):
        run, found = execute(Program(chain, render=listing), exhaustive=exhaustive)
        if unbumped and found is not None and (found.step, found.kind) == (6, "version"):
            found = None
        assert found is None, found
        assert tuple(run.torch_pool[3].shape) == (2, 2, 2, 2)


def test_a_foreach_list_whose_second_pair_reads_what_the_first_writes_is_not_compared():
    """torch._foreach_mul_([t1, t1[:1]], [t3, t4]) saves t1[:1] for t4's gradient
    before t1 is written (every node saves before any write), while the values are
    those of the writes in order: the model marks the call undefined and compares
    nothing after it, where it used to report a wrong gradient for t4."""

    def leaf(values, requires_grad=False) -> Step:
        array = np.array(values, dtype=np.complex128)
        return Step("leaf", leaf=Leaf(array, "complex64", "cpu", requires_grad))

    chain = [
        leaf([[1.0, 1.0], [1.0, 1.0]], requires_grad=True),
        Step("mul_s", (0,), (-0.25 + 6.5j,)),
        Step("getitem", (1,), ((slice(None, 1), slice(None, 1)),)),
        leaf([0.5 - 0.9375j, 1.75 + 1.375j]),
        leaf([[1.0]], requires_grad=True),
        Step("foreach_mul_l_", (1, 2, 3, 4)),
        leaf([[1.0]]),
        Step("backward_g", (2, 5), (False,)),
    ]
    run, found = execute(Program(chain, render=listing))
    assert found is None, found
    assert run.steps_checked == 6  # the chain ends at the call
    # a view of a different tensor's memory is compared through the backward
    chain[2] = Step("mul_s", (1,), (1.0,))
    run, found = execute(Program(chain, render=listing))
    assert found is None, found
    assert run.steps_checked == len(chain)


def test_a_foreach_list_whose_written_tensors_share_memory_is_not_compared():
    """torch._foreach_mul_([t2, t3], c) with t3 = t2.transpose(2, 2), a second view
    of t2's memory (a thorough run on 2.13.0: foreach.inplace_grad, t0.grad off):
    like the same tensor twice, what the graph records is undefined."""

    def leaf(values, requires_grad=False) -> Step:
        array = np.array(values, dtype=np.complex128)
        return Step("leaf", leaf=Leaf(array, "complex64", "cpu", requires_grad))

    chain = [
        leaf(np.ones((1, 2, 3, 2)), requires_grad=True),
        Step("mul_s", (0,), (-1.5 - 5.5j,)),
        Step("getitem", (1,), ((slice(None), 0),)),
        Step("transpose", (2,), (2, 2)),
        Step("foreach_mul_s_", (2, 3), (-0.1875 + 3j,)),
        leaf(np.ones((1, 3, 2))),
        Step("backward_g", (2, 4), (True,)),
    ]
    run, found = execute(Program(chain, render=listing))
    assert found is None, found
    assert run.steps_checked == 5  # the chain ends at the call


def test_a_gradient_argument_moved_by_set_still_names_pytorch_34082():
    """t0.grad is view_as_real(t3), t3 the gradient handed to backward; t3.set_(t2)
    moves t3 to other memory, and the second backward's accumulation into t0.grad
    moves t3's version (a thorough run on 2.13.0, reported as
    version.unchanged_out_of_place): it is #34082's known failure."""
    from conformance.differential.attribution import attribute

    def leaf(values, dtype, requires_grad=False) -> Step:
        array = np.array(values, dtype=np.complex128 if "complex" in dtype else np.float64)
        return Step("leaf", leaf=Leaf(array, dtype, "cpu", requires_grad))

    chain = [
        leaf(np.ones((1, 3, 2)), "float32", requires_grad=True),
        Step("clone", (0,)),
        Step("view_as_complex", (1,)),
        leaf(np.ones((1, 3)), "complex64"),
        Step("backward_g", (2, 3), (False,)),
        Step("set_", (3, 2), no_grad=True),
        leaf(np.ones((1, 3)), "complex64"),
        Step("backward_g", (2, 4), (True,)),
    ]
    run, found = execute(Program(chain, render=listing))
    if found is None:  # a build without pytorch#34082
        return
    assert attribute(run, found) == "grad.gradient_argument_kept", found


def test_a_hooked_save_of_a_real_view_reads_the_complex_memory_as_real():
    """sin under saved_tensors_hooks (pack x.detach()) of t3.real: unpack reads the
    saved memory in the view's dtype (a thorough run at c42fe3e: the model read
    complex128 memory with float64 strides and expected cos(0) for t0's last row)."""
    chain = [
        Step("leaf", leaf=Leaf(np.ones((3, 1), dtype=np.complex128), "complex128", "cpu", True)),
        Step("clone", (0,)),
        Step("mul_s", (1,), (0.375 - 1.625j,)),
        Step("real", (2,)),
        Step("leaf", leaf=Leaf(np.ones((3, 1)), "float64", "cpu", False)),
        Step("sin_hooked_detach", (3,)),
        Step("backward_g", (5, 4), (False,)),
    ]
    run, found = execute(Program(chain, render=listing))
    assert found is None, found
    assert run.steps_checked == len(chain)


def test_an_out_resize_of_a_view_that_requires_grad_is_not_compared():
    """torch.add(a, b, out=v) under no_grad resizes v, a view of an empty tensor in
    the graph, to 0-d: resize_ refuses a tensor that requires grad, and torch's
    CopySlices then no longer fits v over its base ("setStorage ... out of bounds"
    in backward, 2.0.1 to 2.14.1; a thorough run at c42fe3e)."""
    chain = [
        Step("leaf", leaf=Leaf(np.ones((0, 2, 3)), "float32", "cpu", True)),
        Step("clone", (0,)),
        Step("select", (1,), (2, -1)),
        Step("leaf", leaf=Leaf(np.array(1), "int32", "cpu", False)),
        Step("leaf", leaf=Leaf(np.array(1), "int32", "cpu", False)),
        Step("add_out", (2, 3, 4), no_grad=True),
        Step("add_s_", (2,), (1.0,)),
        Step("backward", (2,), (True,)),
    ]
    run, found = execute(Program(chain, render=listing))
    assert found is None, found
    assert run.steps_checked < len(chain)


def test_index_add_into_a_repeated_row_rounds_after_each_add():
    """bfloat16 index_add_ with the index [0, 0]: torch rounds to bfloat16 after
    each add (0.76171875 + 1.125 -> 1.890625, then - 2 -> -0.109375), the model
    once (-0.11328125); both are within a few epsilons of the terms' magnitude
    (a thorough run at 2176049, reported as index.writes_in_place)."""
    source = [
        [[[0.75, -2.25], [1.875, 0.0]], [[1.25, 1.0], [1.75, 0.875]]],
        [[[7.0, 5.0], [4.0, 3.75]], [[1.125, -0.875], [-2.0, -0.625]]],
    ]
    chain = [
        Step("leaf", leaf=Leaf(np.ones((2, 2, 1, 2)), "bfloat16", "cpu", True)),
        Step("tanh", (0,)),
        Step("leaf", leaf=Leaf(np.array(source), "bfloat16", "cpu", True)),
        Step("index_add_", (1, 2), (2, [0, 0])),
    ]
    run, found = execute(Program(chain, render=listing))
    assert found is None, found
    assert run.steps_checked == len(chain)


def test_a_foreach_list_of_two_views_of_one_memory_is_not_compared():
    """torch._foreach_mul_([t2, t3], [t4, t5]) with t3 = t2[1:0:3, :, ::3], an empty
    view of t2's memory (a thorough run at 43ac957, foreach.inplace_grad: t5.grad
    None, expected zeros): t2's history misses t3's write, as it misses a disjoint
    view's; the model marks any two written views of one memory undefined."""
    ones = np.ones((3, 2, 3, 1))
    chain = [
        Step("leaf", leaf=Leaf(ones, "bfloat16", "cpu", True)),
        Step("clone", (0,)),
        Step("transpose", (1,), (2, 0)),
        Step("getitem", (2,), ((slice(1, 0, 3), slice(None), slice(None, None, 3)),)),
        Step("leaf", leaf=Leaf(np.array([1.0]), "bfloat16", "cpu", False)),
        Step("leaf", leaf=Leaf(np.array([[1.0]]), "bfloat16", "cpu", True)),
        Step("foreach_mul_l_", (2, 3, 4, 5)),
        Step("leaf", leaf=Leaf(ones, "bfloat16", "cpu", False)),
        Step("backward_g", (2, 6), (False,)),
    ]
    run, found = execute(Program(chain, render=listing))
    assert found is None, found
    assert run.steps_checked == 7  # the chain ends at the call


def test_complex_tanh_near_one_is_compared_to_the_terms_its_backward_cancels():
    """complex64 tanh_backward, vectorized, computes 1 - r * r in complex64: at
    r = -0.99997 it is 1.7e-4 off, relative (2.13.0). Behind a hooked sin the
    gradients reach 5e11, so the path's one bound is capped; the leaf's
    gradient is held per element to the terms tanh summed, |g| (1 + |r|^2)
    (a thorough run at b10cf90, reported as saved_hooks.pack_unpack)."""
    values = np.linspace(-6, -4.5, 16) + 1j * np.linspace(-0.25, 0.25, 16)
    values[-1] = 1 + 1j
    chain = [
        Step("leaf", leaf=Leaf(values.reshape(2, 8), "complex64", "cpu", True)),
        Step("tanh", (0,)),
        Step("mul_s", (1,), (4 + 5j,)),
        Step("sin_hooked_x2_x2", (2,)),
        Step("backward_g", (3, 0), (False,)),
    ]
    run, found = execute(Program(chain, render=listing))
    assert found is None, found
    assert run.steps_checked == len(chain)
    # the allowance is the terms' rounding, no more: a few units of |g| (1 + |r|^2)
    atol = cancelled_atol(run, chain[-1], 0, {0, 1, 2, 3})
    r = run.oracle_pool[1].values()
    g = np.abs(run.oracle_pool[0].grad) / np.abs(1 - r * r)
    assert np.allclose(atol, 8 * 2**-23 * g * (1 + np.abs(r) ** 2), rtol=1e-3)
    assert atol[1, 7] < 1e-5 * np.abs(run.oracle_pool[0].grad[1, 7])  # where 1 - r * r is not small


def test_a_gradient_that_cancels_the_accumulated_one_is_held_to_its_size():
    """backward with g, then with -g: torch's t0.grad is 0 exactly, the model's
    a residue of its float64 contribution against torch's complex64 one, 0.5
    of gradients near 1e7 (a thorough run at 5c621ad, saved_hooks.pack_unpack)."""
    values = np.array([[0.875 + 5j, 0.625 - 5.5j], [-0.25 - 1.75j, 0.5 + 0.5j]])
    chain = [
        Step("leaf", leaf=Leaf(values, "complex64", "cpu", True)),
        Step("mul_s", (0,), (1.25 - 0.5625j,)),
        Step("sin_hooked_detach", (1,)),
        Step("mul_s_", (1,), (1.5 + 2j,)),
        Step("leaf", leaf=Leaf(np.ones((2, 2)), "complex64", "cpu", False)),
        Step("backward_g", (2, 3), (True,)),
        Step("neg_", (3,)),
        Step("backward_g", (2, 3), (False,)),
    ]
    run, found = execute(Program(chain, render=listing))
    assert found is None, found
    assert run.steps_checked == len(chain)


def test_a_tensor_given_a_gradient_of_unknown_layout_by_set_data_is_not_held_to_a_layout():
    """x.data = d, with d = torch.autograd.grad(..., create_graph=True)[0]: d's
    layout follows the gradient argument (here transposed), which the model
    does not follow; x takes d's geometry, so x's strides are not compared
    either (seen in the default profile: t4 has strides (1, 3, 9, 18),
    expected (12, 4, 2, 1))."""
    x = np.ones((3, 3, 2, 2))
    program = Program(
        [
            Step("leaf", leaf=Leaf(x, "float64", "cpu", True)),
            Step("pow_s", (0,), (1,)),
            Step("leaf", leaf=Leaf(x, "float64", "cpu", False, layout="transposed")),
            Step("grad_cg", (1, 0, 2)),
            Step("leaf", leaf=Leaf(x, "float64", "cpu", False)),
            Step("set_data", (4, 3), no_grad=True),
        ]
    )
    run, found = execute(program)
    assert found is None, found
    assert run.steps_checked == len(program.steps)
    # the gradient came back transposed, and so did the tensor that took it
    assert not run.torch_pool[4].is_contiguous()


def test_a_resize_that_leaves_the_version_is_resizes_rule_beside_an_unsafe_split():
    # 2.0.1 leaves the version of a resized tensor as it was (fixed in 2.1, a
    # known failure of resize.in_place); the tensor shares memory with a piece of
    # unsafe_split_with_sizes, whose own rule must not claim the resize's version
    from conformance.differential.attribution import attribute
    from conformance.differential.run import Discrepancy

    chain = [
        _leaf(np.ones((2, 3, 2)), requires_grad=True),
        Step("unsafe_split_with_sizes_k", (0,), ([1, 1], 0, 0)),
        Step("detach", (1,)),
        Step("resize_", (2,), ((2, 2, 3),)),
    ]
    run, found = execute(Program(chain, render=listing), exhaustive=True)
    assert found is None, found
    missed = Discrepancy(3, "version", (2,), 1, 0, "t2's version moved by 0, expected 1")
    assert attribute(run, missed) == "resize.in_place"
