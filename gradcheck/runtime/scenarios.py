"""The documented PyTorch accumulation semantics, one scenario per row.

Each scenario runs on a torch-like framework module ``fw`` (real ``torch``, ``gradcheck.ref``,
or anything shaped like them) and returns named observations: numbers, lists and flags. Each
row also states the rule as an invariant over those observations, so a framework can be judged
on its own as well as against the reference engine's observations.

>>> [row.name for row in SCENARIOS][:2]
['k-backward-k-grad', 'freed-graph-error']
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradcheck.runtime.adapter import as_numpy

Observations = dict[str, Any]


def _values(tensor: Any) -> list[float]:
    return [round(float(v), 6) for v in as_numpy(tensor).ravel()]


def _raises(action: Callable[[], Any]) -> bool:
    try:
        action()
    except RuntimeError:
        return True
    return False


def k_backward_passes(fw: Any) -> Observations:
    w = fw.tensor([1.0, -2.0, 3.0], requires_grad=True)
    x = fw.tensor([0.5, 1.5, -1.0])
    ((w * w) * x).sum().backward()
    once = _values(w.grad)
    for _ in range(2):
        ((w * w) * x).sum().backward()
    return {"grad_after_1": once, "grad_after_3": _values(w.grad)}


def freed_graph(fw: Any) -> Observations:
    x = fw.tensor([1.0, 2.0], requires_grad=True)
    saved = (x * x).sum()
    saved.backward()
    unsaved = (x + 1.0).sum()
    unsaved.backward()
    retained = (x * x).sum()
    retained.backward(retain_graph=True)
    return {
        "second_backward_needing_saved_tensors_raises": _raises(saved.backward),
        "second_backward_without_saved_tensors_raises": _raises(unsaved.backward),
        "second_backward_after_retain_graph_raises": _raises(retained.backward),
    }


def non_leaf_grad(fw: Any) -> Observations:
    x = fw.tensor([1.0, 2.0, 3.0], requires_grad=True)
    plain = x * 2.0
    kept = x * 3.0
    kept.retain_grad()
    (plain * kept).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns when reading a non-leaf's .grad
        plain_grad = plain.grad
    return {
        "leaf_is_leaf": bool(x.is_leaf),
        "non_leaf_is_leaf": bool(plain.is_leaf),
        "non_leaf_grad_is_none": plain_grad is None,
        "retained_grad": _values(kept.grad),
        "leaf_grad": _values(x.grad),
    }


def zero_grad_modes(fw: Any) -> Observations:
    w = fw.tensor([1.0, 2.0], requires_grad=True)
    opt = fw.optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    opt.zero_grad()
    default_is_none = w.grad is None
    (w * w).sum().backward()
    opt.zero_grad(set_to_none=False)
    kept = None if w.grad is None else _values(w.grad)
    (w * w).sum().backward()
    opt.zero_grad(set_to_none=True)
    return {
        "default_sets_none": default_is_none,
        "set_to_none_false_keeps_tensor": kept is not None,
        "set_to_none_false_values": kept,
        "set_to_none_true_sets_none": w.grad is None,
    }


def step_skips_none(fw: Any) -> Observations:
    untouched = fw.tensor([1.0, 2.0], requires_grad=True)
    zero = fw.tensor([1.0, 2.0], requires_grad=True)
    live = fw.tensor([1.0, 2.0], requires_grad=True)
    opt = fw.optim.SGD([untouched, zero, live], lr=0.1, momentum=0.9, weight_decay=0.1)
    ((live * live).sum() + (zero * 0.0).sum()).backward()
    opt.step()
    after_first = _values(live)
    opt.zero_grad(set_to_none=False)
    opt.step()
    return {
        "none_grad_param": _values(untouched),
        "none_grad_still_none": untouched.grad is None,
        "zero_grad_param_after_weight_decay": _values(zero),
        "live_param_after_step_1": after_first,
        "live_param_after_zero_grad_step_2": _values(live),
    }


def _micro_batch_grad(fw: Any, parts: list[tuple[np.ndarray, np.ndarray]], weights: list[float]):
    w = fw.tensor([0.5, -1.0], requires_grad=True)
    for (inputs, targets), weight in zip(parts, weights):
        residual = fw.tensor(inputs) @ w - fw.tensor(targets)
        ((residual * residual).mean() * weight).backward()
    return _values(w.grad)


def loss_over_k(fw: Any) -> Observations:
    inputs = np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0], [-1.0, 1.5]], dtype=np.float32)
    targets = np.array([1.0, 0.0, -1.0, 2.0], dtype=np.float32)
    halves = [(inputs[:2], targets[:2]), (inputs[2:], targets[2:])]
    uneven = [(inputs[:1], targets[:1]), (inputs[1:], targets[1:])]
    return {
        "full_batch": _micro_batch_grad(fw, [(inputs, targets)], [1.0]),
        "equal_micro_batches_loss_over_k": _micro_batch_grad(fw, halves, [0.5, 0.5]),
        "unequal_micro_batches_loss_over_k": _micro_batch_grad(fw, uneven, [0.5, 0.5]),
        "unequal_micro_batches_weighted_by_size": _micro_batch_grad(fw, uneven, [0.25, 0.75]),
    }


def autograd_grad(fw: Any) -> Observations:
    x = fw.tensor([1.0, 2.0], requires_grad=True)
    (returned,) = fw.autograd.grad((x * x).sum(), [x])
    none_after = x.grad is None
    (x * x * x).sum().backward()
    before = _values(x.grad)
    fw.autograd.grad((x * x).sum(), [x])
    return {
        "returned_grad": _values(returned),
        "grad_still_none": none_after,
        "existing_grad_before": before,
        "existing_grad_after": _values(x.grad),
    }


def _close(a: Any, b: Any) -> bool:
    return a is not None and b is not None and np.allclose(a, b, rtol=1e-5, atol=1e-6)


@dataclass(frozen=True)
class Scenario:
    name: str
    statement: str
    run: Callable[[Any], Observations]
    holds: Callable[[Observations], bool]


SCENARIOS = (
    Scenario(
        "k-backward-k-grad", "k backward passes accumulate k times the gradient",
        k_backward_passes, lambda o: _close(o["grad_after_3"], np.multiply(3, o["grad_after_1"])),
    ),
    Scenario(
        "freed-graph-error", "a second backward raises exactly when saved tensors are needed",
        freed_graph,
        lambda o: o["second_backward_needing_saved_tensors_raises"]
        and not o["second_backward_without_saved_tensors_raises"]
        and not o["second_backward_after_retain_graph_raises"],
    ),
    Scenario(
        "non-leaf-grad", "a non-leaf's .grad stays None unless retain_grad() was called",
        non_leaf_grad,
        lambda o: o["leaf_is_leaf"] and not o["non_leaf_is_leaf"] and o["non_leaf_grad_is_none"],
    ),
    Scenario(
        "zero-grad-modes", "zero_grad() sets None by default; set_to_none=False keeps zeros",
        zero_grad_modes,
        lambda o: o["default_sets_none"] and o["set_to_none_true_sets_none"]
        and o["set_to_none_false_keeps_tensor"] and not np.any(o["set_to_none_false_values"]),
    ),
    Scenario(
        "step-skips-none", "step() skips None grads; zero grads move with weight decay/momentum",
        step_skips_none,
        lambda o: o["none_grad_param"] == [1.0, 2.0] and o["none_grad_still_none"]
        and o["zero_grad_param_after_weight_decay"] != [1.0, 2.0]
        and o["live_param_after_zero_grad_step_2"] != o["live_param_after_step_1"],
    ),
    Scenario(
        "loss-over-k", "(loss/k) accumulation equals the full batch; unequal micro-batches do not",
        loss_over_k,
        lambda o: _close(o["equal_micro_batches_loss_over_k"], o["full_batch"])
        and not _close(o["unequal_micro_batches_loss_over_k"], o["full_batch"])
        and _close(o["unequal_micro_batches_weighted_by_size"], o["full_batch"]),
    ),
    Scenario(
        "autograd-grad", "autograd.grad returns gradients and leaves .grad untouched",
        autograd_grad,
        lambda o: o["grad_still_none"] and o["existing_grad_before"] == o["existing_grad_after"],
    ),
)


def same_observations(got: Observations, want: Observations) -> bool:
    """Observations agree: flags exactly, numbers to float32 precision."""
    if set(got) != set(want):
        return False
    for key, value in want.items():
        other = got[key]
        if isinstance(value, list) and isinstance(other, list):
            if len(value) != len(other) or not _close(other, value):
                return False
        elif value != other:
            return False
    return True
