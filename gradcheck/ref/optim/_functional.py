"""``torch.optim._functional``: the optimizers' update rules as functions of lists (the
parameters, their gradients and their state tensors, updated in place), as torch's
single-tensor code path runs them.

>>> import gradcheck.ref as torch
>>> w, g = torch.ones(2), torch.full((2,), 0.5)
>>> m, v, step = torch.zeros(2), torch.zeros(2), torch.tensor(0.0)
>>> adamw([w], [g], [m], [v], [], [step], amsgrad=False, beta1=0.9, beta2=0.999, lr=0.1,
...       weight_decay=0.0, eps=1e-8, maximize=False)
>>> w, step
(tensor([0.9000, 0.9000]), tensor(1.))
"""
from __future__ import annotations

from typing import Any

from gradcheck.ref.optim.adam import adam_update


def _each(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, max_exp_avg_sqs: list,
          state_steps: list, decoupled: bool, **hyper: Any) -> None:
    if hyper.pop("grad_scale", None) is not None or hyper.pop("found_inf", None) is not None:
        raise NotImplementedError("torch.optim._functional with grad_scale/found_inf is not "
                                  "available in gradcheck.ref: only the fused kernels take them")
    for i, param in enumerate(params):
        adam_update(param, grads[i], exp_avgs[i], exp_avg_sqs[i],
                    max_exp_avg_sqs[i] if hyper["amsgrad"] else None, state_steps[i],
                    decoupled_weight_decay=decoupled, **hyper)


def adam(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, max_exp_avg_sqs: list,
         state_steps: list, foreach: bool | None = None, capturable: bool = False,
         differentiable: bool = False, fused: bool | None = None, grad_scale: Any = None,
         found_inf: Any = None, has_complex: bool = False, decoupled_weight_decay: bool = False,
         *, amsgrad: bool, beta1: float, beta2: float, lr: float, weight_decay: float,
         eps: float, maximize: bool) -> None:
    """Adam's update of every parameter in ``params``."""
    _each(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
          decoupled_weight_decay, grad_scale=grad_scale, found_inf=found_inf, amsgrad=amsgrad,
          beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps,
          maximize=maximize)


def adamw(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list, max_exp_avg_sqs: list,
          state_steps: list, foreach: bool | None = None, capturable: bool = False,
          differentiable: bool = False, fused: bool | None = None, grad_scale: Any = None,
          found_inf: Any = None, has_complex: bool = False, *, amsgrad: bool, beta1: float,
          beta2: float, lr: float, weight_decay: float, eps: float, maximize: bool) -> None:
    """AdamW's update (weight decay applied to the weights) of every parameter."""
    _each(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, True,
          grad_scale=grad_scale, found_inf=found_inf, amsgrad=amsgrad, beta1=beta1, beta2=beta2,
          lr=lr, weight_decay=weight_decay, eps=eps, maximize=maximize)
