"""Time ``gradcheck lint`` against ruff, TorchFix, Fixit and bare parsers on real corpora.

The corpora live in ``bench/_corpus/`` (git-ignored, made its own git repository with its own
``pyproject.toml``, so no tool applies this project's ignore files or configuration):

- ``torch``: the ``.py`` files of the installed torch wheel (the version pins them);
- ``fixtures``: a copy of this project's ``fixtures/`` (what the README runs first);
- ``diffusers``, ``accelerate``, ``lightning``: the repositories at the commits pinned in
  ``REPOSITORIES``, fetched once with ``git`` (``--git-dir NAME=PATH`` takes a local clone
  or mirror instead of the network). Only ``.py``/``.ipynb`` files, ``pyproject.toml`` and
  ``.gitignore`` files are written out; nothing fetched is ever committed;
- ``wild``: the development part of the precision corpus (154 repositories, ``bench/wild/``),
  only when asked for by name: ``python bench/wild/corpus.py fetch --part dev`` builds it.

Each corpus is timed on its own, gradcheck and ruff side by side in the same run.

Run from the repository root:

    python bench/lint.py                # about 5-10 minutes on 2 cores
    python bench/lint.py --corpus diffusers --repeat 3

Slow tools (TorchFix, Fixit, the libcst loop) run on a deterministic sample of files and
are extrapolated to the whole corpus by lines per second; the table says so.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
CORPUS = ROOT / "_corpus"
PACKAGES = ("torch",)
# name -> (repository, pinned commit)
REPOSITORIES = {
    "diffusers": ("https://github.com/huggingface/diffusers",
                  "58eb52c0803ea9af3abec60841c2a093bdf1f951"),
    "accelerate": ("https://github.com/huggingface/accelerate",
                   "16cb6eb80dd9aa8b4df1a63ef57863e455d53b83"),
    "lightning": ("https://github.com/Lightning-AI/pytorch-lightning",
                  "7f0c3436cd3f6ad3753125672024fc415cbcb414"),
}
_KEPT = re.compile(r"\.(py|ipynb)$|(^|/)(pyproject\.toml|\.gitignore)$")


CORPORA = (*PACKAGES, "fixtures", *REPOSITORIES)
WILD = "wild"  # the corpus's development part, 4.4M lines: timed only when named


def build_corpus(git_dirs: dict[str, str], names: tuple[str, ...] = CORPORA) -> dict[str, Path]:
    """Copy each installed package's .py files, and each pinned repository's tree, into
    the corpus (once); only the corpora in ``names``."""
    roots = {}
    for name in (name for name in PACKAGES if name in names):
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
    fixtures = CORPUS / "fixtures"  # the bundled examples, the README's first command
    if "fixtures" in names:
        if not fixtures.exists():
            shutil.copytree(ROOT.parent / "fixtures", fixtures)
        # the copy is a project of its own, as fixtures/ is inside this checkout: without a
        # root marker its project would be this folder, where `import torch` finds the copy
        # of torch beside it and the analysis would read torch's modules
        (fixtures / "pyproject.toml").touch()
        roots["fixtures"] = fixtures
    for name, (url, commit) in ((n, pin) for n, pin in REPOSITORIES.items() if n in names):
        target = CORPUS / name
        if not target.exists():
            git_dir = git_dirs.get(name) or _clone(name, url, commit)
            _write_tree(git_dir, commit, target)
        roots[name] = target
    if WILD in names:
        # the development part only: nobody times, reads or lints the held-out test part
        if not (CORPUS / WILD / "dev").exists():
            subprocess.run([sys.executable, str(ROOT / "wild" / "corpus.py"), "fetch",
                            "--part", "dev"], check=True)
        roots[WILD] = CORPUS / WILD / "dev"
    if not (CORPUS / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=CORPUS, check=True)
    settings = CORPUS / "pyproject.toml"
    if not settings.exists():
        # the defaults, and a stop: gradcheck looks no further up for settings, so this
        # project's own (its per-file-ignores, its cache directory) never applies here
        settings.write_text("[tool.gradcheck.lint]\n", encoding="utf-8")
    return roots


def _clone(name: str, url: str, commit: str) -> str:
    """A blobless clone holding ``commit`` under ``bench/_corpus/.clones/``."""
    git_dir = CORPUS / ".clones" / f"{name}.git"
    if not git_dir.exists():
        subprocess.run(["git", "clone", "-q", "--bare", "--filter=blob:none", url, str(git_dir)],
                       check=True)
    subprocess.run(["git", f"--git-dir={git_dir}", "fetch", "-q", "origin", commit], check=True)
    return str(git_dir)


def _write_tree(git_dir: str, commit: str, target: Path) -> None:
    """Write the kept files of ``commit`` (blobs a mirror lacks, e.g. large images, are
    never needed: only source files are kept)."""
    git = ["git", f"--git-dir={git_dir}"]
    listing = subprocess.run(git + ["ls-tree", "-r", "-z", commit], capture_output=True,
                             check=True).stdout.decode()
    rows = [entry.split(" ", 2)[2].split("\t", 1) for entry in listing.split("\0") if entry]
    rows = [(blob, path) for blob, path in rows if _KEPT.search(path)]
    reader = subprocess.Popen(git + ["cat-file", "--batch"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    for blob, path in rows:
        reader.stdin.write(f"{blob}\n".encode())
        reader.stdin.flush()
        header = reader.stdout.readline().split()
        if header[1] == b"missing":
            continue
        data = reader.stdout.read(int(header[2]))
        reader.stdout.read(1)
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(data)
    reader.stdin.close()
    reader.wait()


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


def timed(command: list[str], cwd: Path, repeat: int,
          env: dict[str, str] | None = None) -> tuple[float, float]:
    """Median wall time and median CPU time (user + sys, children included) of ``repeat``
    runs.

    CPU time is reported beside wall time because a shared machine's load inflates wall
    time unevenly; CPU time is the fairer measure of work done.
    """
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=env, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(walls), statistics.median(cpus)


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
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per fast tool (the median is kept)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--corpus", action="append", default=None, choices=(*CORPORA, WILD),
                        help="time only this corpus (repeatable; default: all)")
    parser.add_argument("--baseline", metavar="CHECKOUT",
                        help="also time the gradcheck of another checkout (e.g. a git "
                             "worktree of main), alternating with this one")
    parser.add_argument("--git-dir", action="append", default=[], metavar="NAME=PATH",
                        help="a local clone or mirror of a pinned repository")
    args = parser.parse_args()

    git_dirs = dict(item.split("=", 1) for item in args.git_dir)
    roots = build_corpus(git_dirs, tuple(args.corpus or CORPORA))
    names = [name for name in args.corpus or CORPORA if name in roots]
    _with_bytecode(args.baseline)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"--jobs {args.jobs}; {os.cpu_count()} cores; load average {load:.1f} at the start")
    baseline = " baseline cold s (CPU s) |" if args.baseline else ""
    print("| corpus | files | lines | gradcheck cold s (CPU s) | ruff s (CPU s) | "
          f"gradcheck / ruff (wall) | gradcheck warm s |{baseline}")
    print("|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if args.baseline else ""))
    for name in names:
        side_by_side(name, roots[name], args)
    if "torch" in names:
        print()
        slow_tools(roots["torch"], args)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nload average {load:.1f} at the end")


def _with_bytecode(baseline: str | None) -> None:
    """Let gradcheck's runs read and write cached bytecode, as an installed package has it.

    NOTE: with PYTHONDONTWRITEBYTECODE set (some sandboxes set it) every run compiles
    gradcheck, lint_rules and click from source again: ~70 ms that no installed copy pays.
    """
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for env in (None, dict(os.environ, PYTHONPATH=baseline) if baseline else None):
        subprocess.run(_gradcheck(1) + ["--no-cache", str(ROOT.parent / "fixtures")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                       check=False)


def _gradcheck(jobs: int) -> list[str]:
    return [sys.executable, "-c", "from gradcheck.cli import main; main()", "lint",
            "--exit-zero", "-q", "--jobs", str(jobs)]


def side_by_side(name: str, root: Path, args) -> None:
    """One table row: gradcheck cold and warm, and ruff, on one corpus."""
    files = corpus_files([root])
    lines = count_lines(files)
    gradcheck = _gradcheck(args.jobs)
    shutil.rmtree(CORPUS / ".gradcheck_cache", ignore_errors=True)
    ruff = [tool("ruff"), "check", "--isolated", "--no-cache", "--exit-zero", name]
    # alternate the tools so a change in the machine's load hits all alike
    colds, ruffs, baselines = [], [], []
    for _ in range(args.repeat):
        colds.append(timed(gradcheck + ["--no-cache", name], CORPUS, 1))
        if ruff[0]:
            ruffs.append(timed(ruff, CORPUS, 1))
        if args.baseline:
            baselines.append(timed(gradcheck + ["--no-cache", name], CORPUS, 1,
                                   dict(os.environ, PYTHONPATH=args.baseline)))
    cold = _median_pair(colds)
    ruff_time = _median_pair(ruffs) if ruffs else (float("nan"), float("nan"))
    subprocess.run(gradcheck + [name], cwd=CORPUS, stdout=subprocess.DEVNULL, check=False)
    warm = timed(gradcheck + [name], CORPUS, args.repeat)
    shutil.rmtree(CORPUS / ".gradcheck_cache", ignore_errors=True)
    ratio = f"{cold[0] / ruff_time[0]:.2f}x" if ruff[0] else "n/a"
    baseline = ""
    if baselines:
        wall, cpu = _median_pair(baselines)
        baseline = f" {wall:.2f} ({cpu:.2f}) |"
    print(f"| {name} | {len(files):,} | {lines:,} | {cold[0]:.2f} ({cold[1]:.2f}) | "
          f"{ruff_time[0]:.2f} ({ruff_time[1]:.2f}) | {ratio} | {warm[0]:.2f} |{baseline}",
          flush=True)


def _median_pair(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def slow_tools(root: Path, args) -> None:
    """TorchFix, Fixit and bare parser loops on a sample of torch, scaled to the whole."""
    files = corpus_files([root])
    total_lines = count_lines(files)
    small = sample(files, args.sample_lines)
    small_lines = count_lines(small)
    relative = [str(path.relative_to(CORPUS)) for path in small]
    scale = total_lines / small_lines
    note = f"sample of {len(small)} files / {small_lines} lines, scaled x{scale:.0f}"
    print("| tool (torch) | wall s | CPU s | how |")
    print("|---|---:|---:|---|")
    for label, command in (
        ("TorchFix", [tool("torchfix"), "--jobs", str(args.jobs)]),
        ("Fixit (fixit lint)", [tool("fixit"), "lint"]),
    ):
        if command[0]:
            wall, cpu = timed(command + relative, CORPUS, 1)
            print(f"| {label} | {wall * scale:.2f} | {cpu * scale:.2f} | {note} |")
    for kind in ("libcst", "ast"):
        seconds = parse_loop(kind, small)
        label = "bare libcst.parse_module loop" if kind == "libcst" else "bare ast.parse loop"
        print(f"| {label} (1 process) | {seconds * scale:.2f} | {seconds * scale:.2f} | {note} |")


if __name__ == "__main__":
    main()
