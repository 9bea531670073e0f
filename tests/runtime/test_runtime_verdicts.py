"""The verdicts issue 19 added, each on a minimal loop (torch and the reference engine), and the
pieces behind them: the DDP digests' verdicts, the accumulation-steps syntax."""
from __future__ import annotations

import math
import warnings

import pytest

from gradcheck.runtime import GradGuardError, GradGuardWarning, guard
from gradcheck.runtime.consistency import GROUPS, Consistency, Step
from gradcheck.runtime.session import parse_accumulation_steps


def _model(torch, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(3, 1), torch.ones(2, 3)


def test_a_second_step_without_backward_is_a_repeated_step(torch):
    model, x = _model(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with guard(opt), pytest.raises(GradGuardError, match="ran again with no backward") as info:
        model(x).sum().backward()
        opt.step()
        opt.step()
    assert "already applied once" in str(info.value)


def test_steps_that_never_had_a_gradient_are_reported_when_the_guard_ends(torch):
    model, x = _model(torch)
    copy = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(copy.parameters(), lr=0.1)  # the wrong model
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        guarded = guard(opt, action="warn")
        for _ in range(3):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        assert caught == []  # judged only when the run is over: it may get gradients later
        guarded.remove()
    assert [w.category for w in caught] == [GradGuardWarning]
    assert [p.kind for p in guarded.problems] == ["optimizer_without_gradients"]
    assert "no backward() reached any of its 2 parameters" in guarded.findings[0]


def test_an_optimizer_that_gets_gradients_late_is_not_reported(torch):
    model, x = _model(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with guard(opt) as guarded:
        opt.step()  # before training: changes nothing, and is no bug
        for _ in range(2):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    assert guarded.findings == []


def test_a_warm_up_that_never_resets_the_head_is_frozen_by_omission(torch):
    encoder, x = _model(torch)
    head = torch.nn.Linear(1, 1)
    opt_encoder = torch.optim.SGD(encoder.parameters(), lr=0.01)
    opt_head = torch.optim.SGD(head.parameters(), lr=0.01)
    guard_encoder, guard_head = guard(opt_encoder), guard(opt_head)
    try:
        with pytest.raises(GradGuardError, match="6 backward passes that piled up while other "
                                                 "optimizers stepped 6 times"):
            for step in range(8):
                head(encoder(x)).sum().backward()
                stepping = [opt_encoder] if step < 5 else [opt_encoder, opt_head]
                for opt in stepping:
                    opt.step()
                    opt.zero_grad()
    finally:
        guard_encoder.remove()
        guard_head._state.remove()


def test_accumulation_inferred_per_optimizer_keeps_an_actor_critic_silent(torch):
    actor, x = _model(torch)
    critic = torch.nn.Linear(3, 1)
    opt_actor = torch.optim.SGD(actor.parameters(), lr=0.01)
    opt_critic = torch.optim.SGD(critic.parameters(), lr=0.01)
    with guard(opt_actor, accumulation_steps=None) as g_actor, \
            guard(opt_critic, accumulation_steps=None) as g_critic:
        for step in range(1, 13):
            opt_critic.zero_grad()
            critic(x).sum().backward()
            opt_critic.step()
            (actor(x).sum() / 3).backward()
            if step % 3 == 0:
                opt_actor.step()
                opt_actor.zero_grad()
    assert g_actor.findings == g_critic.findings == []


class _Channel:
    """The channel as the verdicts see it: its ranks, and whether it closed."""

    ranks = (0, 1)
    closed_because = ""

    def close(self, because):
        self.closed_because = because


class _State:
    name = "SGD (train.py:9)"


def _arrived(number, low, high, ordinals=(0, 0), synced=1.0):
    """One step's reduced digests: maxima and minima over the ranks, per parameter group."""
    step = Step(_State(), number, "train.py:20", len(low))
    pad = [0.0] * (GROUPS - len(low))
    maxima = [ordinals[1], number, 1.0, *high, *pad]
    minima = [ordinals[0], number, synced, *low, *pad]
    return step, maxima, minima


def test_ranks_whose_digests_agree_are_silent():
    channel = _Channel()
    assert Consistency()._judge(channel, [_arrived(1, [1.0, 2.0], [1.0, 2.0])]) == []
    assert channel.closed_because == ""


def test_a_reduction_order_apart_is_agreement_and_inf_on_every_rank_too():
    arrived = [_arrived(1, [1.0], [1.0 + 1e-9]), _arrived(2, [math.inf], [math.inf])]
    assert Consistency()._judge(_Channel(), arrived) == []


def test_ranks_whose_digests_differ_are_reported_with_the_group_step_and_line():
    arrived = [_arrived(1, [1.0, 2.0], [1.0, 2.0]), _arrived(2, [1.0, 2.0], [1.0, 2.5]),
               _arrived(3, [1.0, 7.0], [math.inf, 7.0])]
    second, third = Consistency()._judge(_Channel(), arrived)
    assert (second.kind, second.optimizer, second.call, second.location) == (
        "unsynced_gradients", "SGD (train.py:9)", "step()", "train.py:20")
    assert "apply at step 2 differed between ranks 0, 1 (parameter group 1: squared norms " \
        "from 2 to 2.5)" in second.message
    assert "at step 3 differed between ranks 0, 1 (parameter group 0: squared norms from 1 " \
        "to inf)" in third.message


def test_steps_after_a_forward_under_no_sync_are_not_compared():
    assert Consistency()._judge(_Channel(), [_arrived(1, [1.0], [5.0], synced=0.0)]) == []


def test_ranks_at_different_steps_close_the_channel_without_a_verdict():
    channel = _Channel()
    arrived = [_arrived(4, [1.0], [5.0], ordinals=(0, 1)), _arrived(5, [1.0], [5.0])]
    assert Consistency()._judge(channel, arrived) == []
    assert channel.closed_because.startswith("at step 4 of SGD (train.py:9) the ranks were at "
                                             "different iterations")


@pytest.mark.parametrize("text, parsed", [
    ("", (None, {})), ("4", (4, {})), ("train.py:40=2", (None, {"train.py:40": 2})),
    ("1, gan.py:33=2,gan.py:34=1", (1, {"gan.py:33": 2, "gan.py:34": 1})),
])
def test_accumulation_steps_for_every_optimizer_or_by_line(text, parsed):
    assert parse_accumulation_steps(text) == parsed


@pytest.mark.parametrize("text", ["0", "four", "train.py=2", "train.py:40=0", "=3"])
def test_bad_accumulation_steps_name_the_value_and_the_form(text):
    with pytest.raises(ValueError, match="must be K or FILE:LINE=K .*e.g. train.py:40=2"):
        parse_accumulation_steps(text)
