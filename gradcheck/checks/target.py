"""The function under test as the checker sees it: float64 numpy in, float64 numpy out.

It chooses the evaluation dtype (float64 whenever the function accepts it), evaluates many
perturbed points per call where the function can be batched, and counts every evaluation.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from gradcheck.checks.adapters.base import Adapter
from gradcheck.checks.errors import GradcheckError, function_name, user_error
from gradcheck.checks.numeric import dtype_eps, input_scale
from gradcheck.checks.realify import join, real_dtype, split

# Upper bound on the elements of one batched input; keeps memory in the tens of megabytes.
BATCH_ELEMENTS = 2**21
# NOTE: a vmap call costs about as much as 20 small calls, and choosing a batching mode costs
# a few more; a handful of points is cheaper one by one.
LOOP_POINTS = 8


class Target:
    """Counted, dtype-aware, batched access to ``fn`` through an adapter."""

    def __init__(self, adapter: Adapter, names: Sequence[str] | None = None, batch: bool = True):
        self.adapter = adapter
        self.diff = adapter.diff
        self.counts = {"forward": 0, "forward_points": 0, "backward": 0, "backward_points": 0}
        self.batch = batch
        self._phase: tuple[str, int | None, str] = ("forward", None, "at the given inputs")
        self._batch_mode: dict[tuple[int, str | None], str] = {}
        inputs = adapter.inputs
        native = [np.asarray(adapter.to_numpy(x)) if adapter.is_float(x) else None
                  for x in inputs]
        # complex inputs are seen as real pairs on a last axis of 2 (realify.py)
        self.complex_inputs = {i for i, a in enumerate(native)
                               if a is not None and np.iscomplexobj(a)}
        self.x = [None if a is None else split(a).astype(np.float64) for a in native]
        self.input_names = _input_names(len(inputs), names)
        self.nan_elements = {i: np.argwhere(np.isnan(self.x[i])) for i in self.diff
                             if np.isnan(self.x[i]).any()}
        self.grad_dtypes = [adapter.dtype_name(inputs[i]) for i in self.diff]
        self.grad_np_dtypes = [real_dtype(native[i].dtype) for i in self.diff]
        self._linearized = None
        self.f0 = self._choose_eval_dtype()
        self.changed_inputs = self._changed_inputs()
        self.output_names = ["output"] if len(self.f0) == 1 else [
            f"output {k}" for k in range(len(self.f0))
        ]

    def _choose_eval_dtype(self) -> list[np.ndarray]:
        try:
            raw = self._first_call()
            self.eval_dtype = "float64"
        except GradcheckError:
            # NOTE: the function rejects float64 (e.g. float32 parameters in a closure): the
            # numerical side then runs in the tested dtype, with that dtype's larger step.
            with self.during("forward", detail="at the given inputs, in their own dtypes"):
                raw = self._call(self._native(self.x, None))
            self.eval_dtype = None
        self._check_outputs(raw)
        items = self.adapter.output_items(raw)
        out_dtypes = [_real_name(self.adapter.dtype_name(o)) for o in items]
        in_dtypes = [] if self.eval_dtype else [_real_name(d) for d in self.grad_dtypes]
        coarsest = max(out_dtypes + in_dtypes + ["float64"], key=dtype_eps)
        self.eval_eps = dtype_eps(coarsest)
        self.eval_name = coarsest if coarsest in ("float16", "float32") else "float64"
        self._select_outputs(self.adapter.outputs_to_numpy(raw))
        f0 = self._outputs(raw)
        self.amplification = self._forward_amplification(f0)
        return f0

    def _changed_inputs(self) -> list[tuple[int, tuple[int, ...]]]:
        """Inputs that the calls at the given inputs changed in place, with the first
        changed index. NOTE: every later evaluation gets copies, so such a change does not
        spoil the check, but it is a bug of its own (the caller's tensor changes)."""
        changed = []
        for i, x in enumerate(self.x):
            if x is None:
                continue
            now = split(np.asarray(self.adapter.to_numpy(self.adapter.inputs[i]))).astype(
                np.float64)
            differs = ~((now == x) | (np.isnan(now) & np.isnan(x)))
            if differs.any():
                changed.append((i, tuple(int(v) for v in np.argwhere(differs)[0])))
        return changed

    def _first_call(self):
        """fn at x in float64. NOTE: where the inputs are float64 already, the forward that
        records the graph is that call, and is made once instead of twice."""
        if self.adapter.inputs_are_float64():
            try:
                self.counts["forward"] += 1
                self.counts["forward_points"] += 1
                return self.adapter.recorded_forward()
            except NotImplementedError:
                self.counts["forward"] -= 1
                self.counts["forward_points"] -= 1
            except Exception as exc:  # noqa: BLE001 - the user's function may raise anything
                raise self.error(exc) from exc
        return self._call(self._native(self.x, "float64"))

    def _select_outputs(self, outputs: list[np.ndarray]) -> None:
        """The outputs to check: as torch's gradcheck, those autograd differentiates (all,
        when none is), and only those with elements; complex ones become real pairs."""
        self._ensure_linearized()
        differentiable = self.adapter.differentiable_outputs() or [True] * len(outputs)
        sized = [k for k, f in enumerate(outputs) if f.size]
        kept = [k for k in sized if differentiable[k]]
        self.kept_outputs = kept if kept or any(differentiable) else sized
        self.out_shapes = [f.shape for f in outputs]
        self.complex_outputs = {k for k, f in enumerate(outputs) if np.iscomplexobj(f)}

    def _outputs(self, raw) -> list[np.ndarray]:
        found = self.adapter.outputs_to_numpy(raw)
        return [split(found[k]).astype(np.float64, copy=False) if k in self.complex_outputs
                else found[k] for k in self.kept_outputs]

    def _native(self, arrays: Sequence[np.ndarray | None], dtype: str | None,
                scratch: int | None = None) -> list:
        joined = [join(a) if i in self.complex_inputs and a is not None else a
                  for i, a in enumerate(arrays)]
        return self.adapter.native_args(joined, dtype, scratch)

    def _forward_amplification(self, f0: list[np.ndarray]) -> list[np.ndarray]:
        """Per output element, how many of its own eps the low-precision forward is off.

        NOTE: a float32 backward inherits the float32 forward's rounding (tanh near
        saturation, long sums), which can be hundreds of eps; its tolerance scales with this.
        """
        ones = [np.ones(f.shape) for f in f0]
        low = [d for d in self.grad_dtypes if dtype_eps(d) > dtype_eps("float64")]
        if self.eval_dtype is None or not low:
            return ones
        try:
            native = self.evaluate(self.x, dtype=None)
        except Exception:  # noqa: BLE001 - the user's function may raise anything
            return ones
        eps = max(dtype_eps(d) for d in low)
        out = []
        for f, g in zip(f0, native):
            floor = 1e-3 * float(np.max(np.abs(f), initial=0.0)) + 1e-300
            ratio = np.abs(g - f) / (eps * np.maximum(np.abs(f), floor))
            out.append(np.clip(np.nan_to_num(ratio, nan=1.0), 1.0, 1e3))
        return out

    def _call(self, args: list):
        self.counts["forward"] += 1
        self.counts["forward_points"] += 1
        try:
            return self.adapter.call(args)
        except Exception as exc:  # noqa: BLE001 - the user's function may raise anything
            raise self.error(exc) from exc

    # -- where the check is, for errors from the user's code ------------------------------
    @contextmanager
    def during(self, phase: str, i: int | None = None, detail: str = "") -> Iterator[None]:
        """Calls inside are described as ``phase`` (of input ``i``, ``detail``) if they raise."""
        saved = self._phase
        self._phase = (phase, i, detail)
        try:
            yield
        finally:
            self._phase = saved

    def error(self, exc: BaseException) -> GradcheckError:
        """The GradcheckError for ``exc``, raised by the user's code in the current phase."""
        phase, i, detail = self._phase
        inputs = [i] if i is not None else list(self.diff)
        shown = "; ".join(self.describe_input(k) for k in inputs)
        where = f"{detail}; {shown}" if detail else shown
        first = inputs[0] if len(inputs) == 1 else None
        return user_error(
            exc, self.adapter.fn, phase, where,
            input=None if first is None else self.input_names[first],
            shape=None if first is None else tuple(self.adapter.inputs[first].shape),
            dtype=None if first is None else self.adapter.dtype_name(self.adapter.inputs[first]))

    def describe_input(self, i: int) -> str:
        x = self.adapter.inputs[i]
        return (f"{self.input_names[i]} of shape {tuple(np.shape(x))} and dtype "
                f"{self.adapter.dtype_name(x)}")

    def _check_outputs(self, raw) -> None:
        problem = self.adapter.output_problem(raw)
        if problem:
            name = function_name(self.adapter.fn)
            raise GradcheckError(
                f"{name} returned {problem}; it must return the output tensor (or a tuple of "
                "them) that the gradient flows from: drop .item(), float() or .tolist(), and "
                "return the result instead of storing it", function=name, phase="forward")

    # -- forward evaluations ---------------------------------------------------------------
    def evaluate(self, arrays: Sequence[np.ndarray | None], dtype: str | None = "eval"):
        """Outputs (float64) at one point given as float64 arrays for the inputs; dtype None
        means each input's own dtype."""
        dtype = self.eval_dtype if dtype == "eval" else dtype
        return self._outputs(self._call(self._native(arrays, dtype)))

    def evaluate_many(self, points: list[list], labels: list[str]) -> list[list[np.ndarray]]:
        """``evaluate`` at several points; ``labels[r]`` describes point r for errors."""
        phase = self._phase
        found = []
        try:
            for arrays, label in zip(points, labels):
                self._phase = (phase[0], None, label)
                found.append(self.evaluate(arrays))
        finally:
            self._phase = phase
        return found

    def evaluate_points(self, i: int, points: np.ndarray, dtype: str | None = "eval",
                        label: Callable[[int], str] | None = None):
        """Outputs for each row of ``points`` (values of input i); shapes (B, *out_shape).

        ``label(r)`` describes row r (which element moved, by how much) for error messages."""
        dtype = self.eval_dtype if dtype == "eval" else dtype
        if label is None:
            label = lambda r: f"of perturbed point {r} of {self.input_names[i]}"  # noqa: E731
        size = max(1, int(np.prod(points.shape[1:])))
        chunk = max(1, BATCH_ELEMENTS // size)
        parts = [self._evaluate_chunk(i, points[s:s + chunk], dtype, s, label)
                 for s in range(0, len(points), chunk)]
        return [np.concatenate([p[k] for p in parts]) for k in range(len(self.f0))]

    def _evaluate_chunk(self, i: int, points: np.ndarray, dtype: str | None, start: int = 0,
                        label: Callable[[int], str] | None = None):
        key = (i, dtype)
        if key not in self._batch_mode and len(points) <= LOOP_POINTS:
            return self._looped(i, points, dtype, start, label)
        if key not in self._batch_mode:
            self._batch_mode[key] = self._pick_batch_mode(i, points, dtype)
        mode = self._batch_mode[key]
        if mode == "loop":
            return self._looped(i, points, dtype, start, label)
        try:
            return self._batched(i, points, dtype, mode)
        except GradcheckError:
            # NOTE: a batch that raises is evaluated again point by point, so that the error
            # names the one perturbation that fails (or the batching is what failed).
            self._batch_mode[key] = "loop"
            return self._looped(i, points, dtype, start, label)

    def _looped(self, i: int, points: np.ndarray, dtype: str | None, start: int = 0,
                label: Callable[[int], str] | None = None):
        rows = []
        for r, p in enumerate(points):
            if label is None:
                rows.append(self._at(i, p, dtype))
                continue
            with self.during(self._phase[0], i, label(start + r)):
                rows.append(self._at(i, p, dtype))
        return [np.stack([r[k] for r in rows]) for k in range(len(self.f0))]

    def _at(self, i: int, value: np.ndarray, dtype: str | None):
        arrays = list(self.x)
        arrays[i] = value
        return self.evaluate(arrays, dtype)

    def _batched(self, i: int, points: np.ndarray, dtype: str | None, mode: str):
        arrays = list(self.x)
        arrays[i] = points
        args = self._native(arrays, dtype, scratch=i)
        self.counts["forward"] += 1
        self.counts["forward_points"] += len(points)
        if mode == "vmap":
            out = self.adapter.vmap_call(args, i)
        else:
            out = self.adapter.call(args)
        return self._outputs(out)

    def _pick_batch_mode(self, i: int, points: np.ndarray, dtype: str | None) -> str:
        """Try vmap, then plain broadcasting over a leading axis; keep what reproduces the
        unbatched outputs on a few spread-out points, else fall back to a loop."""
        if not self.batch or len(points) < 2:
            return "loop"
        rng = np.random.default_rng(1234)
        scale = input_scale(self.x[i])
        trial = self.x[i] + 1e-3 * scale * rng.standard_normal((3,) + self.x[i].shape)
        if np.iscomplexobj(points):
            trial = trial + 1e-3j
        expected = [self._at(i, row, dtype) for row in trial]
        for mode in ("vmap", "broadcast"):
            try:
                got = self._batched(i, trial, dtype, mode)
            except Exception:  # noqa: BLE001, S112 - any failure means: not this mode
                continue
            if _same_rows(got, expected, self.eval_eps):
                return mode
        return "loop"

    # -- analytic side ---------------------------------------------------------------------
    def vjp(self, grad_outputs: list[np.ndarray]) -> list[np.ndarray | None]:
        """Grads of the differentiable inputs (native dtype) for the given grad_outputs."""
        self._ensure_linearized()
        self.counts["backward"] += 1
        self.counts["backward_points"] += 1
        try:
            return self._split_grads(self._linearized[1](self._all_grad_outputs(grad_outputs)))
        except Exception as exc:  # noqa: BLE001 - the user's backward may raise anything
            with self.during("backward", None, "for a grad_output on " + ", ".join(
                    self.output_names[k] for k, g in enumerate(grad_outputs) if np.any(g))):
                raise self.error(exc) from exc

    def _all_grad_outputs(self, grad_outputs: list[np.ndarray], lead: tuple = ()) -> list:
        """grad_outputs of the checked outputs (real pairs for complex ones) as the framework
        takes them: one per output, complex where the output is, zero where not checked."""
        full = [np.zeros(lead + shape) for shape in self.out_shapes]
        for k, g in zip(self.kept_outputs, grad_outputs):
            full[k] = join(g) if k in self.complex_outputs else g
        return full

    def _split_grads(self, grads: list) -> list:
        return [None if g is None else split(g) if self.diff[pos] in self.complex_inputs else g
                for pos, g in enumerate(grads)]

    def _many_vjp(self, grad_outputs: list[np.ndarray]) -> list:
        """The framework's batched VJP over a leading axis, on the checker's arrays."""
        lead = (len(grad_outputs[0]),) if grad_outputs else ()
        many = self.adapter.batched_vjp()
        try:
            return self._split_grads(many(self._all_grad_outputs(grad_outputs, lead)))
        except Exception as exc:  # noqa: BLE001 - the user's backward may raise anything
            with self.during("backward", None, "batched over one-hot grad_outputs"):
                raise self.error(exc) from exc

    def _ensure_linearized(self) -> None:
        if self._linearized is None:
            if getattr(self.adapter, "_recorded", None) is None:
                self.counts["forward"] += 1
            try:
                self._linearized = self.adapter.linearize()
            except Exception as exc:  # noqa: BLE001 - the user's function may raise anything
                with self.during("forward", None, "with autograd recording, at the given inputs"):
                    raise self.error(exc) from exc

    def vjp_rows(self, k: int, rows: np.ndarray) -> list[np.ndarray | None]:
        """Grads for each row of ``rows`` used as output k's grad_output (others zero),
        in one batched backward where the framework allows and it reproduces single VJPs."""
        def single(row):
            gos = [np.zeros_like(f) for f in self.f0]
            gos[k] = row
            return self.vjp(gos)

        if self.batch and self._use_batched_vjp(k, rows, single):
            gos = [np.zeros((len(rows),) + f.shape) for f in self.f0]
            gos[k] = rows
            self.counts["backward"] += 1
            self.counts["backward_points"] += len(rows)
            return self._many_vjp(gos)
        found = [single(row) for row in rows]
        return [None if found[0][p] is None else np.stack([f[p] for f in found])
                for p in range(len(self.diff))]

    def _use_batched_vjp(self, k: int, rows: np.ndarray, single) -> bool:
        if getattr(self, "_batched_vjp_ok", None) is None:
            self._ensure_linearized()
            many = self.adapter.batched_vjp()
            ok = many is not None and len(rows) >= 2
            if ok:
                trial = rows[[0, -1]]
                try:
                    gos = [np.zeros((2,) + f.shape) for f in self.f0]
                    gos[k] = trial
                    got = self._many_vjp(gos)
                    want = [single(r) for r in trial]
                    ok = all(
                        (g is None) == (want[0][p] is None) and (g is None or np.allclose(
                            g.astype(np.float64), np.stack([w[p] for w in want]).astype(
                                np.float64), rtol=1e-6, atol=0, equal_nan=True))
                        for p, g in enumerate(got))
                except Exception:  # noqa: BLE001 - the user's function may raise anything
                    ok = False
            self._batched_vjp_ok = ok
        return self._batched_vjp_ok


def _same_rows(got: list, expected: list, eps: float) -> bool:
    for k in range(len(expected[0])):
        rows = np.stack([e[k] for e in expected])
        if k >= len(got) or got[k].shape != rows.shape:
            return False
        scale = np.nanmax(np.abs(rows), initial=0.0) + 1.0
        if not np.allclose(got[k], rows, rtol=1e4 * eps, atol=1e4 * eps * scale):
            return False
    return len(got) == len(expected[0])


def _real_name(dtype: str) -> str:
    """The real dtype of a complex dtype's parts (float64 for an unknown name)."""
    return {"complex128": "float64", "complex64": "float32", "complex32": "float16"}.get(
        dtype, dtype)


def _input_names(n: int, names: Sequence[str] | None) -> list[str]:
    if names is not None:
        if len(names) != n:
            raise ValueError(f"names= has {len(names)} entries for {n} inputs; give one per input")
        return list(names)
    return ["input"] if n == 1 else [f"input {i}" for i in range(n)]
