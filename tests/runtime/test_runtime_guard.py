"""guard() on the runtime fixtures (torch and the engine) and in hand-written loops."""
from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcheck.runtime import GradGuardError, GradGuardWarning, guard

# buggy fixture -> the batch at which the guard must stop the loop, and a phrase of its message
BUGS = {
    "bug_stale_missing_zero_grad": (1, "an earlier step() already applied"),
    "bug_wiped_zero_between_backward_and_step": (0, "no backward()"),
    "bug_wiped_model_zero_grad": (0, "behind the optimizer"),
    "bug_discarded_accumulation": (1, "discarded gradients of 1 backward pass"),
}
CORRECT = ["correct_plain", "correct_accumulation", "correct_gan", "correct_lbfgs_closure",
           "correct_amp_scaler", "bug_unscaled_accumulation"]  # counts cannot see a loss scale
FRAMEWORKS = ["torch", "ref"]


def _run(setup, action="raise"):
    guards = [guard(opt, accumulation_steps=setup["accumulation_steps"], action=action)
              for _, opt in setup["pairs"]]
    try:
        for index, batch in enumerate(setup["batches"]):
            try:
                setup["step"](batch)
            except GradGuardError as exc:
                return index, str(exc), guards
        return None, "", guards
    finally:
        for g in guards:
            g.remove()


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("stem", sorted(BUGS))
def test_guard_stops_each_buggy_fixture_at_the_right_batch(fixture_setup, stem, framework):
    batch, phrase = BUGS[stem]
    setup = fixture_setup(stem, framework)
    index, message, _ = _run(setup)
    assert index == batch, message
    name = type(setup["pairs"][0][1]).__name__
    assert phrase in message and name in message


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("stem", CORRECT)
def test_guard_is_silent_on_correct_fixtures(fixture_setup, stem, framework):
    index, message, guards = _run(fixture_setup(stem, framework))
    assert index is None, message
    assert all(g.findings == [] for g in guards)


def test_warn_mode_keeps_training_and_records_findings(fixture_setup):
    setup = fixture_setup("bug_stale_missing_zero_grad", "torch")
    with pytest.warns(GradGuardWarning, match="stale gradients"):
        index, _, guards = _run(setup, action="warn")
    assert index is None
    assert len(guards[0].findings) == len(setup["batches"]) - 1


def test_warn_mode_warns_where_python_refuses_the_scripts_globals(fixture_setup, monkeypatch):
    # Python 3.12 raises ValueError for module globals whose __spec__ has no loader (a script
    # run by runpy); the warning must still be issued, at the user's line.
    import warnings

    real = warnings.warn_explicit

    def refusing(*args, module_globals=None, **kwargs):
        if module_globals is not None:
            raise ValueError("Module globals is missing a __spec__.loader")
        return real(*args, **kwargs)

    monkeypatch.setattr(warnings, "warn_explicit", refusing)
    setup = fixture_setup("bug_stale_missing_zero_grad", "torch")
    with pytest.warns(GradGuardWarning, match="stale gradients"):
        _run(setup, action="warn")


def _mlp(torch):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    return model, torch.ones(4, 3)


def test_wrapper_form_forwards_and_still_looks_like_an_optimizer(torch):
    model, x = _mlp(torch)
    opt = guard(torch.optim.SGD(model.parameters(), lr=0.1))
    assert isinstance(opt, torch.optim.Optimizer)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        scheduler.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5**3)
    opt.zero_grad()
    with pytest.raises(GradGuardError, match="SGD.step"):
        opt.step()


def test_leaving_the_block_removes_every_hook(torch):
    model, x = _mlp(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with guard(opt), pytest.raises(GradGuardError):
        model(x).sum().backward()
        opt.zero_grad()
        opt.step()
    assert "zero_grad" not in vars(opt)
    for _ in range(3):  # the missing zero_grad is no longer watched
        model(x).sum().backward()
        opt.step()


def test_resets_that_bypass_the_optimizer_are_understood(torch):
    model, x = _mlp(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with guard(opt):
        for set_to_none in (True, False, True):
            model.zero_grad(set_to_none=set_to_none)
            model(x).sum().backward()
            opt.step()
        for p in model.parameters():
            p.grad = None
        model(x).sum().backward()
        opt.step()


def test_accumulation_over_more_passes_than_allowed_is_stale(torch):
    model, x = _mlp(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with guard(opt, accumulation_steps=2):
        opt.zero_grad()
        for _ in range(3):
            model(x).sum().backward()
        with pytest.raises(GradGuardError, match="3 backward passes.*accumulation_steps=2"):
            opt.step()


def test_bad_arguments_are_rejected(torch):
    model, _ = _mlp(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="action"):
        guard(opt, action="ignore")
    with pytest.raises(ValueError, match="accumulation_steps"):
        guard(opt, accumulation_steps=0)
    with guard(opt) as guarded, pytest.raises(TypeError, match="already guarded"):
        guard(guarded)


def test_warn_action_does_not_raise(torch):
    model, x = _mlp(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with guard(opt, action="warn") as guarded, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model(x).sum().backward()
        opt.zero_grad()
        opt.step()
    assert [w.category for w in caught] == [GradGuardWarning]
    assert len(guarded.findings) == 1


# generated loop -> the batch where the guard must first object (None: it must stay silent)
FIRST_OBJECTION = {
    "correct": lambda k: None,
    "unscaled": lambda k: None,  # counts cannot see a loss scale
    "no_zero_grad": lambda k: 2 * k - 1,  # the second step sees 2k passes
    "zero_between": lambda k: k - 1,  # the first step sees none
    "zero_each_micro_batch": lambda k: k - 1 if k > 1 else None,  # the short step loses k-1
}


@given(bug=st.sampled_from(sorted(FIRST_OBJECTION)), k=st.integers(1, 3),
       optimizer_name=st.sampled_from(["sgd", "adam"]), seed=st.integers(0, 2**16))
def test_generated_loops_are_stopped_where_the_bug_first_bites(generated_loop, bug, k,
                                                                optimizer_name, seed):
    _, opt, step, _, batches = generated_loop(bug, k, optimizer_name, 2, seed)
    stopped = None
    with guard(opt, accumulation_steps=k):
        for index, batch in enumerate(batches):
            try:
                step(batch)
            except GradGuardError:
                stopped = index
                break
    assert stopped == FIRST_OBJECTION[bug](k)
