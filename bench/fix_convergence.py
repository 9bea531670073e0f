"""``--fix`` converges and output is deterministic, measured on real code and generated loops.

Three measurements, each printed as one table row:

1. ``--fix --unsafe-fixes`` on a copy of a corpus, then again: the second run must change no
   file (and the fixed files must still compile);
2. 1,000 generated training loops (the shapes of ``tests/lint_rules/test_lint_rules_fix_
   convergence.py``): fixing reaches a fixed point and a further run has nothing to apply;
3. ``--format json`` on the corpus under five ``PYTHONHASHSEED`` values, with ``-j 1`` and
   ``-j 2``: every output must be the same bytes.

    python bench/fix_convergence.py --corpus CORPUS/dev [--repos 40] [--loops 1000] [--only fix]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def lint(root: Path, *extra: str, seed: str = "0") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradcheck", "lint", "--no-cache", "--exit-zero",
                           *extra, "."], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONSAFEPATH": "1"})


def digest_tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".gradcheck_cache" not in p.parts}


def fix_twice(corpus: Path, repos: int) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "corpus"
        names = sorted(p.name for p in corpus.iterdir() if p.is_dir())[:repos]
        for name in names:
            shutil.copytree(corpus / name, copy / name)
        before = digest_tree(copy)
        lint(copy, "--fix", "--unsafe-fixes")
        after_first = digest_tree(copy)
        lint(copy, "--fix", "--unsafe-fixes")
        after_second = digest_tree(copy)
        fixed = [p for p in before if before[p] != after_first[p]]
        moved = [p for p in after_first if after_first[p] != after_second[p]]
        broken = [p for p in fixed if p.endswith(".py") and _does_not_compile(copy / p)]
        return (f"| fix twice on {len(names)} repositories | {len(fixed)} files fixed by the first "
                f"run | {len(moved)} changed by the second | {len(broken)} fixed files that do "
                f"not compile |")


def _does_not_compile(path: Path) -> bool:
    try:
        compile(path.read_text(encoding="utf-8"), str(path), "exec")
    except SyntaxError:
        return True
    return False


def generated(loops: int) -> str:
    sys.path.insert(0, str(ROOT / "tests" / "lint_rules"))
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from test_lint_rules_fix_convergence import block, fix_until_done, render

    from lint_rules import check_source

    tally = {"loops": 0, "fixed": 0, "left with a fix": 0}

    @settings(max_examples=loops, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(block, st.booleans())
    def run(body, epochs):
        source = render(body, epochs)
        fixed, counts = fix_until_done(source)
        tally["loops"] += 1
        tally["fixed"] += fixed != source
        tally["left with a fix"] += any(f.fix for f in check_source(fixed))

    run()
    return (f"| generated loops | {tally['loops']} loops, {tally['fixed']} fixed | "
            f"{tally['left with a fix']} with a fix left after the fixed point | |")


def deterministic(corpus: Path, repos: int) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "corpus"
        for name in sorted(p.name for p in corpus.iterdir() if p.is_dir())[:repos]:
            shutil.copytree(corpus / name, copy / name)
        outputs = {(seed, jobs): hashlib.sha256(lint(copy, "--format", "json", "-j", jobs,
                                                     seed=seed).stdout.encode()).hexdigest()
                   for seed in ("0", "1", "2", "3", "4") for jobs in ("1", "2")}
        distinct = len(set(outputs.values()))
        return f"| JSON output, 5 hash seeds x -j 1/-j 2 | {len(outputs)} runs | {distinct} distinct outputs | |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--repos", type=int, default=40)
    parser.add_argument("--loops", type=int, default=1000)
    parser.add_argument("--only", choices=("fix", "loops", "determinism"), action="append",
                        help="run only these measurements (default: all three)")
    args = parser.parse_args()
    chosen = args.only or ["fix", "loops", "determinism"]
    print("| measure | runs | result | |\n|---|---|---|---|")
    if "fix" in chosen:
        print(fix_twice(args.corpus, args.repos), flush=True)
    if "loops" in chosen:
        print(generated(args.loops), flush=True)
    if "determinism" in chosen:
        print(deterministic(args.corpus, args.repos), flush=True)


if __name__ == "__main__":
    main()
