"""DTensor, tensor parallelism and FSDP2 over one process, against real torch running a
one-process gloo group on the same inputs: placements, values, gradients, module outputs and
parameter types."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import gradcheck.ref as ref


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("this torch has no gloo backend")
    for name in ("tensor", "tensor.parallel", "fsdp", "_composable.fsdp", "_tensor"):
        importlib.import_module(f"torch.distributed.{name}")
    return torch


@pytest.fixture
def meshes(torch):
    """A one-rank mesh in each library, torch's on gloo."""
    torch.distributed.init_process_group("gloo", store=torch.distributed.HashStore(), rank=0,
                                         world_size=1)
    ref.distributed.init_process_group("gloo", store=ref.distributed.HashStore(), rank=0,
                                       world_size=1)
    yield (torch.distributed.device_mesh.init_device_mesh("cpu", (1,)),
           ref.distributed.device_mesh.init_device_mesh("cpu", (1,)))
    torch.distributed.destroy_process_group()
    ref.distributed.destroy_process_group()


def _numpy(tensor):
    return np.asarray(tensor.detach().numpy())


def _same_placements(ours, theirs):
    assert [repr(p) for p in ours] == [repr(p) for p in theirs]


def test_placements_print_and_compare_as_torch(torch):
    theirs = torch.distributed.tensor
    ours = ref.distributed.tensor
    for name, args in (("Shard", (0,)), ("Shard", (-1,)), ("Replicate", ()),
                       ("Partial", ()), ("Partial", ("max",))):
        mine, real = getattr(ours, name)(*args), getattr(theirs, name)(*args)
        assert (repr(mine), str(mine)) == (repr(real), str(real))
        assert (mine.is_shard(), mine.is_replicate(), mine.is_partial()) == (
            real.is_shard(), real.is_replicate(), real.is_partial())
    assert ours.Shard(1) == ours.Shard(1) and ours.Shard(1) != ours.Shard(0)
    assert len({ours.Replicate(), ours.Replicate(), ours.Shard(0)}) == 2
    assert ref.distributed._tensor.Shard is ours.Shard
    assert ref.distributed._tensor.api.DTensor is ours.DTensor


@pytest.mark.parametrize("placement", [("Shard", 0), ("Shard", -1), ("Replicate",)])
def test_distribute_tensor_matches_torch(meshes, torch, placement):
    theirs_mesh, ours_mesh = meshes
    data = np.arange(6.0).reshape(2, 3)
    results = []
    for lib, mesh in ((torch, theirs_mesh), (ref, ours_mesh)):
        tensor_mod = lib.distributed.tensor
        source = lib.tensor(data, requires_grad=True)
        placed = tensor_mod.distribute_tensor(source, mesh, [getattr(tensor_mod, placement[0])(
            *placement[1:])])
        source.data[0, 0] = 100.0  # the one rank's shard shares the source's storage
        (placed.to_local() * lib.tensor(data)).sum().backward()
        results.append((placed, source))
    (theirs, theirs_source), (ours, ours_source) = results
    _same_placements(ours.placements, theirs.placements)
    assert (ours.requires_grad, ours.is_leaf, ours.shape, ours.stride()) == (
        theirs.requires_grad, theirs.is_leaf, tuple(theirs.shape), theirs.stride())
    np.testing.assert_array_equal(_numpy(ours.full_tensor()), _numpy(theirs.full_tensor()))
    np.testing.assert_array_equal(_numpy(ours.grad.to_local()), _numpy(theirs.grad.to_local()))
    assert type(ours.grad).__name__ == type(theirs.grad).__name__ == "DTensor"
    _same_placements(ours.grad.placements, theirs.grad.placements)
    assert ours_source.grad is None and theirs_source.grad is None
    assert repr(ours).replace("\n", "") == repr(theirs).replace("\n", "")


def test_from_local_redistribute_and_full_tensor_carry_gradients(meshes, torch):
    theirs_mesh, ours_mesh = meshes
    grads = []
    for lib, mesh in ((torch, theirs_mesh), (ref, ours_mesh)):
        tensor_mod = lib.distributed.tensor
        local = lib.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
        placed = tensor_mod.DTensor.from_local(local, mesh, [tensor_mod.Shard(-1)])
        moved = placed.redistribute(mesh, [tensor_mod.Replicate()])
        (moved.full_tensor() ** 2).sum().backward()
        grads.append((placed, moved, local.grad))
    (t_placed, t_moved, t_grad), (o_placed, o_moved, o_grad) = grads
    _same_placements(o_placed.placements, t_placed.placements)
    _same_placements(o_moved.placements, t_moved.placements)
    assert (o_placed.is_leaf, o_placed.requires_grad) == (t_placed.is_leaf,
                                                          t_placed.requires_grad)
    np.testing.assert_array_equal(_numpy(o_grad), _numpy(t_grad))


def test_placement_errors_name_the_problem(meshes):
    _, mesh = meshes
    tensor_mod = ref.distributed.tensor
    with pytest.raises(ValueError, match="same length as `device_mesh.ndim`"):
        tensor_mod.distribute_tensor(ref.ones(2), mesh, [tensor_mod.Shard(0)] * 2)
    with pytest.raises(IndexError, match="Shard\\(dim=2\\)"):
        tensor_mod.distribute_tensor(ref.ones(2), mesh, [tensor_mod.Shard(2)])
    with pytest.raises(RuntimeError, match="No device mesh"):
        tensor_mod.distribute_tensor(ref.ones(2))


def _mlp(lib, seed=0):
    lib.manual_seed(seed)
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 3)).double()


def _copy_weights(source, target):
    target.load_state_dict({k: ref.tensor(v.detach().numpy()) for k, v in
                            source.state_dict().items()})


def _train_step(lib, model, batch):
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        optimizer.zero_grad()
        output = model(lib.tensor(batch))
        (output ** 2).mean().backward()
        optimizer.step()
    return output


def test_parallelize_module_trains_as_torch(meshes, torch):
    theirs_mesh, ours_mesh = meshes
    batch = np.random.default_rng(0).standard_normal((5, 4))
    theirs, ours = _mlp(torch), _mlp(ref)
    _copy_weights(theirs, ours)
    plans = []
    for lib, model, mesh in ((torch, theirs, theirs_mesh), (ref, ours, ours_mesh)):
        parallel = lib.distributed.tensor.parallel
        plan = {"0": parallel.ColwiseParallel(), "2": parallel.RowwiseParallel()}
        assert parallel.parallelize_module(model, mesh, plan) is model
        plans.append(plan)
    assert [repr(s) for s in plans[1].values()] == [repr(s) for s in plans[0].values()]
    for (name, mine), (_, real) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert type(mine).__name__ == type(real).__name__ == "DTensor", name
        assert isinstance(mine, ref.nn.Parameter)
        _same_placements(mine.placements, real.placements)
    t_out, o_out = _train_step(torch, theirs, batch), _train_step(ref, ours, batch)
    assert type(o_out).__name__ == type(t_out).__name__ == "Tensor"
    np.testing.assert_allclose(_numpy(o_out), _numpy(t_out), rtol=1e-12, atol=1e-14)
    for (name, mine), (_, real) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(_numpy(mine.full_tensor()), _numpy(real.full_tensor()),
                                   rtol=1e-12, atol=1e-14, err_msg=name)
        _same_placements(mine.grad.placements, real.grad.placements)


def test_styles_with_declared_outputs_match_torch(meshes, torch):
    theirs_mesh, ours_mesh = meshes
    kinds = []
    for lib, mesh in ((torch, theirs_mesh), (ref, ours_mesh)):
        parallel = lib.distributed.tensor.parallel
        tensor_mod = lib.distributed.tensor
        lib.manual_seed(0)
        linear = parallel.parallelize_module(lib.nn.Linear(3, 4), mesh,
                                             parallel.ColwiseParallel(use_local_output=False))
        norm = parallel.parallelize_module(lib.nn.LayerNorm(3), mesh, parallel.SequenceParallel())
        embed = parallel.parallelize_module(lib.nn.Embedding(5, 3), mesh,
                                            parallel.RowwiseParallel())
        shifted = parallel.parallelize_module(lib.nn.Identity(), mesh, parallel.PrepareModuleOutput(
            output_layouts=tensor_mod.Replicate(), desired_output_layouts=tensor_mod.Shard(0),
            use_local_output=False))
        outputs = (linear(lib.ones(2, 3)), norm(lib.ones(2, 2, 3)), shifted(lib.ones(2, 3)),
                   embed(lib.tensor([[0, 4]])))
        kinds.append([(type(o).__name__, [repr(p) for p in getattr(o, "placements", ())])
                      for o in outputs] + [[repr(p) for p in embed.weight.placements],
                                           [repr(p) for p in norm.weight.placements]])
        with pytest.raises(NotImplementedError, match="ColwiseParallel currently only support"):
            parallel.parallelize_module(lib.nn.ReLU(), mesh, parallel.ColwiseParallel())
    assert kinds[1] == kinds[0]


def test_plan_paths_use_fnmatch_and_prepare_module_input(meshes, torch):
    theirs_mesh, ours_mesh = meshes
    results, models = [], []
    for lib in (torch, ref):
        models.append(lib.nn.ModuleDict({"layers": lib.nn.ModuleList(
            [lib.nn.Linear(3, 3) for _ in range(2)])}))
    _copy_weights(*models)
    for lib, mesh, model in ((torch, theirs_mesh, models[0]), (ref, ours_mesh, models[1])):
        parallel = lib.distributed.tensor.parallel
        tensor_mod = lib.distributed.tensor
        # hooks run in plan order: the prepared input reaches ColwiseParallel as a DTensor
        prepare = parallel.PrepareModuleInput(input_layouts=tensor_mod.Shard(0),
                                              desired_input_layouts=tensor_mod.Replicate())
        plan = {"layers.1": prepare, "layers.*": parallel.ColwiseParallel()}
        parallel.parallelize_module(model, mesh, plan)
        x = lib.ones(2, 3)
        results.append((_numpy(model["layers"][1](model["layers"][0](x))),
                        [repr(p.placements) for p in model.parameters()]))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    assert results[1][1] == results[0][1]


def test_fully_shard_matches_torch(meshes, torch):
    if torch.cuda.is_available():
        pytest.skip("torch's fully_shard moves the model to the GPU when one is visible; the "
                    "engine answers as torch's CPU build")
    batch = np.random.default_rng(1).standard_normal((5, 4))
    theirs, ours = _mlp(torch), _mlp(ref)
    _copy_weights(theirs, ours)
    for lib, model in ((torch, theirs), (ref, ours)):
        fsdp = lib.distributed.fsdp
        fsdp.fully_shard(model[0])
        assert fsdp.fully_shard(model) is model
        assert lib.distributed._composable.fsdp.FSDPModule is fsdp.FSDPModule
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in
                                                          theirs.modules()]
    assert isinstance(ours, ref.distributed.fsdp.FSDPModule) and isinstance(ours,
                                                                            ref.nn.Sequential)
    assert repr(ours) == repr(theirs)
    t_out, o_out = _train_step(torch, theirs, batch), _train_step(ref, ours, batch)
    np.testing.assert_allclose(_numpy(o_out), _numpy(t_out), rtol=1e-12, atol=1e-14)
    for (name, mine), (_, real) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert type(mine).__name__ == type(real).__name__ == "DTensor", name
        _same_placements(mine.placements, real.placements)
        _same_placements(mine.grad.placements, real.grad.placements)
        np.testing.assert_allclose(_numpy(mine.full_tensor()), _numpy(real.full_tensor()),
                                   rtol=1e-12, atol=1e-14, err_msg=name)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    policy = ref.distributed.fsdp.MixedPrecisionPolicy(param_dtype=ref.bfloat16)
    with pytest.raises(NotImplementedError, match="MixedPrecisionPolicy"):
        ref.distributed.fsdp.fully_shard(ref.nn.Linear(2, 2), mp_policy=policy)


@pytest.mark.parametrize("name", ["gradcheck.ref.distributed.tensor.placement_types",
                                  "gradcheck.ref.distributed.tensor.api",
                                  "gradcheck.ref.distributed.tensor.parallel",
                                  "gradcheck.ref.distributed.fully_shard"])
def test_docstring_examples_run(name):
    import doctest

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
