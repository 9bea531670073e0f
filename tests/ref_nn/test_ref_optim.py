"""Optimizers and LR schedulers: 100 steps on the same MLP, data and initial weights as torch."""
from __future__ import annotations

import numpy as np
import pytest

STEPS = 100

# (optimizer name, keyword arguments): every option torch's update formulas branch on.
OPTIMIZER_CASES = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, weight_decay=0.1)),
    ("SGD", dict(lr=0.01, momentum=0.5, weight_decay=0.01, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.05)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.01, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, weight_decay=0.01)),
    ("RMSprop", dict(lr=0.005, momentum=0.9, centered=True)),
    ("RMSprop", dict(lr=0.005, centered=True, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.01, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.01, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.01, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.01, decoupled_weight_decay=True, maximize=True)),
]


def _case_id(case):
    name, kwargs = case
    return name + "".join(f"-{k}={v}" for k, v in kwargs.items())


def _data(seed=0, n=16):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 4)), rng.normal(size=(n, 3))


def _train(lib, model, make_optimizer, x, y, steps=STEPS, make_scheduler=None):
    """The canonical loop; returns per-step losses and learning rates."""
    optimizer = make_optimizer(model.parameters())
    scheduler = make_scheduler(optimizer) if make_scheduler else None
    xs, ys = lib.tensor(x), lib.tensor(y)
    losses, lrs = [], []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = lib.nn.functional.mse_loss(model(xs), ys)
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
            lrs.append(scheduler.get_last_lr()[0])
        losses.append(loss.item())
    return losses, lrs


def _twin_models(ref, torch, helpers):
    torch.manual_seed(0)
    t_model = helpers.mlp(torch)
    r_model = helpers.mlp(ref)
    helpers.copy_parameters(t_model, r_model, ref)
    return t_model, r_model


def _assert_same_weights(t_model, r_model, helpers):
    t_params = dict(t_model.named_parameters())
    for name, p in r_model.named_parameters():
        helpers.assert_close(p, t_params[name], what=name)


@pytest.mark.parametrize("case", OPTIMIZER_CASES, ids=_case_id)
def test_optimizer_trajectory_matches_torch(case, ref, torch, helpers):
    name, kwargs = case
    t_model, r_model = _twin_models(ref, torch, helpers)
    x, y = _data()
    t_losses, _ = _train(torch, t_model, lambda p: getattr(torch.optim, name)(p, **kwargs), x, y)
    r_losses, _ = _train(ref, r_model, lambda p: getattr(ref.optim, name)(p, **kwargs), x, y)
    np.testing.assert_allclose(r_losses, t_losses, rtol=1e-6)
    _assert_same_weights(t_model, r_model, helpers)
    assert r_losses[0] != r_losses[-1], "the optimizer never moved the weights"


SCHEDULER_CASES = {
    "StepLR": lambda lib: lambda opt: lib.optim.lr_scheduler.StepLR(opt, step_size=7, gamma=0.5),
    "LambdaLR": lambda lib: lambda opt: lib.optim.lr_scheduler.LambdaLR(
        opt, lambda epoch: 1.0 / (1.0 + 0.1 * epoch)),
    "CosineAnnealingLR": lambda lib: lambda opt: lib.optim.lr_scheduler.CosineAnnealingLR(
        opt, T_max=30, eta_min=0.001),
    "MultiStepLR": lambda lib: lambda opt: lib.optim.lr_scheduler.MultiStepLR(
        opt, milestones=[10, 30, 30, 60], gamma=0.5),
    "ExponentialLR": lambda lib: lambda opt: lib.optim.lr_scheduler.ExponentialLR(opt, 0.97),
}


@pytest.mark.parametrize("scheduler", sorted(SCHEDULER_CASES))
def test_scheduler_trajectory_matches_torch(scheduler, ref, torch, helpers):
    t_model, r_model = _twin_models(ref, torch, helpers)
    x, y = _data(1)

    def run(lib, model):
        return _train(lib, model, lambda p: lib.optim.SGD(p, lr=0.1, momentum=0.5), x, y,
                      make_scheduler=SCHEDULER_CASES[scheduler](lib))

    t_losses, t_lrs = run(torch, t_model)
    r_losses, r_lrs = run(ref, r_model)
    np.testing.assert_allclose(r_lrs, t_lrs, rtol=1e-12)
    np.testing.assert_allclose(r_losses, t_losses, rtol=1e-6)
    _assert_same_weights(t_model, r_model, helpers)
    assert len(set(np.round(r_lrs, 12))) > 2, "the schedule never changed the learning rate"


CLOSED_FORM = {
    "CosineAnnealingLR": dict(T_max=5),
    "StepLR": dict(step_size=4, gamma=0.5),
    "MultiStepLR": dict(milestones=[2, 8, 11]),
    "ExponentialLR": dict(gamma=0.9),
}


@pytest.mark.parametrize("name", sorted(CLOSED_FORM))
def test_closed_form_with_explicit_epoch_matches_torch(name, ref, torch):
    def lrs(lib):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **CLOSED_FORM[name])
        out = []
        for epoch in (3, 7, 10, 12):
            opt.step()
            with pytest.warns(UserWarning, match="deprecated"):
                sched.step(epoch)
            out.append(sched.get_last_lr()[0])
        return out

    np.testing.assert_allclose(lrs(ref), lrs(torch), rtol=1e-12)


def test_scheduler_before_optimizer_warns_like_torch(ref, torch):
    for lib in (torch, ref):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0)
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=1)
        with pytest.warns(UserWarning, match="optimizer.step()"):
            sched.step()


def test_lbfgs_matches_torch(ref, torch, helpers):
    t_model, r_model = _twin_models(ref, torch, helpers)
    x, y = _data(2)

    def run(lib, model):
        opt = lib.optim.LBFGS(model.parameters(), lr=0.5, max_iter=10, history_size=5)
        xs, ys = lib.tensor(x), lib.tensor(y)

        def closure():
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(model(xs), ys)
            loss.backward()
            return loss

        return [opt.step(closure).item() for _ in range(4)]

    t_losses, r_losses = run(torch, t_model), run(ref, r_model)
    np.testing.assert_allclose(r_losses, t_losses, rtol=1e-6)
    _assert_same_weights(t_model, r_model, helpers)
    assert r_losses[-1] < r_losses[0]


@pytest.mark.parametrize("name, kwargs", [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1)),
    ("Adam", dict(lr=0.1, weight_decay=0.1)),
    ("AdamW", dict(lr=0.1)),
    ("RMSprop", dict(lr=0.1, momentum=0.9, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1)),
])
def test_none_grad_is_skipped_but_zero_grad_moves(name, kwargs, ref, torch, helpers):
    """torch's rule: `.grad is None` -> untouched; a zero grad still decays and keeps momentum."""
    def run(lib):
        skipped = lib.nn.Parameter(lib.tensor([1.0, -2.0], dtype=lib.float64))
        zeroed = lib.nn.Parameter(lib.tensor([1.0, -2.0], dtype=lib.float64))
        opt = getattr(lib.optim, name)([skipped, zeroed], **kwargs)
        history = []
        for step in range(3):
            # A real gradient first (builds momentum), then zero gradients.
            zeroed.grad = lib.tensor([0.5, 0.5], dtype=lib.float64) * float(step == 0)
            opt.step()
            history.append(zeroed.detach().clone().numpy())
        return skipped.detach().numpy(), np.array(history), len(opt.state[skipped])

    t_skipped, t_hist, t_state = run(torch)
    r_skipped, r_hist, r_state = run(ref)
    np.testing.assert_array_equal(t_skipped, [1.0, -2.0])
    np.testing.assert_array_equal(r_skipped, [1.0, -2.0])
    assert r_state == t_state
    helpers.assert_close(r_hist, t_hist, rtol=1e-12)
    assert not np.allclose(r_hist[1], r_hist[2]), "a zero grad should still move the parameter"


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_matches_torch(set_to_none, ref, torch):
    def run(lib):
        model = lib.nn.Linear(2, 1)
        opt = lib.optim.SGD(model.parameters(), lr=0.1)
        model(lib.ones(3, 2)).sum().backward()
        opt.zero_grad(set_to_none=set_to_none)
        return [None if p.grad is None else p.grad.tolist() for p in model.parameters()]

    assert run(ref) == run(torch)
    if set_to_none:
        assert run(ref) == [None, None]


def test_zero_grad_default_is_none(ref):
    model = ref.nn.Linear(2, 1)
    opt = ref.optim.SGD(model.parameters(), lr=0.1)
    model(ref.ones(1, 2)).sum().backward()
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    model(ref.ones(1, 2)).sum().backward()
    model.zero_grad(set_to_none=False)
    assert all(p.grad.abs().sum().item() == 0 for p in model.parameters())


@pytest.mark.parametrize("name, kwargs", [
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
    ("Adagrad", dict(lr=0.1)),
])
def test_state_dict_round_trip_resumes_exactly(name, kwargs, ref, torch, helpers):
    x, y = _data(3)
    make = lambda p: getattr(ref.optim, name)(p, **kwargs)
    straight = helpers.mlp(ref)
    resumed = helpers.mlp(ref)
    helpers.copy_parameters(straight, resumed, ref)
    _train(ref, straight, make, x, y, steps=10)

    opt = make(resumed.parameters())
    xs, ys = ref.tensor(x), ref.tensor(y)
    for step in range(10):
        if step == 5:  # checkpoint and restore into a brand-new optimizer
            saved = opt.state_dict()
            opt = make(resumed.parameters())
            opt.load_state_dict(saved)
        opt.zero_grad()
        ref.nn.functional.mse_loss(resumed(xs), ys).backward()
        opt.step()
    for (_, a), (_, b) in zip(straight.named_parameters(), resumed.named_parameters()):
        helpers.assert_close(a, b, rtol=1e-12)
    assert set(saved) == {"state", "param_groups"}
    assert saved["param_groups"][0]["params"] == list(range(4))


def test_state_dict_layout_matches_torch(ref, torch, helpers):
    t_model, r_model = _twin_models(ref, torch, helpers)
    x, y = _data()
    _train(torch, t_model, lambda p: torch.optim.Adam(p, lr=0.01), x, y, steps=2)
    _train(ref, r_model, lambda p: ref.optim.Adam(p, lr=0.01), x, y, steps=2)
    t_opt = torch.optim.Adam(t_model.parameters(), lr=0.01)
    r_opt = ref.optim.Adam(r_model.parameters(), lr=0.01)
    for lib, model, opt in ((torch, t_model, t_opt), (ref, r_model, r_opt)):
        lib.nn.functional.mse_loss(model(lib.tensor(x)), lib.tensor(y)).backward()
        opt.step()
    t_state, r_state = t_opt.state_dict()["state"], r_opt.state_dict()["state"]
    assert sorted(r_state) == sorted(t_state)
    for index in t_state:
        assert sorted(r_state[index]) == sorted(t_state[index])
        helpers.assert_close(r_state[index]["exp_avg"], t_state[index]["exp_avg"])
        assert r_state[index]["step"].item() == t_state[index]["step"].item()


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "LBFGS",
                                  "Adadelta", "NAdam", "RAdam"])
def test_param_group_keys_match_torch(name, ref, torch):
    def group(lib):
        opt = getattr(lib.optim, name)([lib.nn.Parameter(lib.ones(1))], lr=0.1)
        return opt.state_dict()["param_groups"][0]

    r, t = group(ref), group(torch)
    assert sorted(r) == sorted(t)
    assert {k: v for k, v in r.items() if k != "betas"} == \
        {k: v for k, v in t.items() if k != "betas"}


def test_differentiable_optimizer_is_a_clear_error(ref):
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        ref.optim.Adam([ref.nn.Parameter(ref.ones(1))], differentiable=True)


def test_step_hooks_follow_torch_protocol(ref, torch):
    def run(lib):
        w = lib.nn.Parameter(lib.ones(1))
        opt = lib.optim.SGD([w], lr=0.1)
        calls = []
        pre = opt.register_step_pre_hook(
            lambda o, a, k: calls.append(("pre", o is opt and a[0] is opt, a, k)))
        post = opt.register_step_post_hook(
            lambda o, a, k: calls.append(("post", o is opt and a[0] is opt, a, k)))
        w.grad = lib.ones(1)
        opt.step()
        pre.remove()
        opt.step()
        post.remove()
        opt.step()
        return calls, w.item()

    (t_calls, t_w), (r_calls, r_w) = run(torch), run(ref)
    # torch passes the optimizer itself as args[0]; compare everything but that object.
    strip = [(kind, same, len(args), kwargs) for kind, same, args, kwargs in t_calls]
    assert [(kind, same, len(args), kwargs) for kind, same, args, kwargs in r_calls] == strip
    assert strip == [("pre", True, 1, {}), ("post", True, 1, {}), ("post", True, 1, {})]
    assert r_w == pytest.approx(t_w)


def test_closure_is_evaluated_with_grad_enabled(ref):
    w = ref.nn.Parameter(ref.tensor([2.0]))
    opt = ref.optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with ref.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 4.0
    assert w.item() == pytest.approx(1.0)


def test_param_groups_use_their_own_hyperparameters(ref, torch):
    def run(lib):
        a, b = lib.nn.Parameter(lib.ones(1)), lib.nn.Parameter(lib.ones(1))
        opt = lib.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
        a.grad, b.grad = lib.ones(1), lib.ones(1)
        opt.step()
        return a.item(), b.item(), opt.param_groups[1]["momentum"]

    assert run(ref) == pytest.approx(run(torch))


@pytest.mark.parametrize("bad", [
    lambda ref, p: ref.optim.SGD(p, lr=-1.0),
    lambda ref, p: ref.optim.Adam(p, betas=(1.0, 0.9)),
    lambda ref, p: ref.optim.SGD(p, lr=0.1, nesterov=True),
    lambda ref, p: ref.optim.SGD([], lr=0.1),
    lambda ref, p: ref.optim.SGD(p[0], lr=0.1),
])
def test_bad_hyperparameters_raise_clear_errors(bad, ref):
    params = [ref.nn.Parameter(ref.ones(1))]
    with pytest.raises((ValueError, TypeError)) as info:
        bad(ref, params)
    assert len(str(info.value)) > 10


@pytest.mark.parametrize(("name", "kwargs"), [
    ("SGD", dict(lr=-1.0)), ("SGD", dict(lr=0.1, momentum=-1.0)),
    ("Adam", dict(eps=-1.0)), ("Adam", dict(weight_decay=-1.0)),
    ("RMSprop", dict(lr=-1.0)), ("RMSprop", dict(alpha=-1.0)),
    ("Adagrad", dict(lr=-1.0)), ("Adagrad", dict(initial_accumulator_value=-1.0)),
    ("LBFGS", dict(lr=-1.0)),
], ids=lambda v: v if isinstance(v, str) else ",".join(v))
def test_negative_hyperparameter_error_starts_with_torchs_message(name, kwargs, ref, torch):
    def message(lib):
        with pytest.raises(ValueError) as info:
            getattr(lib.optim, name)([lib.nn.Parameter(lib.ones(1))], **kwargs)
        return str(info.value)

    expected = message(torch)
    assert message(ref).startswith(expected), (message(ref), expected)


def test_step_pre_hook_can_replace_arguments(ref, torch):
    def run(lib):
        w = lib.nn.Parameter(lib.tensor([3.0]))
        opt = lib.optim.SGD([w], lr=0.25)

        def closure():
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            return loss

        opt.register_step_pre_hook(lambda o, args, kwargs: (args, {"closure": closure}))
        loss = opt.step()  # the hook supplies the closure
        return loss.item(), w.item()

    assert run(ref) == pytest.approx(run(torch))
    assert run(ref) == pytest.approx((9.0, 1.5))
