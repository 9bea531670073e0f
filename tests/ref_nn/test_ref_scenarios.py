"""The seed scenarios: tiny training scripts run once with the engine and once with torch.

Each script takes the framework module as its `torch` argument, so the very same code runs on
both; the engine must reproduce torch's numbers, including the buggy loops' wrong behaviour.
"""
from __future__ import annotations

import numpy as np
import pytest

X = [[1.0], [2.0], [3.0]]
Y = [[2.0], [4.0], [6.0]]
LR = 0.01


def _regression(torch, order, steps=30, weight=0.5, bias=0.1):
    """1-feature linear regression; `order` places zero_grad ("top", "between", "none")."""
    model = torch.nn.Linear(1, 1)
    with torch.no_grad():
        model.weight.fill_(weight)
        model.bias.fill_(bias)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    criterion = torch.nn.MSELoss()
    x, y = torch.tensor(X), torch.tensor(Y)
    losses, weights = [], []
    for _ in range(steps):
        if order == "top":
            optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        if order == "between":
            optimizer.zero_grad()  # BUG: wipes the gradient right before it is used
        optimizer.step()
        losses.append(loss.item())
        weights.append(model.weight.item())
    return np.array(losses), np.array(weights)


def _manual_sgd(torch, steps=30):
    """Hand-written SGD through `.data`, zeroing `W.grad.data` after each update."""
    W = torch.tensor([[0.5]], requires_grad=True)
    b = torch.tensor([0.1], requires_grad=True)
    x, y = torch.tensor(X), torch.tensor(Y)
    losses = []
    for _ in range(steps):
        loss = ((x @ W + b - y) ** 2).mean()
        loss.backward()
        W.data -= LR * W.grad.data
        b.data -= LR * b.grad.data
        W.grad.data.zero_()
        b.grad.data.zero_()
        losses.append(loss.item())
    return np.array(losses), W.item(), b.item()


def _accumulated_grad(torch, k):
    """Gradient of the mean loss, either full-batch (k=1) or accumulated over k micro-batches."""
    generator = np.random.default_rng(7)
    x_all = torch.tensor(generator.normal(size=(12, 3)))
    y_all = torch.tensor(generator.normal(size=(12, 1)))
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor(np.array([[0.3, -0.2, 0.5]])))
        model.bias.fill_(0.1)
    model.zero_grad()
    size = 12 // k
    for i in range(k):
        xb, yb = x_all[i * size:(i + 1) * size], y_all[i * size:(i + 1) * size]
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        (loss / k).backward()
    return [p.grad.detach().numpy().copy() for p in model.parameters()]


@pytest.fixture(params=["engine", "torch"])
def lib(request, ref):
    return ref if request.param == "engine" else pytest.importorskip("torch")


def test_1_zero_grad_at_top_learns(lib):
    losses, _ = _regression(lib, "top")
    assert np.all(np.diff(losses) < 0), "loss should fall monotonically with a correct loop"
    assert losses[-1] < 0.05 * losses[0]


def test_2_zero_grad_between_backward_and_step_freezes_weights(lib):
    losses, weights = _regression(lib, "between")
    assert np.all(weights == 0.5), "step() must see no gradient, so weights never change"
    assert np.all(losses == losses[0])


def test_3_missing_zero_grad_oscillates(lib):
    losses, _ = _regression(lib, "none", steps=40)
    diffs = np.diff(losses)
    assert not np.all(diffs < 0), "accumulated gradients should break monotone descent"
    sign_changes = np.sum(np.sign(diffs[1:]) != np.sign(diffs[:-1]))
    assert sign_changes >= 3, f"expected an oscillating loss, got {losses}"


def test_4_manual_sgd_with_grad_data_zero_learns(lib):
    losses, w, _ = _manual_sgd(lib)
    assert np.all(np.diff(losses) < 0)
    assert abs(w - 2.0) < abs(0.5 - 2.0)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_5_accumulation_over_micro_batches_equals_full_batch(lib, k):
    full = _accumulated_grad(lib, 1)
    accumulated = _accumulated_grad(lib, k)
    for a, f in zip(accumulated, full):
        np.testing.assert_allclose(a, f, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("order", ["top", "between", "none"])
def test_regression_scenarios_match_torch_numbers(order, ref, torch):
    r_losses, r_weights = _regression(ref, order)
    t_losses, t_weights = _regression(torch, order)
    np.testing.assert_allclose(r_losses, t_losses, rtol=1e-5)
    np.testing.assert_allclose(r_weights, t_weights, rtol=1e-5)


def test_manual_sgd_matches_torch_numbers(ref, torch):
    r, t = _manual_sgd(ref), _manual_sgd(torch)
    np.testing.assert_allclose(r[0], t[0], rtol=1e-5)
    assert r[1:] == pytest.approx(t[1:], rel=1e-5)


def test_accumulation_matches_torch_numbers(ref, torch):
    for a, b in zip(_accumulated_grad(ref, 3), _accumulated_grad(torch, 3)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
