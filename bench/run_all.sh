#!/usr/bin/env bash
# Every benchmark, one after the other, each comparing gradcheck with its peers side by side.
# Output goes to the terminal and to bench/_out/<name>.txt; docs/benchmarks.md records a run.
# About 8 minutes on 2 cores. Needs the test extras and torch (pip install -e ".[test]" torch==2.13.0)
# plus ruff, torchfix and fixit for the lint comparison (pip install ruff torchfix fixit).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/_out
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
python bench/engine.py --steps 200 | tee bench/_out/engine.txt
python bench/checker.py --repeat 5 | tee bench/_out/checker.txt
python bench/guard.py --threads 1 | tee bench/_out/guard.txt
python bench/lint.py --repeat 3 | tee bench/_out/lint.txt
