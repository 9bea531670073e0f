"""Benchmark: one training step, reference engine vs torch CPU eager, side by side.

Two models, float32: a 784-256-10 MLP (ReLU) on a batch of 64, and a small CNN on a batch of
32 MNIST-sized images (conv 1->8, batch norm, ReLU, 2x2 max pool, conv 8->16, batch norm,
ReLU, 2x2 max pool, linear 784->10). A step is zero_grad, forward, cross-entropy, backward
and an SGD step. The MLP configurations each run in a fresh subprocess so that thread limits
(OMP/OpenBLAS/MKL env vars) apply before numpy and torch are imported; the CNN runs both
libraries in one single-threaded subprocess, alternating step by step, so that load from
other processes hits both alike.

    python bench/engine.py              # MLP (default threads and 1 thread), CNN, op table
    python bench/engine.py --steps 20   # quicker
    python bench/engine.py --profile    # cProfile of the engine step (top functions)
    python bench/engine.py --profile --model cnn
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
SIZES = (784, 256, 10)
BATCH = 64
CNN_BATCH = 32


def build_cnn(lib):
    """The small CNN: two conv blocks (conv, batch norm, ReLU, max pool) and a linear head."""
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 7 * 7, 10))


def build_step(lib, model_name: str = "mlp"):
    """Return a zero-argument function that performs one training step with `lib`."""
    import numpy as np

    rng = np.random.default_rng(0)
    shape = (BATCH, SIZES[0]) if model_name == "mlp" else (CNN_BATCH, 1, 28, 28)
    x = lib.tensor(rng.normal(size=shape).astype(np.float32))
    y = lib.tensor(rng.integers(0, SIZES[-1], size=shape[0]))
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(SIZES[0], SIZES[1]), lib.nn.ReLU(),
                              lib.nn.Linear(SIZES[1], SIZES[2])) if model_name == "mlp" \
        else build_cnn(lib)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01)
    criterion = lib.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


def time_step(step, steps: int, warmup: int) -> dict:
    for _ in range(warmup):
        step()
    samples = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        samples.append(time.perf_counter() - start)
    return {"median_ms": 1e3 * statistics.median(samples), "min_ms": 1e3 * min(samples)}


def worker(framework: str, steps: int, warmup: int) -> dict:
    if framework == "torch":
        import torch as lib
    else:
        import gradcheck.ref as lib
    return time_step(build_step(lib), steps, warmup)


def run_config(framework: str, threads: int | None, steps: int, warmup: int) -> dict:
    env = dict(os.environ)
    if threads is not None:
        env.update({var: str(threads) for var in THREAD_VARS})
    cmd = [sys.executable, __file__, "--worker", framework, "--steps", str(steps),
           "--warmup", str(warmup)]
    if threads is not None:
        cmd += ["--torch-threads", str(threads)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def interleaved(model_name: str, steps: int, warmup: int) -> dict:
    """Engine and torch steps alternating in one process; medians and minima of each."""
    import torch

    import gradcheck.ref as engine

    torch.set_num_threads(1)
    runs = {"engine": build_step(engine, model_name), "torch": build_step(torch, model_name)}
    samples = {name: [] for name in runs}
    for i in range(warmup + steps):
        for name, step in runs.items():
            start = time.perf_counter()
            step()
            if i >= warmup:
                samples[name].append(time.perf_counter() - start)
    return {name: {"median_ms": 1e3 * statistics.median(v), "min_ms": 1e3 * min(v)}
            for name, v in samples.items()}


def run_cnn(steps: int, warmup: int) -> None:
    env = dict(os.environ, **{var: "1" for var in THREAD_VARS})
    cmd = [sys.executable, __file__, "--interleaved", "cnn", "--steps", str(steps),
           "--warmup", str(warmup)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        print("CNN:", out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
        return
    result = json.loads(out.stdout.strip().splitlines()[-1])
    e, t = result["engine"], result["torch"]
    print(f"\nCNN (conv-bn-relu-pool x2, linear), batch {CNN_BATCH}x1x28x28, float32, 1 thread, "
          f"interleaved; {steps} steps after {warmup} warm-up")
    print(f"{'engine ms':>12}{'torch ms':>12}{'ratio':>10}{'engine min':>12}{'torch min':>12}"
          f"{'min ratio':>11}")
    print(f"{e['median_ms']:>12.3f}{t['median_ms']:>12.3f}{e['median_ms'] / t['median_ms']:>9.2f}x"
          f"{e['min_ms']:>12.3f}{t['min_ms']:>12.3f}{e['min_ms'] / t['min_ms']:>10.2f}x")


def profile_engine(steps: int, model_name: str = "mlp") -> None:
    import cProfile
    import pstats

    import gradcheck.ref as lib

    step = build_step(lib, model_name)
    for _ in range(3):
        step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        step()
    profiler.disable()
    stats = pstats.Stats(profiler).sort_stats("tottime")
    print(f"cProfile of {steps} engine steps, sorted by own time:")
    stats.print_stats(20)


def run_op_table() -> None:
    """Run the tiny-op benchmark after the MLP step, so one command gives both tables."""
    path = Path(__file__).with_name("engine_ops.py")
    print("\n== tiny-op table (bench/engine_ops.py, single-threaded) ==", flush=True)
    env = dict(os.environ, **{var: "1" for var in THREAD_VARS})
    subprocess.run([sys.executable, str(path)], env=env, check=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--worker", choices=["torch", "engine"])
    parser.add_argument("--torch-threads", type=int)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-ops", action="store_true", help="skip the tiny-op table")
    parser.add_argument("--model", choices=["mlp", "cnn"], default="mlp",
                        help="the model --profile profiles")
    parser.add_argument("--interleaved", choices=["mlp", "cnn"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.interleaved:
        print(json.dumps(interleaved(args.interleaved, args.steps, args.warmup)))
        return
    if args.worker:
        if args.torch_threads and args.worker == "torch":
            import torch

            torch.set_num_threads(args.torch_threads)
        print(json.dumps(worker(args.worker, args.steps, args.warmup)))
        return
    if args.profile:
        profile_engine(args.steps, args.model)
        return

    print(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, float32: forward + cross-entropy + "
          f"backward + SGD step; median of {args.steps} steps after {args.warmup} warm-up")
    print(f"{'threads':<10}{'engine ms':>12}{'torch ms':>12}{'ratio':>10}"
          f"{'engine min':>12}{'torch min':>12}{'min ratio':>11}")
    for label, threads in (("default", None), ("1", 1)):
        engine = run_config("engine", threads, args.steps, args.warmup)
        torch = run_config("torch", threads, args.steps, args.warmup)
        if "error" in engine or "error" in torch:
            print(f"{label:<10}engine: {engine.get('error', 'ok')}; torch: "
                  f"{torch.get('error', 'ok')}")
            continue
        ratio = engine["median_ms"] / torch["median_ms"]
        min_ratio = engine["min_ms"] / torch["min_ms"]
        print(f"{label:<10}{engine['median_ms']:>12.3f}{torch['median_ms']:>12.3f}"
              f"{ratio:>9.2f}x{engine['min_ms']:>12.3f}{torch['min_ms']:>12.3f}"
              f"{min_ratio:>10.2f}x")
    run_cnn(args.steps, args.warmup)
    if not args.no_ops:
        run_op_table()


if __name__ == "__main__":
    main()
