"""check_training_step replays each update on copies: a second step() or a write to the
parameters after it is an ``update_mismatch``; rescaled gradients and closure steps are not."""
from __future__ import annotations

import numpy as np
import pytest

from gradcheck.runtime import check_training_step
from gradcheck.runtime.replay import ReplayUnavailable, common_factor, update_mismatch


def _setup(torch, optimizer="sgd", lr=0.1):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(0)
    batches = [(torch.tensor(rng.standard_normal((4, 3)).astype(np.float32)),
                torch.tensor(rng.standard_normal((4, 1)).astype(np.float32))) for _ in range(4)]
    return model, opt, batches


def _loss(model, batch):
    x, y = batch
    return ((model(x) - y) ** 2).mean()


def _step(torch, model, opt, *, twice_at=None, write_at=None, clip=None):
    seen = [0]

    def step(batch):
        index = seen[0]
        seen[0] += 1
        opt.zero_grad()
        _loss(model, batch).backward()
        if clip == "norm":
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e-3)
        elif clip == "value":
            torch.nn.utils.clip_grad_value_(model.parameters(), clip_value=1e-3)
        opt.step()
        if index == twice_at:
            opt.step()
        if index == write_at:
            with torch.no_grad():
                model[0].weight.mul_(0.5)

    return step


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_second_step_on_the_same_gradients_is_an_update_mismatch(torch, optimizer):
    model, opt, batches = _setup(torch, optimizer)
    step = _step(torch, model, opt, twice_at=2)
    report = check_training_step(step, model, opt, batches, raise_on_failure=False)
    assert report.kinds == {"update_mismatch"}, report.summary()
    assert {p.batch for p in report.problems} == {2}
    assert {p.parameter for p in report.problems} == {n for n, _ in model.named_parameters()}
    assert "step() ran 2 time(s)" in report.problems[0].message
    assert not report.passed and report.steps == 5


def test_a_doubled_update_is_caught_even_with_a_tiny_learning_rate(torch):
    model, opt, batches = _setup(torch, "sgd", lr=1e-5)
    report = check_training_step(_step(torch, model, opt, twice_at=0), model, opt, batches,
                                 raise_on_failure=False)
    assert report.kinds == {"update_mismatch"}
    assert {p.batch for p in report.problems} == {0}


def test_a_write_to_parameters_after_the_step_is_reported_unless_declared(torch):
    model, opt, batches = _setup(torch)
    step = _step(torch, model, opt, write_at=1)
    report = check_training_step(step, model, opt, batches, raise_on_failure=False)
    assert report.kinds == {"update_mismatch"}
    assert {(p.batch, p.parameter) for p in report.problems} == {(1, "0.weight")}
    model, opt, batches = _setup(torch)
    step = _step(torch, model, opt, write_at=1)
    quiet = check_training_step(step, model, opt, batches, check_update=False)
    assert quiet.passed and quiet.replays == 0


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_correct_loop_replays_every_update_silently(torch, optimizer):
    model, opt, batches = _setup(torch, optimizer)
    report = check_training_step(_step(torch, model, opt), model, opt, batches)
    assert report.problems == [] and report.replays == report.steps == 4


def test_clipping_by_the_global_norm_is_a_rescale_that_still_replays(torch):
    model, opt, batches = _setup(torch)
    step = _step(torch, model, opt, clip="norm", twice_at=3)
    report = check_training_step(step, model, opt, batches, raise_on_failure=False)
    assert report.replays == 4 and report.replay_skips == []
    assert report.kinds == {"update_mismatch"}  # the planted double step, and only it
    assert {p.batch for p in report.problems} == {3}


def test_an_edit_beyond_a_rescale_skips_the_replay_with_its_reason(torch):
    model, opt, batches = _setup(torch)
    step = _step(torch, model, opt, clip="value", twice_at=1)
    report = check_training_step(step, model, opt, batches)
    assert report.passed and report.replays == 0
    assert len(report.replay_skips) == 1 and "common factor" in report.replay_skips[0]
    assert "update replay skipped" in report.summary()


def test_closure_steps_are_not_replayed_and_may_backward_twice(torch):
    model, _, batches = _setup(torch)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=3)

    def step(batch):
        x, y = batch

        def closure():
            opt.zero_grad()
            fit = ((model(x) - y) ** 2).mean()
            fit.backward()
            penalty = 1e-3 * sum((p**2).sum() for p in model.parameters())
            penalty.backward()  # a second backward() in the same evaluation
            return fit + penalty

        opt.step(closure)

    report = check_training_step(step, model, opt, batches)
    assert report.problems == [] and report.replays == 0
    assert any("closure" in reason for reason in report.replay_skips)


def test_common_factor_accepts_one_scale_and_rejects_anything_else():
    want = [np.array([1.0, -2.0]), np.array([0.5])]
    assert common_factor([w * 0.25 for w in want], want) == pytest.approx(0.25)
    assert common_factor(want, want) == 1.0
    with pytest.raises(ReplayUnavailable, match="common factor"):
        common_factor([np.array([1.0, -1.0]), np.array([0.5])], want)
    with pytest.raises(ReplayUnavailable):
        common_factor([-w for w in want], want)  # a sign flip is not a rescale


def test_update_mismatch_tolerance_scales_with_the_update_and_the_dtype():
    before = np.array([1.0, 2.0])
    replayed = before - 1e-6
    assert update_mismatch(before, replayed, replayed, "float32", 1e-3, 0.0) is None
    doubled = before - 2e-6
    assert update_mismatch(before, replayed, doubled, "float32", 1e-3, 0.0) == pytest.approx(1e-6)
    nudged = replayed - 1e-7  # below one float32 unit of the values: rounding, not a repeat
    assert update_mismatch(before, replayed, nudged, "float32", 1e-3, 0.0) is None
    assert update_mismatch(before, replayed, nudged, "float64", 1e-3, 0.0) == pytest.approx(1e-7)
    assert update_mismatch(before, replayed, replayed, "float64", 1e-3, 0.0) is None
    assert update_mismatch(before, replayed, np.ones(3), "float64", 1e-3, 0.0) == float("inf")


def test_a_missing_zero_grad_behind_clipping_is_still_stale(torch):
    model, opt, batches = _setup(torch)

    def step(batch):
        _loss(model, batch).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e-3)  # a rescale, no reset
        opt.step()

    report = check_training_step(step, model, opt, batches, raise_on_failure=False)
    assert report.kinds == {"stale_gradients"}
    assert min(p.batch for p in report.problems) == 1
