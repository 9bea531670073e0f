"""The CLI as a real process: exit codes, stdin, start-up imports, parallel workers."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest


def test_real_process_exit_codes_and_stdin(project, kit):
    kit.write(project, {"bad.py": kit.MISSING_ZERO_GRAD, "ok.py": kit.CLEAN_LOOP})
    assert kit.run_subprocess(["lint", "--no-cache", "ok.py"], project).returncode == 0
    bad = kit.run_subprocess(["lint", "--no-cache", "bad.py"], project)
    assert bad.returncode == 1
    assert bad.stdout.decode().startswith(f"bad.py:{kit.STEP_LINE}:5: GC002")
    assert b"Found 1 error" in bad.stderr
    assert kit.run_subprocess(["lint", "--select", "nope"], project).returncode == 2
    piped = kit.run_subprocess(["lint", "-", "--stdin-filename", "x.py"], project,
                               input=kit.MISSING_ZERO_GRAD.encode())
    assert piped.returncode == 1 and piped.stdout.startswith(b"x.py:")


def test_parallel_workers_in_a_real_process(project, kit):
    files = {f"pkg/loop_{i}.py": kit.MISSING_ZERO_GRAD + "\n" * 2000 for i in range(6)}
    files.update({f"pkg/ok_{i}.py": kit.CLEAN_LOOP for i in range(6)})
    kit.write(project, files)
    run = kit.run_subprocess(["lint", "--no-cache", "--jobs", "2", "--format", "json"], project)
    records = json.loads(run.stdout)
    assert sorted(r["path"] for r in records) == sorted(f"pkg/loop_{i}.py" for i in range(6))
    assert run.returncode == 1


def _run_in_fresh_python(project, argv, watched):
    """``gradcheck <argv>`` in a new interpreter; stdout ends with ``HEAVY [...]``, the
    modules of ``watched`` it imported."""
    probe = (
        "import sys\n"
        "from gradcheck.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print('HEAVY', [m for m in {watched!r} if m in sys.modules])\n"
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=project, timeout=60, check=False).stdout


def test_lint_help_imports_nothing_heavy(project):
    heavy = ("numpy", "torch", "jax", "libcst", "gradcheck.ref", "gradcheck.checks", "lint_rules")
    out = _run_in_fresh_python(project, ["lint", "--help"], heavy)
    assert "--select" in out
    assert "HEAVY []" in out


def test_linting_imports_no_numpy_or_torch(project, kit):
    kit.write(project, {"bad.py": kit.MISSING_ZERO_GRAD})
    heavy = ("numpy", "torch", "jax", "gradcheck.ref")
    out = _run_in_fresh_python(project, ["lint", "--no-cache", "-q"], heavy)
    assert "GC002" in out and "HEAVY []" in out


def test_a_clean_tree_starts_no_worker_and_loads_no_parser(project, kit):
    # every file is settled on its bytes: no child process, so no multiprocessing, no libcst
    kit.write(project, {"model.py": "import torch\nlayer = torch.nn.Linear(2, 2)\n",
                        "util.py": "def step(x):\n    return x + 1\n"})
    heavy = ("multiprocessing", "concurrent.futures", "libcst", "tempfile", "difflib",
             "xml.etree")
    out = _run_in_fresh_python(project, ["lint", "--no-cache"], heavy)
    assert "All checks passed!" not in out  # printed on stderr, which is not captured
    assert out.strip().endswith("HEAVY []"), out


@pytest.mark.slow
def test_whole_standard_library_without_crashes(tmp_path):
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"]
    run = subprocess.run(
        [sys.executable, "-c", "from gradcheck.cli import main; main()", "lint", "--no-cache",
         "--exit-zero", "--format", "json", stdlib],
        capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    assert "Traceback" not in run.stderr
    records = json.loads(run.stdout)
    crashes = [r for r in records if "internal error" in r["message"]]
    assert crashes == []
    assert run.returncode in (0, 2)  # 2: the stdlib ships deliberately broken test files
