"""The stand-ins for what a numpy engine cannot be (fx, jit, compile, multiprocessing,
distributed, backends) and the APIs real models were missing (samplers, PixelShuffle,
orthogonal_, ReduceLROnPlateau, index_fill_, tensor attributes), each against real torch."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcheck.ref as ref
from gradcheck.ref.alias import as_torch

EXAMPLES = settings(max_examples=10, deadline=None)


def test_a_script_preamble_of_compiler_and_process_modules_imports_clean():
    with as_torch() as engine:
        import torch
        import torch.backends.cuda
        import torch.distributed as dist
        import torch.multiprocessing as mp
        import torch.utils.data.distributed
        from torch.fx._symbolic_trace import is_fx_tracing
        from torch.jit import Final

        assert torch is engine and not is_fx_tracing() and Final is not None
        assert dist.is_available() and not dist.is_initialized()
        assert mp.get_start_method(allow_none=True) in (None, "fork", "spawn", "forkserver")
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.benchmark = True
        torch._dynamo.config.cache_size_limit = 64
        assert torch.compile(len) is len and not torch.compiler.is_compiling()
        del torch._dynamo.config.cache_size_limit  # leave the shared config as it was


@pytest.mark.parametrize("call, api", [
    (lambda: ref.fx.some_future_api(), "torch.fx.some_future_api"),
    (lambda: ref.jit.save(None, "m.pt"), "torch.jit.save"),
    (lambda: ref.jit.load("m.pt"), "torch.jit.load"),
    (lambda: ref.distributed.rpc.init_rpc("w", rank=0, world_size=2),
     "torch.distributed.rpc.init_rpc"),
    (lambda: ref.distributed.init_process_group("gloo", world_size=2, rank=0),
     "torch.distributed.init_process_group"),
    (lambda: ref.multiprocessing.spawn(print, nprocs=2), "torch.multiprocessing.spawn"),
])
def test_what_cannot_work_raises_at_the_call_naming_the_api(call, api):
    with pytest.raises(NotImplementedError, match=api.replace(".", r"\.")):
        call()


def test_fx_wrap_returns_what_it_marks_at_module_level_only():
    namespace = {"torch": ref}
    exec("import math\nmarked = torch.fx.wrap('len'), torch.fx.wrap(math.sqrt)", namespace)
    assert namespace["marked"] == ("len", math.sqrt)
    with pytest.raises(NotImplementedError, match="top level of a module"):
        ref.fx.wrap("len")
    assert not isinstance(object(), ref.fx.GraphModule)


def test_scripted_and_traced_modules_compute_what_torch_computes(torch):
    def build(lib):
        class Block(lib.nn.Module):
            scale: lib.jit.Final[float]

            def __init__(self):
                super().__init__()
                self.scale = 2.0
                self.linear = lib.nn.Linear(3, 2)

            @lib.jit.ignore
            def describe(self) -> str:
                return "block"

            def forward(self, x):
                return self.linear(x).tanh() * self.scale

        return Block().double()

    torch.manual_seed(0)
    theirs = build(torch)
    ours = build(ref)
    with ref.no_grad():
        for name, p in ours.named_parameters():
            p.copy_(ref.tensor(dict(theirs.named_parameters())[name].detach().numpy()))
    x = np.random.default_rng(1).normal(size=(4, 3))
    expected = theirs(torch.tensor(x)).detach().numpy()
    scripted = ref.jit.script(ours)
    assert scripted is ours and scripted.describe() == "block"
    np.testing.assert_allclose(scripted(ref.tensor(x)).detach().numpy(), expected, rtol=1e-12)
    traced = ref.jit.trace(ours, ref.tensor(x))
    np.testing.assert_allclose(traced(ref.tensor(x)).detach().numpy(), expected, rtol=1e-12)
    assert ref.jit.is_scripting() is torch.jit.is_scripting() is False
    assert ref.jit.fork(lambda a: a + 1, 1).wait() == 2


def test_distributed_before_init_raises_torchs_error(torch):
    for lib in (ref, torch):
        assert lib.distributed.is_available() and not lib.distributed.is_initialized()
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            lib.distributed.get_rank()


def test_distributed_world_of_one_leaves_collectives_as_they_are():
    dist = ref.distributed
    dist.init_process_group("gloo", world_size=1, rank=0)
    try:
        t = ref.tensor([1.0, 2.0])
        gathered = [ref.zeros(2)]
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        dist.all_gather(gathered, t)
        assert t.tolist() == [1.0, 2.0] and gathered[0].tolist() == [1.0, 2.0]
        assert dist.all_reduce(t, async_op=True).wait()
        model = ref.nn.parallel.DistributedDataParallel(ref.nn.Linear(2, 1))
        with model.no_sync():
            assert model(ref.ones(3, 2)).shape == (3, 1)
        assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")
    finally:
        dist.destroy_process_group()
    with pytest.raises(ValueError, match="not been initialized"):
        ref.nn.parallel.DistributedDataParallel(ref.nn.Linear(2, 1))


def test_multiprocessing_spawn_of_one_process_runs_rank_zero_here():
    ranks = []
    ref.multiprocessing.spawn(lambda rank, extra: ranks.append((rank, extra)), args=(7,))
    assert ranks == [(0, 7)]


@EXAMPLES
@given(n=st.integers(1, 12), replicas=st.integers(1, 4), drop_last=st.booleans(),
       data=st.data())
def test_distributed_sampler_splits_like_torch(n, replicas, drop_last, data):
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as Theirs

    from gradcheck.ref.utils.data.distributed import DistributedSampler as Ours

    rank = data.draw(st.integers(0, replicas - 1))
    ours = Ours(range(n), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
    theirs = Theirs(range(n), num_replicas=replicas, rank=rank, shuffle=False,
                    drop_last=drop_last)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)
    # shuffled: as many indices as torch's, as many distinct ones (all of them unless dropped)
    shuffled = sum([list(Ours(range(n), replicas, r, drop_last=drop_last))
                    for r in range(replicas)], [])
    expected = sum([list(Theirs(range(n), replicas, r, drop_last=drop_last))
                    for r in range(replicas)], [])
    assert len(shuffled) == len(expected) and len(set(shuffled)) == len(set(expected))
    assert drop_last or set(shuffled) == set(range(n))
    del torch


def test_distributed_sampler_reshuffles_per_epoch_and_checks_rank():
    from gradcheck.ref.utils.data.distributed import DistributedSampler

    sampler = DistributedSampler(range(50), num_replicas=1, rank=0)
    first = list(sampler)
    assert list(sampler) == first
    sampler.set_epoch(1)
    assert list(sampler) != first and sorted(sampler) == list(range(50))
    with pytest.raises(ValueError,
                       match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(5), num_replicas=2, rank=2)


@EXAMPLES
@given(n=st.integers(1, 9), num_samples=st.integers(1, 80), replacement=st.booleans())
def test_random_sampler_draws_num_samples_like_torch(n, num_samples, replacement):
    torch = pytest.importorskip("torch")
    ours = ref.utils.data.RandomSampler(range(n), replacement=replacement,
                                        num_samples=num_samples,
                                        generator=ref.Generator().manual_seed(3))
    theirs = torch.utils.data.RandomSampler(range(n), replacement=replacement,
                                            num_samples=num_samples,
                                            generator=torch.Generator().manual_seed(3))
    drawn, expected = list(ours), list(theirs)
    assert len(drawn) == len(expected) == len(ours) == num_samples
    assert all(0 <= i < n for i in drawn)
    if not replacement:  # whole permutations, then the start of one more
        for start in range(0, num_samples - num_samples % n, n):
            assert sorted(drawn[start:start + n]) == list(range(n))
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        ref.utils.data.RandomSampler(range(n), num_samples=0)


def test_tensors_accept_any_attribute_like_torch(torch):
    for lib in (ref, torch):
        pe = lib.zeros(2, 3)
        pe.require_grad = False  # a typo torch accepts silently
        pe.note = "positional"
        clone = copy.deepcopy(pe)
        assert (pe.requires_grad, pe.require_grad, clone.note) == (False, False, "positional")
        param = lib.nn.Parameter(lib.ones(1))
        param.sharded = True
        assert param.sharded and not hasattr(copy.deepcopy(param), "sharded")  # torch drops it


@pytest.mark.parametrize("name", ["is_xpu", "is_mps", "is_meta", "is_sparse", "is_quantized",
                                  "is_mkldnn", "is_nested", "is_cuda", "is_cpu"])
def test_device_queries_answer_as_a_cpu_tensor_does(name, torch):
    assert getattr(ref.ones(2), name) == getattr(torch.ones(2), name)
    assert ref.ones(2).is_complex() is torch.ones(2).is_complex()
    assert ref.ones(2).is_signed() == torch.ones(2).is_signed()


@EXAMPLES
@given(r=st.integers(1, 3), c=st.integers(1, 2), h=st.integers(1, 3), w=st.integers(1, 3),
       batch=st.lists(st.integers(1, 2), max_size=2))
def test_pixel_shuffle_and_unshuffle_match_torch_with_gradients(r, c, h, w, batch):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(r * 7 + h).normal(size=(*batch, c * r * r, h, w))
    weights = np.random.default_rng(1).normal(size=(*batch, c, h * r, w * r))
    results = {}
    for lib in (ref, torch):
        t = lib.tensor(x, dtype=lib.float64, requires_grad=True)
        up = lib.nn.PixelShuffle(r)(t)
        back = lib.nn.functional.pixel_unshuffle(up, r)
        ((up * lib.tensor(weights)).sum() + (back * lib.tensor(x)).sum()).backward()
        results[lib] = (up.detach().numpy(), back.detach().numpy(), t.grad.numpy())
    for ours, theirs in zip(results[ref], results[torch]):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.pixel_shuffle(lib.ones(2, 3), 2),
    lambda lib: lib.nn.functional.pixel_shuffle(lib.ones(1, 3, 2, 2), 2),
    lambda lib: lib.nn.functional.pixel_shuffle(lib.ones(1, 4, 2, 2), 0),
    lambda lib: lib.nn.functional.pixel_unshuffle(lib.ones(1, 3, 3, 2), 2),
    lambda lib: lib.nn.functional.pixel_unshuffle(lib.ones(1, 3, 2, 3), 2),
])
def test_pixel_shuffle_errors_match_torch(call, torch):
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as ours:
        call(ref)
    assert str(ours.value) == str(theirs.value)
    assert repr(ref.nn.PixelShuffle(2)) == repr(torch.nn.PixelShuffle(2))


@pytest.mark.parametrize("shape, gain", [((3, 5), 1.0), ((5, 3), 2.0), ((4, 2, 3), 0.5),
                                         ((1, 1), 1.0)])
def test_orthogonal_is_torchs_qr_of_the_same_draw(shape, gain, torch):
    rows = shape[0]
    cols = math.prod(shape) // rows
    ours = ref.nn.init.orthogonal_(ref.empty(*shape, dtype=ref.float64), gain=gain,
                                   generator=ref.Generator().manual_seed(5))
    draw = ref.empty(rows, cols, dtype=ref.float64).normal_(
        0, 1, generator=ref.Generator().manual_seed(5)).numpy()
    flat = torch.tensor(draw.T if rows < cols else draw)
    q, r = torch.linalg.qr(flat)
    q = q * torch.diag(r, 0).sign()
    expected = (q.T if rows < cols else q).reshape(shape) * gain
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        ref.nn.init.orthogonal_(ref.empty(3))


@EXAMPLES
@given(metrics=st.lists(st.sampled_from([1.0, 0.9999, 0.5, 2.0, 0.49]), min_size=1, max_size=25),
       mode=st.sampled_from(["min", "max"]), threshold_mode=st.sampled_from(["rel", "abs"]),
       patience=st.integers(0, 3), cooldown=st.integers(0, 2),
       min_lr=st.sampled_from([0.0, 0.05]))
def test_reduce_lr_on_plateau_follows_torchs_lr_trajectory(metrics, mode, threshold_mode,
                                                           patience, cooldown, min_lr):
    torch = pytest.importorskip("torch")
    trajectories = []
    for lib in (ref, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(
            opt, mode=mode, factor=0.5, patience=patience, threshold=0.01,
            threshold_mode=threshold_mode, cooldown=cooldown, min_lr=min_lr)
        lrs = []
        for value in metrics:
            sched.step(lib.tensor(value))
            lrs.append((sched.get_last_lr()[0], sched.num_bad_epochs, sched.best))
        trajectories.append(lrs)
    assert trajectories[0] == trajectories[1]
    assert isinstance(sched, torch.optim.lr_scheduler.LRScheduler)


def test_reduce_lr_on_plateau_rejects_what_torch_rejects(torch):
    for lib in (ref, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0)
        with pytest.raises(ValueError, match="Factor should be < 1.0"):
            lib.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)
        with pytest.raises(ValueError, match="mode avg is unknown"):
            lib.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="avg")


@st.composite
def indexed_case(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[dim]
    index = draw(st.lists(st.integers(-size, size - 1), min_size=1, max_size=5))
    return shape, dim, index


@EXAMPLES
@given(case=indexed_case(), op=st.sampled_from(["fill", "fill_tensor", "add", "copy"]))
def test_index_fill_add_copy_match_torch_with_gradients(case, op):
    torch = pytest.importorskip("torch")
    shape, dim, index = case
    if op != "fill":  # only index_fill takes negative positions (torch refuses them elsewhere)
        index = [i % shape[dim] for i in index]
    if op == "copy":  # torch leaves the winner of a repeated index unspecified
        index = list(dict.fromkeys(index))
    rng = np.random.default_rng(len(index))
    x = rng.normal(size=shape)
    source_shape = list(shape)
    source_shape[dim] = len(index)
    source = rng.normal(size=source_shape)
    upstream = rng.normal(size=shape)
    results = {}
    for lib in (ref, torch):
        t = lib.tensor(x, requires_grad=True)
        s = lib.tensor(source, requires_grad=True)
        v = lib.tensor(1.5, dtype=lib.float64, requires_grad=True)
        i = lib.tensor(index)
        base = t * 1  # in place on a non-leaf, as a model would
        if op == "fill":
            out = base.index_fill_(dim, i, -2.0)
        elif op == "fill_tensor":
            out = base.index_fill(dim, i, v)
        elif op == "add":
            out = base.index_add_(dim, i, s, alpha=0.5)
        else:
            out = base.index_copy(dim, i, s)
        (out * lib.tensor(upstream)).sum().backward()
        grads = [g.grad.numpy() if g.grad is not None else None for g in (t, s, v)]
        results[lib] = [out.detach().numpy()] + grads
    for ours, theirs in zip(results[ref], results[torch]):
        if theirs is None:
            assert ours is None
        else:
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda lib: lib.zeros(3, 4).index_fill(1, lib.tensor([0.0, 1.0]), 1.0),
    lambda lib: lib.zeros(3, 4).index_fill(1, lib.tensor([[0, 1]]), 1.0),
    lambda lib: lib.zeros(3, 4).index_fill(1, lib.tensor([7]), 1.0),
    lambda lib: lib.zeros(3, 4).index_add(1, lib.tensor([0, 1]), lib.ones(3, 3)),
    lambda lib: lib.zeros(3).index_add(0, lib.tensor([-1]), lib.ones(1)),
    lambda lib: lib.zeros(3).index_copy(0, lib.tensor([3]), lib.ones(1)),
    lambda lib: lib.zeros(3).index_fill(0, lib.tensor([-4]), 1.0),
])
def test_index_op_errors_match_torch(call, torch):
    with pytest.raises((IndexError, RuntimeError)) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(ref)
    assert str(ours.value) == str(theirs.value)
