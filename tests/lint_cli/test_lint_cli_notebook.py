"""Notebooks: code cells as one program, magics skipped, ``cell N`` locations, exact write-back."""
from __future__ import annotations

import json

import pytest

from gradcheck import exitcodes


def _notebook(cells: list[tuple[str, str]]) -> dict:
    return {
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True),
             **({"execution_count": None, "outputs": []} if kind == "code" else {})}
            for kind, source in cells
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


CELLS = [
    ("markdown", "# Training — a notebook\n"),
    ("code", ("%matplotlib inline\n!pip install torch\nimport torch\n"
              "model = torch.nn.Linear(4, 1)\n"
              "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)")),
    ("code", "%%time\nthis is not python at all\n"),
    ("code", ("files = !ls\nfor step in range(10):\n    x = torch.randn(8, 4)\n"
              "    loss = model(x).pow(2).mean()\n    loss.backward()\n    %time optimizer.step()\n"
              "    optimizer.step()")),
]


def _write(path, cells=CELLS, indent=1) -> str:
    text = json.dumps(_notebook(cells), indent=indent, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


def test_findings_read_path_cell_line_col(project, kit):
    _write(project / "train.ipynb")
    run = kit.run_cli(["lint", "--no-cache"])
    # cell 3 is the third code cell; the step is its 7th line
    assert run.stdout.startswith("train.ipynb:cell 3:7:5: GC002 ")
    assert run.exit_code == exitcodes.FINDINGS


def test_json_carries_the_cell(project, kit):
    _write(project / "train.ipynb")
    (record,) = json.loads(kit.run_cli(["lint", "--no-cache", "--format", "json"]).stdout)
    assert (record["cell"], record["line"], record["column"]) == (3, 7, 5)
    # the message speaks in cells too, not in lines of the joined program
    assert "(cell 3, line 7)" in record["message"] and "(cell 3, line 5)" in record["message"]


def test_magics_and_shell_lines_are_skipped(project, kit):
    # without skipping, "%%time" cell content and "files = !ls" are syntax errors (GC000)
    _write(project / "train.ipynb")
    run = kit.run_cli(["lint", "--no-cache", "--format", "json"])
    assert {r["code"] for r in json.loads(run.stdout)} == {"GC002"}


@pytest.mark.parametrize("indent", [1, 2, 4])
def test_fix_writes_back_keeping_the_json_formatting(project, kit, indent):
    path = project / "train.ipynb"
    original = _write(path, indent=indent)
    run = kit.run_cli(["lint", "--no-cache", "--fix"])
    assert run.exit_code == exitcodes.CLEAN
    fixed = path.read_text(encoding="utf-8")
    expected_cells = list(CELLS)
    expected_cells[3] = ("code", CELLS[3][1] + "\n    optimizer.zero_grad()")
    assert fixed == json.dumps(_notebook(expected_cells), indent=indent, ensure_ascii=False) + "\n"
    assert "Training — a notebook" in fixed  # non-ASCII kept as is
    assert fixed != original
    again = kit.run_cli(["lint", "--no-cache", "--fix"])
    assert path.read_text(encoding="utf-8") == fixed and again.exit_code == exitcodes.CLEAN


def test_unchanged_notebook_round_trips_byte_for_byte():
    from gradcheck.lint import notebook

    text = json.dumps(_notebook(CELLS), indent=1, ensure_ascii=False) + "\n"
    assert notebook.dump(notebook.load(text)) == text


def test_a_clean_notebook_and_a_notebook_without_code(project, kit):
    clean = [("code", "import torch\nprint(torch.__version__)\n")]
    _write(project / "a.ipynb", clean)
    _write(project / "b.ipynb", [("markdown", "just text\n")])
    run = kit.run_cli(["lint", "--no-cache"])
    assert run.exit_code == exitcodes.CLEAN


def test_a_modulo_continuation_line_is_python_not_a_magic(project, kit):
    cells = [("code", 'label = ("epoch %d"\n         % 3)\nprint(label)\n'),
             ("code", kit.MISSING_ZERO_GRAD)]
    _write(project / "train.ipynb", cells)
    (record,) = json.loads(kit.run_cli(["lint", "--no-cache", "--format", "json"]).stdout)
    assert record["code"] == "GC002" and record["cell"] == 2
