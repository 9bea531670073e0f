"""L-BFGS with a fixed step (torch's default `line_search_fn=None`)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.optim.optimizer import Optimizer, check_non_negative


class LBFGS(Optimizer):
    """torch.optim.LBFGS without line search; `step(closure)` re-evaluates the model.

    Example:
        >>> import gradcheck.ref as torch
        >>> w = torch.nn.Parameter(torch.tensor([3.0]))
        >>> opt = torch.optim.LBFGS([w])
        >>> def closure():
        ...     opt.zero_grad(); loss = ((w - 1.0) ** 2).sum(); loss.backward(); return loss
        >>> _ = opt.step(closure); abs(w.item() - 1.0) < 1e-4
        True
    """

    def __init__(self, params: Iterable[Any], lr: float = 1.0, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        check_non_negative(lr=lr)
        if line_search_fn is not None:
            raise NotImplementedError(
                f"LBFGS line_search_fn={line_search_fn!r} is not supported by the reference "
                "engine; use line_search_fn=None")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self) -> Any:
        views = [torch.zeros(p.numel(), dtype=p.dtype) if p.grad is None else p.grad.reshape(-1)
                 for p in self._params]
        return torch.cat(views, 0)

    def _add_grad(self, step_size: float, update: Any) -> None:
        offset = 0
        for p in self._params:
            numel = p.numel()
            p.add_(update[offset:offset + numel].reshape(p.shape), alpha=step_size)
            offset += numel

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to `max_iter` L-BFGS iterations; returns the closure's first loss."""
        with torch.no_grad():
            return self._run(closure)

    def _run(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        # LBFGS's state is global; like torch we file it under the first parameter.
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._evaluate(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max().item() <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro, h_diag = [], [], [], 1.0
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s).item()
                if ys > 1e-10:
                    if len(old_dirs) == group["history_size"]:
                        old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y).item()
                d = self._two_loop(flat_grad, old_dirs, old_stps, ro, h_diag)
            prev_flat_grad = flat_grad.clone()
            prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / flat_grad.abs().sum().item()) * lr
            else:
                t = lr
            if flat_grad.dot(d).item() > -tolerance_change:
                break  # the directional derivative is too small to make progress
            ls_func_evals = 0
            self._add_grad(t, d)
            if n_iter != max_iter:
                # NOTE: torch skips the re-evaluation on the last iteration; so do we.
                loss = float(self._evaluate(closure))
                flat_grad = self._gather_flat_grad()
                ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if n_iter == max_iter or current_evals >= max_eval:
                break
            if flat_grad.abs().max().item() <= tolerance_grad:
                break
            if d.mul(t).abs().max().item() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    @staticmethod
    def _two_loop(flat_grad: Any, old_dirs: list, old_stps: list, ro: list,
                  h_diag: float) -> Any:
        """The L-BFGS two-loop recursion: approximate inverse Hessian times -gradient."""
        al = [0.0] * len(old_dirs)
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q).item() * ro[i]
            q.add_(old_dirs[i], alpha=-al[i])
        r = q.mul(h_diag)
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r).item() * ro[i]
            r.add_(old_stps[i], alpha=al[i] - be_i)
        return r
