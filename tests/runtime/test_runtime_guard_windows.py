"""guard(): which backward passes belong to an accumulation window (GAN cross-gradients, a
partial window at epoch end), rescale versus reset, and closures with several backward passes."""
from __future__ import annotations

import numpy as np
import pytest

from gradcheck.runtime import GradGuardError, check_training_step, guard


def _data(torch, count, width=2):
    rng = np.random.default_rng(1)
    return [torch.tensor(rng.standard_normal((4, width)).astype(np.float32))
            for _ in range(count)]


def _gan(torch):
    torch.manual_seed(0)
    gen = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    disc = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    return (gen, disc, torch.optim.SGD(gen.parameters(), lr=0.01),
            torch.optim.SGD(disc.parameters(), lr=0.01))


def _run_gan(torch, k, contaminate=False):
    """D accumulates k micro-batches; G steps once per D update, its loss reaching D's params."""
    gen, disc, opt_g, opt_d = _gan(torch)
    with guard(opt_d, accumulation_steps=k), guard(opt_g):
        for i, noise in enumerate(_data(torch, 3 * k)):
            fake = gen(noise)
            d_loss = ((disc(noise + 2.0) - 1.0) ** 2).mean() + (disc(fake.detach()) ** 2).mean()
            (d_loss / k).backward()
            if (i + 1) % k == 0:
                opt_d.step()
                opt_d.zero_grad()
                opt_g.zero_grad()
                ((disc(fake) - 1.0) ** 2).mean().backward()
                opt_g.step()
                if not contaminate:
                    opt_d.zero_grad()  # drops what G's loss put on D's parameters


@pytest.mark.parametrize("k", [2, 3])
def test_a_gan_cross_gradient_wiped_before_the_next_window_is_not_discarded(torch, k):
    _run_gan(torch, k)


def test_a_cross_gradient_left_in_the_next_window_is_stale(torch):
    with pytest.raises(GradGuardError, match="3 backward passes.*accumulation_steps=2"):
        _run_gan(torch, 2, contaminate=True)


def _epochs(torch, k, batches, reset_each_micro_batch=False):
    """Two epochs of ``batches`` micro-batches; each epoch starts with zero_grad()."""
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with guard(opt, accumulation_steps=k):
        for _ in range(2):
            opt.zero_grad()  # drops the partial window the last epoch left
            for i, x in enumerate(_data(torch, batches)):
                if reset_each_micro_batch:
                    opt.zero_grad()
                (model(x).sum() / k).backward()
                if (i + 1) % k == 0:
                    opt.step()
                    opt.zero_grad()


@pytest.mark.parametrize("batches", [4, 5, 7])
def test_a_partial_window_dropped_at_epoch_end_is_silent(torch, batches):
    _epochs(torch, 3 if batches == 7 else 2, batches)


def test_a_reset_inside_every_window_is_still_reported_at_the_short_step(torch):
    with pytest.raises(GradGuardError, match="discarded gradients of 2 backward pass.*1 of "
                                             "accumulation_steps=3"):
        _epochs(torch, 3, 6, reset_each_micro_batch=True)


def _unscale(torch, model, factor):
    """What a loss scaler's unscale_ does: divide every gradient in place."""
    with torch.no_grad():
        for p in model.parameters():
            p.grad.mul_(1.0 / factor)


@pytest.mark.parametrize("rescale", ["clip_grad_norm_", "unscale_"])
def test_a_rescale_between_passes_does_not_hide_a_missing_zero_grad(torch, rescale):
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def edit():
        if rescale == "clip_grad_norm_":
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e-3)
        else:
            _unscale(torch, model, 8.0)

    with guard(opt), pytest.raises(GradGuardError, match="an earlier step.. already applied") as info:
        for index, x in enumerate(_data(torch, 3)):
            (model(x).sum() * (8.0 if rescale == "unscale_" else 1.0)).backward()
            edit()
            opt.step()
    assert index == 1, info.value


@pytest.mark.parametrize("rescale", ["clip_grad_norm_", "unscale_"])
def test_a_correct_loop_with_a_rescale_stays_silent(torch, rescale):
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with guard(opt, accumulation_steps=2):
        for i, x in enumerate(_data(torch, 6)):
            (model(x).sum() * 4.0).backward()
            if (i + 1) % 2 == 0:
                if rescale == "clip_grad_norm_":
                    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e-3)
                else:
                    _unscale(torch, model, 8.0)
                opt.step()
                opt.zero_grad()


def test_an_in_place_zeroing_outside_the_optimizer_is_still_a_reset(torch):
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with guard(opt):
        for x in _data(torch, 3):
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.zero_()
            model(x).sum().backward()
            opt.step()


def _lbfgs_step(torch, model, opt, zero_first):
    def step(x):
        def closure():
            if zero_first:
                opt.zero_grad()
            fit = (model(x) ** 2).mean()
            fit.backward()
            penalty = 1e-3 * sum((p**2).sum() for p in model.parameters())
            penalty.backward()  # a second backward() in the same closure evaluation
            return fit + penalty

        return opt.step(closure)

    return step


@pytest.mark.parametrize("zero_first", [True, False])
def test_a_closure_with_two_backward_passes_is_judged_per_evaluation(torch, zero_first):
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=3)
    step = _lbfgs_step(torch, model, opt, zero_first)
    batches = _data(torch, 3)
    report = check_training_step(step, model, opt, batches, raise_on_failure=False)
    assert report.kinds == (set() if zero_first else {"stale_gradients"}), report.summary()
    with guard(opt) as guarded:
        try:
            for x in batches:
                step(x)
        except GradGuardError as exc:
            assert not zero_first, exc
            assert "top of the closure" in str(exc)
        else:
            assert zero_first and guarded.findings == []
