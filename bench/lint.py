"""Time ``gradcheck lint`` against ruff, TorchFix, Fixit and bare parsers on a real corpus.

The corpus is the ``.py`` files of installed packages (torch, plus lightning and
transformers when installed), copied to ``bench/_corpus/`` (git-ignored) and made its own
git repository so no tool applies this project's ignore files or configuration.

Run from the repository root:

    python bench/lint.py                # about 3-5 minutes on 2 cores
    python bench/lint.py --sample-lines 20000 --repeat 3

Slow tools (TorchFix, Fixit, the libcst loop) run on a deterministic sample of files and
are extrapolated to the whole corpus by lines per second; the table says so.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
CORPUS = ROOT / "_corpus"
PACKAGES = ("torch", "lightning", "pytorch_lightning", "transformers")


def build_corpus() -> dict[str, Path]:
    """Copy each installed package's .py files into the corpus (once)."""
    roots = {}
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        source = Path(next(iter(spec.submodule_search_locations)))
        target = CORPUS / name
        if not target.exists():
            for path in source.rglob("*.py"):
                destination = target / path.relative_to(source)
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, destination)
        roots[name] = target
    if not (CORPUS / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=CORPUS, check=True)
    return roots


def corpus_files(paths: list[Path]) -> list[Path]:
    return sorted(p for root in paths for p in root.rglob("*.py"))


def count_lines(files: list[Path]) -> int:
    return sum(path.read_bytes().count(b"\n") for path in files)


def sample(files: list[Path], lines: int, seed: int = 0) -> list[Path]:
    """A deterministic random sample of files holding about ``lines`` lines."""
    shuffled = list(files)
    random.Random(seed).shuffle(shuffled)
    chosen, total = [], 0
    for path in shuffled:
        if total >= lines:
            break
        chosen.append(path)
        total += path.read_bytes().count(b"\n")
    return chosen


def timed(command: list[str], cwd: Path, repeat: int) -> tuple[float, float]:
    """Best wall time and best CPU time (user + sys, children included) of ``repeat`` runs.

    CPU time is reported beside wall time because a shared machine's load inflates wall
    time unevenly; CPU time is the fairer measure of work done.
    """
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
    return best_wall, best_cpu


def parse_loop(kind: str, files: list[Path]) -> float:
    """Seconds to parse ``files`` in one process, with libcst or ast."""
    code = (
        "import sys, time, ast\n"
        "import libcst\n"
        "paths = sys.argv[1:]\n"
        "sources = [open(p, encoding='utf-8', errors='replace').read() for p in paths]\n"
        "start = time.perf_counter()\n"
        "for s in sources:\n"
        "    try:\n"
        f"        {'libcst.parse_module(s)' if kind == 'libcst' else 'ast.parse(s)'}\n"
        "    except Exception:\n"
        "        pass\n"
        "print(time.perf_counter() - start)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *map(str, files)], capture_output=True,
                         text=True, check=True)
    return float(out.stdout.strip())


def tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    return found if Path(found).exists() else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample-lines", type=int, default=8_000,
                        help="lines in the sample for the slow tools")
    parser.add_argument("--repeat", type=int, default=2, help="runs per fast tool (best kept)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()

    roots = build_corpus()
    names = list(roots)
    files = corpus_files(list(roots.values()))
    total_lines = count_lines(files)
    small = sample(files, args.sample_lines)
    small_lines = count_lines(small)
    relative = [str(path.relative_to(CORPUS)) for path in small]
    gradcheck = [sys.executable, "-c", "from gradcheck.cli import main; main()", "lint",
                 "--exit-zero", "-q", "--jobs", str(args.jobs)]
    rows: list[tuple[str, float, float, str]] = []  # name, wall s, cpu s (whole corpus), note

    shutil.rmtree(CORPUS / ".gradcheck_cache", ignore_errors=True)
    cold = timed(gradcheck + ["--no-cache", *names], CORPUS, args.repeat)
    rows.append(("gradcheck lint, cold (--no-cache)", *cold, "measured"))
    subprocess.run(gradcheck + names, cwd=CORPUS, stdout=subprocess.DEVNULL, check=False)  # fill the cache
    rows.append(("gradcheck lint, warm cache", *timed(gradcheck + names, CORPUS, args.repeat),
                 "measured"))
    if tool("ruff"):
        command = [tool("ruff"), "check", "--isolated", "--no-cache", "--exit-zero", *names]
        rows.append(("ruff check (defaults, --no-cache)", *timed(command, CORPUS, args.repeat),
                     "measured"))
    scale = total_lines / small_lines
    note = f"sample of {len(small)} files / {small_lines} lines, scaled x{scale:.0f}"
    for label, command in (
        ("TorchFix", [tool("torchfix"), "--jobs", str(args.jobs)]),
        ("Fixit (fixit lint)", [tool("fixit"), "lint"]),
    ):
        if command[0]:
            wall, cpu = timed(command + relative, CORPUS, 1)
            rows.append((label, wall * scale, cpu * scale, note))
    for kind in ("libcst", "ast"):
        seconds = parse_loop(kind, small)
        label = "bare libcst.parse_module loop" if kind == "libcst" else "bare ast.parse loop"
        rows.append((f"{label} (1 process)", seconds * scale, seconds * scale, note))

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"corpus: {', '.join(names)}: {len(files)} files, {total_lines:,} lines; "
          f"--jobs {args.jobs}; {os.cpu_count()} cores; load average {load:.1f} at the end")
    print("| tool | wall s | CPU s | lines/s (wall) | wall vs gradcheck cold | how |")
    print("|---|---:|---:|---:|---:|---|")
    for label, wall, cpu, how in rows:
        print(f"| {label} | {wall:.2f} | {cpu:.2f} | {total_lines / wall:,.0f} | "
              f"{wall / cold[0]:.1f}x | {how} |")


if __name__ == "__main__":
    main()
