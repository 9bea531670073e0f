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


def test_help_asked_before_the_name_is_ipython_not_a_syntax_error(project, kit):
    # `?datasets.ImageFolder` asks IPython for help, like `datasets.ImageFolder?` does
    cells = [("code", "import torch\n?torch.optim.SGD\n??torch.nn.Linear\n"),
             ("code", kit.MISSING_ZERO_GRAD)]
    _write(project / "train.ipynb", cells)
    (record,) = json.loads(kit.run_cli(["lint", "--no-cache", "--format", "json"]).stdout)
    assert record["code"] == "GC002" and record["cell"] == 2


def test_sarif_regions_count_lines_within_the_cell(project, kit):
    _write(project / "train.ipynb")
    log = json.loads(kit.run_cli(["lint", "--no-cache", "--format", "sarif"]).stdout)
    (result,) = log["runs"][0]["results"]
    location = result["locations"][0]
    region = location["physicalLocation"]["region"]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "train.ipynb"
    assert (region["startLine"], region["startColumn"], region["endLine"]) == (7, 5, 7)
    assert location["logicalLocations"] == [{"name": "cell 3"}]
    assert result["properties"] == {"cell": 3}
    assert result["message"]["text"].startswith("cell 3: ")


def test_python_files_carry_no_cell_in_sarif(project, kit):
    kit.write(project, {"a.py": kit.MISSING_ZERO_GRAD})
    (result,) = json.loads(kit.run_cli(["lint", "--no-cache", "--format", "sarif"]).stdout)[
        "runs"][0]["results"]
    assert "properties" not in result and "logicalLocations" not in result["locations"][0]


def test_github_annotations_count_lines_within_the_cell(project, kit):
    _write(project / "train.ipynb")
    (line,) = kit.run_cli(["lint", "--no-cache", "--format", "github"]).stdout.splitlines()
    assert line.startswith("::error title=gradcheck (GC002) in cell 3,file=train.ipynb,"
                           "line=7,col=5,endLine=7,")
    assert line.split("::", 2)[2].startswith("cell 3, line 7: GC002 ")


def test_junit_lines_count_within_the_cell(project, kit):
    from xml.etree import ElementTree

    _write(project / "train.ipynb")
    root = ElementTree.fromstring(kit.run_cli(["lint", "--no-cache", "--format", "junit"]).stdout)
    (case,) = root.iter("testcase")
    assert case.get("line") == "7" and "cell 3:7:5" in case.get("name")


def test_a_syntax_error_in_a_named_notebook_is_located_in_its_cell(project, kit):
    _write(project / "nb.ipynb", [("code", "x = 1\n"), ("code", "y = 2\ndef f(:\n    pass\n")])
    run = kit.run_cli(["lint", "--no-cache", "nb.ipynb"])
    assert run.exit_code == exitcodes.ERROR
    assert run.stdout.startswith("nb.ipynb:cell 2:2:") and "GC000 syntax error" in run.stdout


def test_fix_keeps_the_byte_order_mark_of_a_notebook(project, kit):
    path = project / "train.ipynb"
    text = _write(path)
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    run = kit.run_cli(["lint", "--no-cache", "--fix"])
    assert run.exit_code == exitcodes.CLEAN
    fixed = path.read_bytes()
    assert fixed.startswith(b"\xef\xbb\xbf") and not fixed[3:].startswith(b"\xef\xbb\xbf")
    assert "optimizer.zero_grad()" in json.loads(fixed[3:].decode("utf-8"))["cells"][3]["source"][-1]


def test_shell_escapes_with_a_space_and_continuations_are_not_python() -> None:
    from gradcheck.lint.notebook import load

    shell = "! python prepare.py --data_dir data \\\n      --split train \\\n      --out out\n"
    nb = load(json.dumps({"cells": [{"cell_type": "code", "source": shell}]}))
    compile(nb.program, "nb", "exec")  # every line is a placeholder that parses
    assert len(nb.program) == len(shell)


def test_an_indented_shell_escape_opening_a_cell_is_not_an_unexpected_indent(project, kit):
    # Jupyter runs ` ! pip install x` (a space before the `!`); the rest of the notebook is read
    cells = [("code", " ! pip install pyDOE\n"), ("code", kit.MISSING_ZERO_GRAD)]
    _write(project / "train.ipynb", cells)
    (record,) = json.loads(kit.run_cli(["lint", "--no-cache", "--format", "json"]).stdout)
    assert record["code"] == "GC002" and record["cell"] == 2


def test_a_cell_magic_body_with_indented_lines_parses() -> None:
    from gradcheck.lint.notebook import load

    cell = "%%writefile setup.py\ndef f():\n    return 1\n\n    # indented comment\n"
    nb = load(json.dumps({"cells": [{"cell_type": "code", "source": cell}]}))
    compile(nb.program, "nb", "exec")
    assert len(nb.program) == len(cell)


@pytest.mark.parametrize("first_cell", [
    # `%` continuing a line is Python's modulo, not a magic
    'label = ("epoch %d"\n         % 3)\nprint(label)\n',
    # IPython runs a bare `pip install x` as `%pip install x`; `pip = 3` stays Python
    "pip install torchviz\nconda install -y tqdm\npip = 3\n",
    # `cd ..` and `cd data` are IPython's `%cd`; `cd / 3` divides, so it stays Python
    "cd ..\ncd 'My Drive/course'\nmv a.csv b.csv\ncd = 3\ncd / 3\n",
    # a shell word that opens a call over several lines is Python
    "cat = print\ncat ('a',\n     'b')\n",
], ids=["modulo-continuation", "pip-automagic", "cd-automagic", "call-over-lines"])
def test_ipython_lines_and_python_lines_are_told_apart(project, kit, first_cell):
    _write(project / "train.ipynb", [("code", first_cell), ("code", kit.MISSING_ZERO_GRAD)])
    (record,) = json.loads(kit.run_cli(["lint", "--no-cache", "--format", "json"]).stdout)
    assert record["code"] == "GC002" and record["cell"] == 2


def _indented(source: str, prefix: str) -> str:
    return "".join(prefix + line if line.strip() else line
                   for line in source.splitlines(keepends=True))


def test_a_cell_indented_as_a_whole_is_read_as_ipython_runs_it(project, kit):
    # IPython removes the first line's indentation from every line of the cell, so the cell
    # runs; the program does the same, and the finding is placed in the cell's own columns
    cells = [("code", "  import os\n"), ("code", _indented(kit.MISSING_ZERO_GRAD, "    "))]
    text = _write(project / "train.ipynb", cells)
    (record,) = json.loads(kit.run_cli(["lint", "--no-cache", "--format", "json"]).stdout)
    assert (record["code"], record["cell"], record["line"]) == ("GC002", 2, kit.STEP_LINE)
    assert record["column"] == 9  # `optimizer.step()` after 4 + 4 spaces
    # a fix there would have to re-indent what it inserts: none is offered or applied
    assert record["fix"] is None
    run = kit.run_cli(["lint", "--no-cache", "--fix"])
    assert run.exit_code == exitcodes.FINDINGS
    assert (project / "train.ipynb").read_text(encoding="utf-8") == text


def test_only_lines_that_start_with_the_first_lines_indentation_lose_it() -> None:
    from gradcheck.lint.notebook import load

    cell = "  x = [1,\n2]\n  if x:\n      y = 1\n"
    nb = load(json.dumps({"cells": [{"cell_type": "code", "source": cell}]}))
    assert nb.program == "x = [1,  \n2]\nif x:  \n    y = 1  \n"
    compile(nb.program, "nb", "exec")
    assert [nb.column_shift(line) for line in (1, 2, 3, 4)] == [2, 0, 2, 2]


def test_an_indented_cell_continued_by_a_backslash_is_left_as_it_is() -> None:
    from gradcheck.lint.notebook import load

    # whitespace moved after the backslash would end the continuation: the cell stays as
    # written, and an unexpected indent is then reported as GC000
    cell = "  x = 1 + \\\n    2\n"
    nb = load(json.dumps({"cells": [{"cell_type": "code", "source": cell}]}))
    assert nb.program == cell and nb.column_shift(1) == 0
