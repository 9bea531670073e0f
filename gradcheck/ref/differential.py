"""Differential testing: run one model on torch and on the engine from the same weights and
say where they first disagree, module by module (forward) and parameter by parameter
(gradients), over one or more training steps.

The model is written once as ``build(lib)``, a function of the library module (``torch`` or
``gradcheck.ref``), which is how a torch-compatible ``nn.Module`` is constructed on both sides.
torch's initial weights and buffers are copied into the engine's model, both run in float64 by
default, and every step compares, in order: each submodule's output (forward hooks), the loss,
and each parameter's gradient. The first row that differs is the place to look.

>>> import numpy as np
>>> report = compare_with_torch(
...     lambda lib: lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1)),
...     [np.ones((2, 3))])                                                  # doctest: +SKIP
>>> report.ok, report.first_difference                                     # doctest: +SKIP
(True, None)
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


@dataclasses.dataclass
class Row:
    """One compared quantity: a module output, the loss, or a parameter's gradient."""

    step: int
    kind: str  # "output", "loss", "grad" or "param"
    name: str
    shape: tuple
    max_abs: float
    max_rel: float
    worst_index: tuple
    engine_value: float
    torch_value: float
    ok: bool

    def describe(self) -> str:
        verdict = "ok" if self.ok else "DIFFERS"
        return (f"step {self.step} {self.kind:6} {self.name:32} {str(self.shape):16} "
                f"max|d|={self.max_abs:.3e} rel={self.max_rel:.3e} at {self.worst_index}: "
                f"engine {self.engine_value:.10g} torch {self.torch_value:.10g}  {verdict}")


@dataclasses.dataclass
class Comparison:
    """Every row compared, in the order they were computed."""

    rows: list
    rtol: float
    atol: float

    @property
    def ok(self) -> bool:
        return all(row.ok for row in self.rows)

    @property
    def first_difference(self) -> Row | None:
        return next((row for row in self.rows if not row.ok), None)

    def differing(self, kind: str = "grad") -> list:
        """The rows of ``kind`` that differ, e.g. every parameter whose gradient is off."""
        return [row for row in self.rows if row.kind == kind and not row.ok]

    def __str__(self) -> str:
        head = f"engine vs torch (rtol={self.rtol:g}, atol={self.atol:g}): " + (
            "all rows agree" if self.ok else f"first difference: {self.first_difference.kind} "
            f"{self.first_difference.name} at step {self.first_difference.step}")
        return "\n".join([head] + [row.describe() for row in self.rows])

    def assert_ok(self) -> None:
        """Raise AssertionError with the whole table when any row differs."""
        if not self.ok:
            raise AssertionError(str(self))


def _numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach()
    if hasattr(value, "numpy"):
        value = value.numpy()
    return np.asarray(value, dtype=np.float64)


def _row(step, kind, name, engine_value, torch_value, rtol, atol) -> Row:
    a, b = _numpy(engine_value), _numpy(torch_value)
    if a.shape != b.shape:
        return Row(step, kind, name, (a.shape, b.shape), float("inf"), float("inf"), (),
                   float("nan"), float("nan"), False)
    diff = np.abs(a - b)
    both_nan = np.isnan(a) & np.isnan(b)
    same_inf = np.isinf(a) & (a == b)
    diff = np.where(both_nan | same_inf, 0.0, np.nan_to_num(diff, nan=np.inf))
    excess = diff - (atol + rtol * np.abs(b))
    worst = np.unravel_index(int(np.argmax(excess)), a.shape) if a.size else ()
    scale = np.maximum(np.abs(b), 1e-300)
    return Row(step, kind, name, tuple(a.shape), float(diff.max()) if a.size else 0.0,
               float((diff / scale).max()) if a.size else 0.0, tuple(int(i) for i in worst),
               float(a[worst]) if a.size else 0.0, float(b[worst]) if a.size else 0.0,
               bool((excess <= 0).all()))


def _first_tensor(value: Any) -> Any:
    while isinstance(value, (tuple, list)) and value:
        value = value[0]
    return value


def _record_outputs(model: Any) -> tuple[list, list]:
    """Forward hooks appending (module name, output) pairs; returns (records, handles)."""
    records, handles = [], []
    for name, module in model.named_modules():
        if not name:
            continue

        def hook(mod, args, output, name=name):
            records.append((name, _first_tensor(output)))

        handles.append(module.register_forward_hook(hook))
    return records, handles


def _sync(engine_model: Any, torch_model: Any, engine: Any) -> None:
    """Copy torch's parameters and buffers into the engine model, by name."""
    state = torch_model.state_dict()
    mine = engine_model.state_dict(keep_vars=True)
    missing = sorted(set(state) ^ set(mine))
    if missing:
        raise ValueError(f"the two models name their state differently: {missing[:5]}; build "
                         "both with the same constructor, e.g. build(lib) -> lib.nn.Module")
    with engine.no_grad():
        for key, value in state.items():
            mine[key].copy_(engine.tensor(value.detach().cpu().numpy(), dtype=mine[key].dtype))


def _default_loss(lib: Any, output: Any) -> Any:
    out = _first_tensor(output)
    return (out * out).sum() if out.dtype.is_floating_point else out.sum()


def compare_with_torch(build: Callable[[Any], Any], inputs: Sequence[Any],
                       loss: Callable[[Any, Any], Any] | None = None, *, steps: int = 1,
                       optimizer: Callable[[Any, Any], Any] | None = None,
                       double: bool = True, rtol: float = 1e-7, atol: float = 1e-9,
                       train: bool = True) -> Comparison:
    """Run ``build(lib)(*inputs)`` on torch and on the engine from torch's initial weights.

    ``inputs`` are numpy arrays (or anything ``lib.tensor`` accepts); float ones follow the
    model's dtype. ``loss(lib, output)`` makes the scalar to differentiate (default: the sum of
    squares of the first output). With ``optimizer(lib, params)`` each of ``steps`` steps also
    updates the weights and the parameters are compared after the update.
    """
    import torch

    import gradcheck.ref as engine

    loss = loss or _default_loss
    torch.manual_seed(0)
    models = {"torch": build(torch), "engine": build(engine)}
    libs = {"torch": torch, "engine": engine}
    for name, model in models.items():
        if double:
            model.double()
        model.train(train)
    _sync(models["engine"], models["torch"], engine)
    optimizers = {k: optimizer(libs[k], models[k].parameters()) for k in models} \
        if optimizer else None
    rows = []
    for step in range(steps):
        seen = {}
        for key, model in models.items():
            lib = libs[key]
            tensors = [_as_tensor(lib, x, double) for x in inputs]
            records, handles = _record_outputs(model)
            model.zero_grad()
            value = loss(lib, model(*tensors))
            value.backward()
            for handle in handles:
                handle.remove()
            if optimizers:
                optimizers[key].step()
            seen[key] = (records, value, dict(model.named_parameters()))
        (e_rec, e_loss, e_par), (t_rec, t_loss, t_par) = seen["engine"], seen["torch"]
        for (name, e_out), (_, t_out) in zip(e_rec, t_rec):
            if hasattr(t_out, "detach"):
                rows.append(_row(step, "output", name, e_out, t_out, rtol, atol))
        rows.append(_row(step, "loss", "loss", e_loss, t_loss, rtol, atol))
        for name, t_param in t_par.items():
            e_grad, t_grad = e_par[name].grad, t_param.grad
            if t_grad is None or e_grad is None:
                rows.append(Row(step, "grad", name, tuple(t_param.shape), 0.0, 0.0, (),
                                0.0, 0.0, (t_grad is None) == (e_grad is None)))
            else:
                rows.append(_row(step, "grad", name, e_grad, t_grad, rtol, atol))
        if optimizers:
            rows += [_row(step, "param", name, e_par[name], t_param, rtol, atol)
                     for name, t_param in t_par.items()]
    return Comparison(rows, rtol, atol)


def _as_tensor(lib: Any, value: Any, double: bool) -> Any:
    array = np.asarray(value)
    if array.dtype.kind == "f":
        return lib.tensor(array, dtype=lib.float64 if double else lib.float32)
    return lib.tensor(array)
