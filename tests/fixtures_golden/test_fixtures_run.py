"""The bad fixtures run, and their bug has the real effect the linter warns about.

Each runnable fixture is executed twice per check: once with `torch` bound to the reference
engine `gradcheck.ref`, once with real PyTorch (skipped when torch is absent). Every bug is compared
with its corrected twin (a good_ fixture with the same data, model and seed) on the same backend.
The `run(name, backend, **kwargs)` fixture and the `backend` parametrization come from conftest.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

X = np.array([1.0, 2.0, 3.0])  # the y = 2x data of the *_script and amp fixtures
Y = 2.0 * X


def _mse_grad(w: float, b: float) -> np.ndarray:
    """d/d(w, b) of mean((w x + b - y)^2) on the y = 2x data, computed independently of torch."""
    residual = w * X + b - Y
    return np.array([2.0 * np.mean(residual * X), 2.0 * np.mean(residual)])


def _applied_vs_fresh(history: dict) -> tuple[np.ndarray, np.ndarray]:
    """(gradient each step applied, fresh gradient at the weights that step started from)."""
    applied = np.array(history["grads"])
    fresh = np.array([_mse_grad(w, b) for w, b in zip(history["weights"], history["biases"])])
    return applied, fresh[: len(applied)]


def _is_monotone_decreasing(values: list) -> bool:
    return all(b < a for a, b in itertools.pairwise(values))


def test_runnable_fixture_runs_and_returns_observations(
    run: Callable, runnable_fixture: Path, backend: str
) -> None:
    observations = run(runnable_fixture, backend)
    assert observations, f"{runnable_fixture.stem}.train() returned no observations"


# --- GC001, straight line: the weights never move ------------------------------------------


@pytest.mark.parametrize(
    ("bad", "good"),
    [
        ("bad_zero_between_straight_script", "good_zero_top_script"),
        ("bad_zero_between_manual_params", "good_manual_params_zero_after_step"),
    ],
)
def test_zero_between_backward_and_step_freezes_the_weights(
    run: Callable, backend: str, bad: str, good: str
) -> None:
    bug = run(bad, backend)
    twin = run(good, backend)
    assert np.allclose(bug["weights"], bug["weights"][0])
    assert np.allclose(bug["biases"], bug["biases"][0])
    assert np.allclose(bug["losses"], bug["losses"][0]), "the loss cannot change"
    assert abs(bug["grads"][0][0]) > 1.0, "backward did produce a gradient; step never used it"
    assert twin["weights"][0] == bug["weights"][0], "same initial weights on both sides"
    applied, fresh = _applied_vs_fresh(twin)
    assert np.allclose(applied, fresh, atol=1e-4), "the twin applies exactly the fresh gradient"
    assert _is_monotone_decreasing(twin["losses"])
    assert twin["losses"][-1] < 0.1 * twin["losses"][0]


# --- GC001, loop-carried: only the last micro-batch of each window is applied ---------------


def test_zero_on_every_micro_batch_applies_only_the_last_one(run: Callable, backend: str) -> None:
    accum, lr = 4, 0.1
    # With lr = 0 and no accumulation the twin reports each micro-batch's own gradient.
    micro = np.array(run("good_accum_modulo_same_if", backend, accum_steps=1, lr=0.0)["step_grads"])
    assert len(micro) == accum
    twin = run("good_accum_modulo_same_if", backend, accum_steps=accum, lr=lr)
    window = micro.sum(axis=0) / accum
    assert np.allclose(twin["step_grads"][0], window, atol=1e-5)
    assert np.allclose(np.subtract(twin["final"], twin["initial"]), -lr * window, atol=1e-5)
    last_only = micro[-1] / accum
    assert not np.allclose(last_only, window, atol=1e-3), "the data must make the bug visible"
    for name in ("bad_accum_zero_every_micro_batch", "bad_accum_continue_skip"):
        bug = run(name, backend, accum_steps=accum, lr=lr)
        assert np.allclose(bug["initial"], twin["initial"])
        assert np.allclose(bug["step_grads"][0], last_only, atol=1e-5), name
        assert np.allclose(np.subtract(bug["final"], bug["initial"]), -lr * last_only, atol=1e-5)


# --- GC002 / GC003: each step applies the sum of every gradient so far ----------------------


def test_missing_or_hoisted_zero_grad_sums_all_past_gradients(run: Callable, backend: str) -> None:
    twin = run("good_zero_top_script", backend)
    applied, fresh = _applied_vs_fresh(twin)
    assert np.allclose(applied, fresh, atol=1e-4), "the twin applies exactly the fresh gradient"
    assert _is_monotone_decreasing(twin["losses"])
    for name in ("bad_missing_zero_grad_script", "bad_zero_outside_loop_script"):
        bug = run(name, backend)
        applied, fresh = _applied_vs_fresh(bug)
        assert np.allclose(applied, np.cumsum(fresh, axis=0), atol=1e-3), name
        assert not _is_monotone_decreasing(bug["losses"]), f"{name}: the loss should oscillate"
        rises = sum(b > a for a, b in itertools.pairwise(bug["losses"]))
        assert rises >= 3, f"{name}: loss rose only {rises} times: {bug['losses']}"
        assert bug["losses"][-1] > twin["losses"][-1]


def test_helper_without_zero_grad_accumulates_across_calls(run: Callable, backend: str) -> None:
    # lr = 0 keeps the weights fixed, so the twin's per-batch gradients are the fresh ones.
    fresh = np.array(run("good_train_step_helper", backend, lr=0.0)["step_grads"])
    bug = np.array(run("bad_missing_zero_grad_train_step_helper", backend, lr=0.0)["step_grads"])
    assert np.allclose(bug, np.cumsum(fresh, axis=0), atol=1e-4)
    assert not np.allclose(bug[-1], fresh[-1], atol=1e-3)


def test_amp_branch_only_zeroing_accumulates_in_the_default_branch(
    run: Callable, backend: str
) -> None:
    twin = run("good_amp_both_branches", backend, use_amp=False)
    applied, fresh = _applied_vs_fresh(twin)
    assert np.allclose(applied, fresh, atol=1e-4)
    bug = run("bad_amp_branch_only_zeroes", backend, use_amp=False)
    applied, fresh = _applied_vs_fresh(bug)
    assert np.allclose(applied, np.cumsum(fresh, axis=0), atol=1e-3)
    assert bug["losses"][-1] > twin["losses"][-1]


# --- GC002 in a GAN: the generator's gradients keep growing ---------------------------------


def test_gan_optimizer_never_zeroed_grows_its_gradients(run: Callable, backend: str) -> None:
    twin = run("good_gan_two_optimizers", backend)["g_grad_norms"]
    bug = run("bad_gan_generator_never_zeroed", backend)["g_grad_norms"]
    assert np.isclose(bug[0], twin[0]), "same seed: the first step is identical"
    assert all(b > a for a, b in itertools.pairwise(bug)), f"generator grads should grow: {bug}"
    assert bug[-1] > 0.6 * len(bug) * bug[0]
    assert max(twin) < 3 * twin[0], f"the twin's gradients stay bounded: {twin}"


# --- GC004: the running total keeps every iteration's graph ---------------------------------


def _graph_nodes(grad_fn: object) -> int:
    """Count the autograd nodes reachable from grad_fn through `next_functions`."""
    seen, stack = set(), [grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(fn for fn, _ in getattr(node, "next_functions", ()))
    return len(seen)


def test_loss_total_without_item_retains_the_graph(run: Callable, backend: str) -> None:
    twin = run("good_loss_total_item", backend, epochs=1)
    assert isinstance(twin["total"], float)
    short = run("bad_loss_total_with_graph", backend, epochs=1, n_samples=16)
    long = run("bad_loss_total_with_graph", backend, epochs=1, n_samples=32)
    total = long["total"]
    assert total.requires_grad and total.grad_fn is not None, "the total carries a graph"
    assert abs(total.item() - twin["total"]) < 1e-4, "same numbers, different bookkeeping"
    assert hasattr(total.grad_fn, "next_functions"), "grad_fn must expose next_functions"
    # Twice the batches, twice the graph: every iteration's forward graph hangs off the total.
    assert long["n_batches"] == 2 * short["n_batches"]
    n_short, n_long = _graph_nodes(short["total"].grad_fn), _graph_nodes(total.grad_fn)
    assert n_short >= 2 * short["n_batches"]
    assert n_long >= 1.8 * n_short, (n_short, n_long)


# --- GC002 through a closure: LBFGS re-evaluations pile up gradients -------------------------


def test_lbfgs_closure_without_zero_grad_diverges(run: Callable, backend: str) -> None:
    twin = run("good_lbfgs_closure", backend)
    assert np.allclose(twin["coef"], [0.5, -1.0, 0.0, 2.0], atol=1e-3), twin["coef"]
    assert twin["losses"][-1] < 1e-6
    bug = run("bad_lbfgs_closure_no_zero", backend)
    assert bug["losses"][0] == twin["losses"][0], "the first evaluation is identical"
    assert not np.allclose(bug["coef"], twin["coef"], atol=1e-1)
    assert not bug["losses"][-1] < 1e3 * max(twin["losses"][-1], 1e-12), bug["losses"]


# --- must-stay-silent patterns really are correct --------------------------------------------


def test_zero_grad_in_handler_drops_only_the_poisoned_batch(run: Callable, backend: str) -> None:
    out = run("good_exception_handler_drops_batch", backend, epochs=3)
    assert out["skipped"] == 3, "one poisoned batch per epoch is dropped"
    assert np.all(np.isfinite(out["weights"])) and np.all(np.isfinite(out["losses"]))
    assert out["losses"][-1] < out["losses"][0]


def test_grad_copy_and_scale_keep_replicas_in_sync(run: Callable, backend: str) -> None:
    out = run("good_grad_allreduce_scaling", backend)
    first, second = out["replica_params"]
    assert np.allclose(first, second, atol=1e-6), "averaged gradients keep replicas identical"
    assert _is_monotone_decreasing(out["losses"])


def test_nanogpt_micro_steps_learn(run: Callable, backend: str) -> None:
    losses = run("good_nanogpt_micro_steps", backend, max_iters=8)["losses"]
    assert losses[-1] < losses[0]


def test_critic_zeroed_before_inner_loop_accumulates_within_it(run: Callable, backend: str) -> None:
    n_critic = 3
    twin = np.array(run("good_wgan_gp_autograd_grad", backend, n_critic=n_critic)["critic_norms"])
    bug = np.array(
        run("bad_wgan_critic_zero_before_inner_loop", backend, n_critic=n_critic)["critic_norms"]
    )
    assert np.isclose(bug[0], twin[0]), "the first critic step is identical"
    assert twin.max() < 1.5 * twin.min(), f"the twin's critic gradients stay level: {twin}"
    for window in bug.reshape(-1, n_critic):
        # Within one generator step the critic's gradient is the sum of 1, 2, 3 backward passes.
        assert window[1] > 1.6 * window[0] and window[2] > 2.4 * window[0], window


def test_engine_binding_is_temporary(run: Callable) -> None:
    before = {k: v for k, v in sys.modules.items() if k == "torch" or k.startswith("torch.")}
    run("good_zero_top_script", "ref")
    after = {k: v for k, v in sys.modules.items() if k == "torch" or k.startswith("torch.")}
    assert after.keys() == before.keys()
    assert all(after[k] is before[k] for k in before), "real torch modules are restored"


def test_zeroing_at_window_start_equals_zeroing_after_step(run: Callable, backend: str) -> None:
    # Two full windows: the second one proves the window-start zero clears the applied gradients.
    start = run("good_accum_zero_at_window_start", backend, n_samples=16)
    after = run("good_accum_modulo_same_if", backend, n_samples=16)
    assert len(start["step_grads"]) == 2
    assert np.allclose(start["step_grads"], after["step_grads"], atol=1e-6)
    assert np.allclose(start["final"], after["final"], atol=1e-6)


def test_nonfinite_grad_norm_batches_are_skipped_cleanly(run: Callable, backend: str) -> None:
    out = run("good_skip_nonfinite_grad_norm", backend, epochs=3)
    assert out["skipped"] == 3, "the poisoned batch is skipped once per epoch"
    assert np.all(np.isfinite(out["params"])) and np.all(np.isfinite(out["norms"]))
    per_epoch = np.array(out["losses"]).reshape(3, -1).mean(axis=1)
    assert per_epoch[-1] < per_epoch[0], per_epoch
