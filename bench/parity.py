"""Benchmark: GPU/CPU parity figures per op, and one MLP training step timed on each device.

Needs a CUDA GPU that torch (built with CUDA) and CuPy both reach; anywhere else it exits with
status 2 and says what is missing. Two markdown tables, printed and written to ``--out``:

- parity: for each op, framework (torch; the reference engine ``gradcheck.ref`` on CuPy) and
  quantity (the output, then the gradient of each input under a fixed random cotangent), the
  largest absolute error and the normwise relative error (largest absolute error over the
  largest magnitude) against a float64 CPU run of the same framework, the arbiter that
  ``check_parity`` uses: CPU float32 (the baseline ``check_parity``'s factor multiplies), CUDA
  float32 with TF32 off and on (torch only: CuPy reads TF32 from ``CUPY_TF32`` at import), CUDA
  float64, and the run-to-run spread of CUDA float32 (largest difference between identical
  runs, TF32 off). The ``check_parity`` verdict (factor 4) is given for TF32 off and on.
- timing: the median of ``--repeat`` training steps (zero_grad, forward, cross-entropy,
  backward, SGD step; the GPU synchronized after each) of a ReLU MLP, float32, for the
  reference engine on numpy and on CuPy and for torch on the CPU and on CUDA (TF32 off).

    python bench/parity.py --out parity.md
    python bench/parity.py --repeat 50 --runs 5 --out parity.md
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import platform
import sys

import engine  # bench/engine.py: the one step timer of the engine's benchmarks
import numpy as np

from gradcheck.runtime import check_parity
from gradcheck.runtime.devices import RefDevice, TorchDevice

TARGETS = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3] * 4)


# ----- the ops, written once for both libraries: fn(lib, *tensors) -------------------------------
def linear(lib, x, w, b):
    return lib.nn.functional.linear(x, w, b)


def matmul_512(lib, a, b):
    return a @ b


def conv2d(lib, x, w, b):
    return lib.nn.functional.conv2d(x, w, b, padding=1)


def softmax(lib, x):
    return lib.nn.functional.softmax(x, dim=-1)


def cross_entropy(lib, x):
    target = lib.tensor(TARGETS[: x.shape[0]].tolist(), device=x.device)
    return lib.nn.functional.cross_entropy(x, target)


def layer_norm(lib, x, w, b):
    return lib.nn.functional.layer_norm(x, (x.shape[-1],), w, b)


def mlp_step(lib, x, w1, b1, w2, b2):
    """The loss of a 2-layer MLP: its backward is one training step's gradients."""
    functional = lib.nn.functional
    return cross_entropy(lib, functional.linear(functional.gelu(functional.linear(x, w1, b1)),
                                                w2, b2))


def _cases():
    rng = np.random.default_rng(0)
    n = rng.standard_normal
    return {
        "linear 64x128 -> 32": (linear, [n((64, 128)), n((32, 128)) / 8, n(32)]),
        "matmul 512x512x512": (matmul_512, [n((512, 512)), n((512, 512)) / 16]),
        "conv2d 4x8x16x16, 16 3x3": (conv2d, [n((4, 8, 16, 16)), n((16, 8, 3, 3)) / 6, n(16)]),
        "softmax 16x10": (softmax, [3 * n((16, 10))]),
        "cross_entropy 16x10": (cross_entropy, [3 * n((16, 10))]),
        "layer_norm 32x64": (layer_norm, [2 * n((32, 64)) + 1, 1 + n(64) / 10, n(64) / 10]),
        "mlp_step 16x64-128-10": (mlp_step, [n((16, 64)), n((128, 64)) / 8, n(128) / 10,
                                             n((10, 128)) / 11, n(10) / 10]),
    }


# ----- parity --------------------------------------------------------------------------------------
@contextlib.contextmanager
def tf32(torch, on: bool):
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = on
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _quantities(result):
    output, grads = result
    return [("output", output)] + [(f"grad[{i}]", g.ravel()) for i, g in enumerate(grads)]


def _errors(result, exact):
    """Per quantity: (largest absolute error, normwise relative error)."""
    out = []
    for (_, got), (_, want) in zip(_quantities(result), _quantities(exact)):
        err = float(np.max(np.abs(got - want), initial=0.0))
        scale = float(np.max(np.abs(want), initial=0.0))
        out.append((err, err / scale if scale else err))
    return out


def _spread(results):
    """Per quantity: the largest difference between a later run and the first."""
    first = [value for _, value in _quantities(results[0])]
    spread = [0.0] * len(first)
    for result in results[1:]:
        for k, (_, value) in enumerate(_quantities(result)):
            spread[k] = max(spread[k], float(np.max(np.abs(value - first[k]), initial=0.0)))
    return spread


def parity_rows(name, fn, arrays, framework, runs):
    import torch

    import gradcheck.ref as ref

    lib = torch if framework == "torch" else ref
    bound = functools.partial(fn, lib)
    backend = TorchDevice if framework == "torch" else RefDevice
    cpu, gpu = backend("cpu"), backend("cuda")
    exact = cpu.run(bound, arrays, "float64", 0)
    cpu32 = _errors(cpu.run(bound, arrays, "float32", 0), exact)
    with tf32(torch, False):
        off_runs = [gpu.run(bound, arrays, "float32", 0) for _ in range(runs)]
        off = _errors(off_runs[0], exact)
        f64 = _errors(gpu.run(bound, arrays, "float64", 0), exact)
        verdict_off = check_parity(bound, arrays, framework=framework, devices=("cuda",),
                                   runs=runs).passed
    spread = _spread(off_runs)
    if framework == "torch":
        with tf32(torch, True):
            on = _errors(gpu.run(bound, arrays, "float32", 0), exact)
            verdict_on = check_parity(bound, arrays, devices=("cuda",), runs=runs).passed
    else:
        on, verdict_on = None, None
    label = "torch" if framework == "torch" else "ref on CuPy"
    rows = []
    for k, (quantity, _) in enumerate(_quantities(exact)):
        rows.append([
            name if k == 0 else "", label if k == 0 else "", quantity,
            _pair(cpu32[k]), _pair(off[k]), "n/a" if on is None else _pair(on[k]),
            _pair(f64[k]), f"{spread[k]:.1e}",
            _verdict(verdict_off) + " / " + ("n/a" if verdict_on is None else
                                             _verdict(verdict_on)) if k == 0 else "",
        ])
    return rows


def _pair(errors):
    absolute, relative = errors
    return f"{absolute:.1e} / {relative:.1e}"


def _verdict(passed):
    return "pass" if passed else "FAIL"


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ----- timing ---------------------------------------------------------------------------------------
def _mlp(lib, sizes, device):
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(lib.nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(lib.nn.ReLU())
    return lib.nn.Sequential(*layers).to(device)


def time_step(lib, device, sizes, batch, repeat, sync):
    lib.manual_seed(0)
    model = _mlp(lib, sizes, device)
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((batch, sizes[0])), dtype=lib.float32, device=device)
    y = lib.tensor(rng.integers(0, sizes[-1], batch), device=device)

    def step():
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        sync()

    return engine.time_step(step, repeat, warmup=3)["median_ms"] / 1e3


def timing_rows(repeat):
    import cupy
    import torch

    import gradcheck.ref as ref

    def nothing():
        return None

    def cupy_sync():
        cupy.cuda.Device().synchronize()

    rows = []
    for label, sizes, batch in (("784-256-10, batch 64", (784, 256, 10), 64),
                                ("1024-4096-4096-10, batch 1024", (1024, 4096, 4096, 10), 1024)):
        with tf32(torch, False):
            medians = {
                "ref on numpy": time_step(ref, "cpu", sizes, batch, repeat, nothing),
                "ref on CuPy": time_step(ref, "cuda", sizes, batch, repeat, cupy_sync),
                "torch CPU": time_step(torch, "cpu", sizes, batch, repeat, nothing),
                "torch CUDA": time_step(torch, "cuda", sizes, batch, repeat,
                                        torch.cuda.synchronize),
            }
        base = medians["torch CUDA"]
        for k, (name, seconds) in enumerate(medians.items()):
            rows.append([label if k == 0 else "", name, f"{seconds * 1e3:.3f}",
                         f"{seconds / base:.1f}x"])
    return rows


# ----- main -----------------------------------------------------------------------------------------
def unavailable() -> list[str]:
    reasons = []
    for backend, what in ((TorchDevice("cuda"), "torch on cuda"),
                          (RefDevice("cuda"), "gradcheck.ref on cuda (CuPy)")):
        reason = backend.unavailable_reason()
        if reason is not None:
            reasons.append(f"{what}: {reason}")
    return reasons


def machine() -> str:
    import cupy
    import torch

    props = torch.cuda.get_device_properties(0)
    return (f"GPU {props.name} ({props.total_memory / 2**30:.0f} GiB, "
            f"{props.multi_processor_count} SMs); torch {torch.__version__} (CUDA "
            f"{torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}); CuPy "
            f"{cupy.__version__}; numpy {np.__version__}; Python {platform.python_version()}; "
            f"torch CPU threads {torch.get_num_threads()}; "
            f"defaults: matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32}, "
            f"cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the tables (markdown) to this file")
    parser.add_argument("--repeat", type=int, default=30, help="timed steps per variant")
    parser.add_argument("--runs", type=int, default=3, help="identical CUDA runs per op")
    args = parser.parse_args(argv)
    reasons = unavailable()
    if reasons:
        print("bench/parity.py needs a CUDA GPU reached by torch and by CuPy; not run:\n  "
              + "\n  ".join(reasons), file=sys.stderr)
        return 2
    parts = [f"Machine: {machine()}", ""]
    header = ["op", "framework", "quantity", "CPU f32 abs / rel", "CUDA f32 abs / rel",
              "CUDA f32 TF32 abs / rel", "CUDA f64 abs / rel", "f32 spread",
              "check_parity off / TF32"]
    rows = []
    for name, (fn, arrays) in _cases().items():
        for framework in ("torch", "ref"):
            rows += parity_rows(name, fn, arrays, framework, args.runs)
    parts += ["Parity against the float64 CPU run of the same framework:", "",
              _table(header, rows), ""]
    parts += [f"One training step, float32, median of {args.repeat} (ms), and over torch CUDA:",
              "", _table(["MLP", "variant", "median ms", "/ torch CUDA"],
                         timing_rows(args.repeat)), ""]
    text = "\n".join(parts)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
