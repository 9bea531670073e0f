"""The layers, optimizers, schedulers, distributions and utilities the API census asked for,
against torch in float64 (layers through ``compare_with_torch``: torch's initial weights and
buffers copied by name, outputs, gradients and updated parameters compared)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import gradcheck.ref as ref

LAYERS = {
    "instance_norm_1d": (lambda m: m.nn.InstanceNorm1d(3, affine=True), (2, 3, 5)),
    "instance_norm_2d_stats": (lambda m: m.nn.InstanceNorm2d(3, affine=True,
                                                            track_running_stats=True),
                               (2, 3, 4, 4)),
    "sync_batch_norm": (lambda m: m.nn.SyncBatchNorm(3), (4, 3, 2)),
    "local_response_norm": (lambda m: m.nn.LocalResponseNorm(2), (2, 4, 3, 3)),
    "glu": (lambda m: m.nn.GLU(1), (2, 4)),
    "rms_norm": (lambda m: m.nn.RMSNorm([3, 4]), (2, 3, 4)),
    "unflatten": (lambda m: m.nn.Sequential(m.nn.Unflatten(1, (2, 3)), m.nn.Tanh()), (2, 6)),
    "unfold": (lambda m: m.nn.Unfold(2, padding=1, stride=2), (1, 2, 5, 4)),
    "fold": (lambda m: m.nn.Fold((4, 5), 2, stride=1), (1, 8, 12)),
    "adaptive_avg_pool_3d": (lambda m: m.nn.AdaptiveAvgPool3d((2, 3, 1)), (1, 2, 4, 5, 3)),
    "adaptive_max_pool_1d": (lambda m: m.nn.AdaptiveMaxPool1d(3), (2, 3, 7)),
    "constant_pad_3d": (lambda m: m.nn.ConstantPad3d((1, 0, 2, 1, 0, 1), 0.5), (1, 2, 2, 3, 2)),
    "reflection_pad_3d": (lambda m: m.nn.ReflectionPad3d(1), (1, 1, 3, 3, 3)),
    "circular_pad_2d": (lambda m: m.nn.CircularPad2d((1, 2, 0, 1)), (1, 2, 3, 4)),
    "weight_norm_conv": (lambda m: _quiet(lambda: m.nn.utils.weight_norm(
        m.nn.Conv1d(2, 3, 2), dim=0)), (2, 2, 5)),
    "spectral_norm_linear": (lambda m: m.nn.utils.spectral_norm(m.nn.Linear(4, 3)), (5, 4)),
    "bilinear": (lambda m: _Pair(m, m.nn.Bilinear(3, 2, 4)), (5, 5)),
    "threshold_softmin": (lambda m: m.nn.Sequential(m.nn.Threshold(0.1, -1.0),
                                                    m.nn.Softmin(1)), (3, 4)),
}


def _quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def _Pair(lib, layer):  # noqa: N802 - builds a module class per library
    class Pair(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def forward(self, x):
            return self.layer(x[:, :3], x[:, 3:])

    return Pair()


def _with_input(make_layer, shape):
    def build(lib):
        class Wrapped(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.x = lib.nn.Parameter(lib.randn(*shape))
                self.layer = make_layer(lib)

            def forward(self, scale):
                return self.layer(self.x * scale)

        return Wrapped()

    return build


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_trains_like_torch(name, torch):
    make, shape = LAYERS[name]
    report = ref.compare_with_torch(_with_input(make, shape), [np.array(1.3)], steps=3,
                                    optimizer=lambda lib, p: lib.optim.SGD(p, lr=0.05),
                                    rtol=1e-9, atol=1e-11)
    report.assert_ok()


@pytest.mark.parametrize("eval_mode", [False, True])
def test_instance_norm_running_statistics_match_torch(eval_mode, torch):
    x = np.random.default_rng(0).normal(size=(3, 2, 6))
    outs = []
    for lib in (torch, ref):
        norm = lib.nn.InstanceNorm1d(2, track_running_stats=True, momentum=0.3).double()
        norm(lib.tensor(x))
        norm.train(not eval_mode)
        outs.append([norm(lib.tensor(x)).detach().numpy(), norm.running_mean.numpy(),
                     norm.running_var.numpy()])
    for theirs, ours in zip(*outs):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_sequences_run_through_recurrent_layers_like_torch(mode, bidirectional, torch):
    lengths = [3, 5, 1, 4]

    def build(lib):
        class Packed(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = getattr(lib.nn, mode)(3, 4, num_layers=2, batch_first=True,
                                                 bidirectional=bidirectional)

            def forward(self, x, h):
                rnn_utils = lib.nn.utils.rnn
                packed = rnn_utils.pack_padded_sequence(x, lib.tensor(lengths), batch_first=True,
                                                        enforce_sorted=False)
                hx = (h, h * 0.5) if mode == "LSTM" else h
                out, state = self.rnn(packed, hx)
                padded, out_lengths = rnn_utils.pad_packed_sequence(out, batch_first=True)
                final = state[0] if mode == "LSTM" else state
                return padded.sum(-1) + out_lengths.to(padded.dtype).unsqueeze(1), final

        return Packed()

    rng = np.random.default_rng(1)
    directions = 2 if bidirectional else 1
    report = ref.compare_with_torch(build, [rng.normal(size=(4, 5, 3)),
                                            rng.normal(size=(2 * directions, 4, 4))],
                                    loss=lambda lib, out: (out[0] ** 2).sum() + out[1].sum(),
                                    rtol=1e-9, atol=1e-11)
    report.assert_ok()


def test_sequence_padding_utilities_match_torch(torch):
    rng = np.random.default_rng(2)
    arrays = [rng.normal(size=(n, 2)) for n in (3, 1, 4)]
    for side in ("right", "left"):
        ours = ref.nn.utils.rnn.pad_sequence([ref.tensor(a) for a in arrays], True, -1.0, side)
        theirs = torch.nn.utils.rnn.pad_sequence([torch.tensor(a) for a in arrays], True, -1.0,
                                                 side)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    packed = ref.nn.utils.rnn.pack_sequence([ref.tensor(a) for a in arrays], enforce_sorted=False)
    expected = torch.nn.utils.rnn.pack_sequence([torch.tensor(a) for a in arrays],
                                                enforce_sorted=False)
    np.testing.assert_array_equal(packed.data.numpy(), expected.data.numpy())
    assert packed.batch_sizes.tolist() == expected.batch_sizes.tolist()
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        ref.nn.utils.rnn.pack_padded_sequence(ref.zeros(4, 2), [1, 3])


OPTIMIZERS = {
    "Adamax": lambda lib, p: lib.optim.Adamax(p, lr=0.05, weight_decay=0.01),
    "Adamax_maximize": lambda lib, p: lib.optim.Adamax(p, lr=0.05, maximize=True),
    "ASGD": lambda lib, p: lib.optim.ASGD(p, lr=0.05, t0=3, lambd=0.01, weight_decay=0.1),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_like_torch(name, torch):
    build = (lambda lib: lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(),
                                           lib.nn.Linear(4, 1)))
    report = ref.compare_with_torch(build, [np.random.default_rng(3).normal(size=(6, 3))],
                                    steps=8, optimizer=OPTIMIZERS[name], rtol=1e-9, atol=1e-11)
    report.assert_ok()


SCHEDULERS = {
    "LinearLR": lambda s, o: s.LinearLR(o, start_factor=0.25, total_iters=6),
    "ConstantLR": lambda s, o: s.ConstantLR(o, factor=0.5, total_iters=4),
    "PolynomialLR": lambda s, o: s.PolynomialLR(o, total_iters=10, power=2.0),
    "MultiplicativeLR": lambda s, o: s.MultiplicativeLR(o, lambda epoch: 0.9),
    "CosineAnnealingWarmRestarts": lambda s, o: s.CosineAnnealingWarmRestarts(o, 4, 2, 0.01),
    "OneCycleLR": lambda s, o: s.OneCycleLR(o, max_lr=1.0, total_steps=30),
    "OneCycleLR_three_phase": lambda s, o: s.OneCycleLR(o, max_lr=[1.0], total_steps=30,
                                                        three_phase=True,
                                                        anneal_strategy="linear"),
    "CyclicLR": lambda s, o: s.CyclicLR(o, 0.1, 1.0, step_size_up=4, mode="triangular2"),
    "CyclicLR_exp": lambda s, o: s.CyclicLR(o, 0.1, 1.0, step_size_up=3, step_size_down=5,
                                            mode="exp_range", gamma=0.97),
    "SequentialLR": lambda s, o: s.SequentialLR(o, [s.LinearLR(o, 0.1, total_iters=5),
                                                    s.ExponentialLR(o, 0.9)], [5]),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_scheduler_follows_torchs_trajectory(name, torch):
    trajectories = []
    for lib in (torch, ref):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0, momentum=0.9)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = SCHEDULERS[name](lib.optim.lr_scheduler, opt)
        lrs = []
        for _ in range(25):
            opt.step()
            sched.step()
            lrs.append((sched.get_last_lr()[0], opt.param_groups[0]["momentum"]))
        trajectories.append(lrs)
    np.testing.assert_allclose(np.array(trajectories[1]), np.array(trajectories[0]),
                               rtol=1e-12, atol=1e-15)


def test_averaged_model_and_swalr_match_torch(torch):
    results = []
    torch.manual_seed(0)
    initial = {n: p.detach().double().numpy().copy()
               for n, p in torch.nn.Linear(3, 2).named_parameters()}
    for lib in (torch, ref):
        model = lib.nn.Linear(3, 2).double()
        with lib.no_grad():
            for name, p in model.named_parameters():
                p.copy_(lib.tensor(initial[name]))
        ema = lib.optim.swa_utils.AveragedModel(
            model, multi_avg_fn=lib.optim.swa_utils.get_ema_multi_avg_fn(0.9))
        plain = lib.optim.swa_utils.AveragedModel(model)
        opt = lib.optim.SGD(model.parameters(), lr=0.5)
        swalr = lib.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=3)
        lrs = []
        for step in range(5):
            opt.zero_grad()
            model(lib.ones(2, 3, dtype=lib.float64) * step).sum().backward()
            opt.step()
            swalr.step()
            ema.update_parameters(model)
            plain.update_parameters(model)
            lrs.append(swalr.get_last_lr()[0])
        results.append((lrs, [p.detach().numpy() for p in ema.module.parameters()],
                        [p.detach().numpy() for p in plain.module.parameters()]))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    for ours, expected in zip(results[1][1] + results[1][2], results[0][1] + results[0][2]):
        np.testing.assert_allclose(ours, expected, rtol=1e-12)


DISTRIBUTIONS = {
    "Normal": (lambda d, t: d.Normal(t(0.3), t(1.7)), 0.4),
    "Normal_batch": (lambda d, t: d.Normal(t([0.0, 1.0]), t([1.0, 0.5])), [0.2, -0.3]),
    "Uniform": (lambda d, t: d.Uniform(t(-1.0), t(2.5)), 0.7),
    "Laplace": (lambda d, t: d.Laplace(t(0.5), t(2.0)), -1.0),
    "Exponential": (lambda d, t: d.Exponential(t(1.5)), 0.8),
    "Gamma": (lambda d, t: d.Gamma(t(2.5), t(1.5)), 0.9),
    "Beta": (lambda d, t: d.Beta(t(2.0), t(3.0)), 0.35),
    "Bernoulli_probs": (lambda d, t: d.Bernoulli(probs=t([0.2, 0.9])), [1.0, 0.0]),
    "Bernoulli_logits": (lambda d, t: d.Bernoulli(logits=t([-1.0, 2.0])), [0.0, 1.0]),
    "Categorical_probs": (lambda d, t: d.Categorical(probs=t([[0.2, 0.3, 0.5], [1, 1, 2]])),
                          "index"),
    "Categorical_logits": (lambda d, t: d.Categorical(logits=t([0.5, -1.0, 2.0])), "index"),
    "OneHotCategorical": (lambda d, t: d.OneHotCategorical(probs=t([0.2, 0.3, 0.5])),
                          [0.0, 1.0, 0.0]),
    "MultivariateNormal": (lambda d, t: d.MultivariateNormal(
        t([0.5, -0.5]), t([[2.0, 0.3], [0.3, 1.0]])), [0.1, 0.2]),
    "Independent": (lambda d, t: d.Independent(d.Normal(t([0.0, 1.0]), t([1.0, 2.0])), 1),
                    [0.3, 0.4]),
}


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_distribution_scores_like_torch(name, torch):
    make, value = DISTRIBUTIONS[name]
    results = []
    for lib in (torch, ref):
        params = []

        def t(x, lib=lib, params=params):
            tensor = lib.tensor(x, dtype=lib.float64, requires_grad=True)
            params.append(tensor)
            return tensor

        dist = make(lib.distributions, t)
        at = lib.tensor([2, 1]) if value == "index" and dist.batch_shape else \
            lib.tensor(1) if value == "index" else lib.tensor(value, dtype=lib.float64)
        scores = [dist.log_prob(at)]
        if not name.startswith(("Gamma", "Beta")):
            scores.append(dist.entropy())
        if not name.startswith("Categorical"):
            scores += [dist.mean, dist.variance]
        total = sum(s.sum() for s in scores)
        total.backward()
        results.append(([s.detach().numpy() for s in scores],
                        [p.grad.numpy() if p.grad is not None else None for p in params]))
        assert tuple(dist.sample((3,)).shape) == (3, *dist.batch_shape, *dist.event_shape)
    (t_scores, t_grads), (o_scores, o_grads) = results
    for ours, theirs in zip(o_scores, t_scores):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    for ours, theirs in zip(o_grads, t_grads):
        if theirs is not None and not name.startswith(("Gamma", "Beta")):
            np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("pair", ["Normal", "Categorical", "Bernoulli", "Uniform",
                                  "MultivariateNormal"])
def test_kl_divergence_matches_torch(pair, torch):
    makers = {
        "Normal": lambda d, t: (d.Normal(t([0.0, 1.0]), t([1.0, 2.0])),
                                d.Normal(t([0.5, 0.0]), t([1.5, 0.5]))),
        "Categorical": lambda d, t: (d.Categorical(logits=t([0.1, 0.5, -1.0])),
                                     d.Categorical(probs=t([0.3, 0.3, 0.4]))),
        "Bernoulli": lambda d, t: (d.Bernoulli(probs=t([0.2, 0.7])),
                                   d.Bernoulli(logits=t([0.5, -0.5]))),
        "Uniform": lambda d, t: (d.Uniform(t(0.0), t(1.0)), d.Uniform(t(-1.0), t(2.0))),
        "MultivariateNormal": lambda d, t: (
            d.MultivariateNormal(t([0.0, 1.0]), scale_tril=t([[1.0, 0.0], [0.4, 0.8]])),
            d.MultivariateNormal(t([0.3, 0.0]), t([[2.0, 0.5], [0.5, 1.0]]))),
    }
    values = []
    for lib in (torch, ref):
        p, q = makers[pair](lib.distributions,
                            lambda x, lib=lib: lib.tensor(x, dtype=lib.float64))
        values.append(lib.distributions.kl_divergence(p, q).numpy())
    np.testing.assert_allclose(values[1], values[0], rtol=1e-10)


@pytest.mark.parametrize("actual, expected", [
    ([1.0, 2.0], [1.0, 2.1]), ([1.0, 2.0], [1.0, 2.0 + 1e-7]), (1.0, 1.5),
])
def test_assert_close_agrees_with_torch(actual, expected, torch):
    outcomes = []
    for lib in (torch, ref):
        try:
            lib.testing.assert_close(lib.tensor(actual), lib.tensor(expected))
            outcomes.append(None)
        except AssertionError as exc:
            outcomes.append(str(exc).split("\n")[0])
    assert outcomes[0] == outcomes[1]
    with pytest.raises(AssertionError, match="attribute 'dtype' do not match"):
        ref.testing.assert_close(ref.ones(2), ref.ones(2, dtype=ref.float64))


def test_autograd_checks_and_functional_transforms_match_torch(torch):
    x = np.array([0.3, -1.2, 2.0])
    for lib in (torch, ref):
        t = lib.tensor(x, requires_grad=True)
        assert lib.autograd.gradcheck(lambda a: (a.sin() * a).cumsum(0), (t,))
        assert lib.autograd.gradgradcheck(lambda a: a ** 3, (t,))
        wrong = lambda a: a.detach() ** 2 + a  # noqa: E731 - a gradient that misses a term
        assert not lib.autograd.gradcheck(wrong, (t,), raise_exception=False)
    fns = {"jacobian": lambda f, lib, a: f.jacobian(lambda v: v.sin() * v.sum(), a),
           "hessian": lambda f, lib, a: f.hessian(lambda v: (v ** 3).sum() * v[0], a),
           "vjp": lambda f, lib, a: f.vjp(lambda v: v.exp(), a, lib.ones(3,
                                                                          dtype=lib.float64))[1],
           "jvp": lambda f, lib, a: f.jvp(lambda v: v.exp() * v, a,
                                          lib.ones(3, dtype=lib.float64))[1]}
    for name, fn in fns.items():
        ours = fn(ref.autograd.functional, ref, ref.tensor(x)).numpy()
        theirs = fn(torch.autograd.functional, torch, torch.tensor(x)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, err_msg=name)


def test_vmap_and_functional_call_match_torch(torch):
    x = np.random.default_rng(4).normal(size=(4, 3))
    results = []
    for lib in (torch, ref):
        lib.manual_seed(0)
        model = lib.nn.Linear(3, 2).double()
        params = {"weight": lib.ones(2, 3, dtype=lib.float64),
                  "bias": lib.zeros(2, dtype=lib.float64)}
        called = lib.func.functional_call(model, params, (lib.tensor(x),))
        mapped = lib.vmap(lambda row, w: (row * w).sum(), in_dims=(0, None))(
            lib.tensor(x), lib.tensor(x[0]))
        results.append((called.detach().numpy(), mapped.numpy()))
        assert not model.weight.detach().numpy().sum() == 6.0  # parameters restored
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_initialisers_match_torchs_rules(torch):
    ref.manual_seed(0)
    w = ref.nn.init.trunc_normal_(ref.empty(4000, dtype=ref.float64), 0.5, 0.2, 0.2, 0.7)
    assert w.min() >= 0.2 and w.max() <= 0.7 and abs(w.mean().item() - 0.4679) < 0.01
    for name, shape in (("eye_", (3, 4)), ("dirac_", (4, 2, 3))):
        ours = getattr(ref.nn.init, name)(ref.empty(*shape)).numpy()
        theirs = getattr(torch.nn.init, name)(torch.empty(*shape)).numpy()
        np.testing.assert_array_equal(ours, theirs)
    with pytest.warns(FutureWarning, match="nn.init.normal` is now deprecated"):
        ref.nn.init.normal(ref.empty(2))


def test_samplers_draw_what_they_promise():
    subset = ref.utils.data.SubsetRandomSampler([3, 9, 11], generator=ref.Generator()
                                                .manual_seed(1))
    assert sorted(subset) == [3, 9, 11] and len(subset) == 3
    weighted = list(ref.utils.data.WeightedRandomSampler([0.0, 1.0, 3.0], 400,
                                                         generator=ref.Generator().manual_seed(2)))
    assert 0 not in weighted and 0.65 < weighted.count(2) / 400 < 0.85
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        ref.utils.data.WeightedRandomSampler([1.0], 0)
    assert ref.utils.data.get_worker_info() is None


def test_checkpoint_and_single_rank_fsdp_compute_what_the_module_computes():
    ref.manual_seed(0)
    model = ref.nn.Sequential(ref.nn.Linear(3, 4), ref.nn.Tanh(), ref.nn.Linear(4, 1))
    x = ref.randn(5, 3)
    model(x).sum().backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    ref.utils.checkpoint.checkpoint(model, x, use_reentrant=False).sum().backward()
    for p, g in zip(model.parameters(), expected):
        assert p.grad.equal(g)
    model.zero_grad()
    ref.distributed.init_process_group("gloo", world_size=1, rank=0)
    try:
        sharded = ref.distributed.fsdp.FullyShardedDataParallel(model)
        sharded(x).sum().backward()
        assert list(sharded.state_dict()) == list(model.state_dict())
    finally:
        ref.distributed.destroy_process_group()
    for p, g in zip(model.parameters(), expected):
        assert p.grad.equal(g)


def test_hub_loads_a_cached_torch_checkpoint_without_downloading(torch, tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 3)
    torch.save(model.state_dict(), tmp_path / "linear-0123abcd.pth")
    state = ref.hub.load_state_dict_from_url("https://example.invalid/w/linear-0123abcd.pth",
                                             model_dir=str(tmp_path))
    np.testing.assert_array_equal(state["weight"].numpy(), model.weight.detach().numpy())


def test_parameter_vectors_round_trip(torch):
    layer = ref.nn.Linear(3, 2)
    vector = ref.nn.utils.parameters_to_vector(layer.parameters())
    ref.nn.utils.vector_to_parameters(vector * 2, layer.parameters())
    assert math.isclose(ref.nn.utils.parameters_to_vector(layer.parameters()).sum().item(),
                        2 * vector.sum().item(), rel_tol=1e-6)
