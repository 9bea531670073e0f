"""The file-level held-out part (``bench/wild/files.csv``): training files read one by one
and each linted alone. Its rows must be well formed, never reuse a repository of a whole-
repository part, and each file must be linted without its neighbours."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH / "wild"))

import files
import manifest

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_the_committed_rows_follow_the_rules():
    whole = {row["repository"].lower() for row in manifest.read_manifest()}
    assert files.problems(files.read_files(), whole) == []


def test_a_bad_row_is_named_with_what_is_wrong():
    rows = [
        {"repository": "a/b", "commit": SHA, "part": "test14", "path": "train.py"},
        {"repository": "A/B", "commit": SHA, "part": "test14", "path": "train.py"},
        {"repository": "c/d", "commit": "abc", "part": "test14", "path": "main.py"},
        {"repository": "e/f", "commit": SHA, "part": "test99", "path": "main.py"},
        {"repository": "g/h", "commit": SHA, "part": "test14", "path": "run.py"},
    ]
    found = files.problems(rows, whole_repositories={"g/h"}, reserved={"c/d"})
    assert any("listed twice" in p for p in found)
    assert any("not a 40-digit hex sha" in p for p in found)
    assert any("'test99'" in p for p in found)
    assert any("reserved" in p and "c/d" in p for p in found)
    assert any("already in repos.csv" in p and "g/h" in p for p in found)


def test_an_unknown_part_is_refused():
    with pytest.raises(ValueError, match="unknown file-level part 'test16'"):
        files.read_files("test16")


def test_each_file_is_linted_alone(tmp_path, monkeypatch):
    # two files of one repository: the step in one and the reset in the other must not meet
    listing = tmp_path / "files.csv"
    listing.write_text("repository,commit,part,path\n"
                       f"o/r,{SHA},test14,train.py\n"
                       f"o/r,{SHA},test14,helpers.py\n")
    repo = tmp_path / "test14" / "o+r"
    repo.mkdir(parents=True)
    (repo / "train.py").write_text(
        "import torch\nfrom helpers import clear\n\n"
        "def train(model, optimizer, loader):\n"
        "    for x in loader:\n"
        "        model(x).sum().backward()\n"
        "        optimizer.step()\n"
        "        clear(optimizer)\n")
    (repo / "helpers.py").write_text("def clear(optimizer):\n    optimizer.zero_grad()\n")
    found = files.finding_rows("test14", tmp_path, preview=True, files=listing)
    assert [(r["path"], r["code"]) for r in found] == [("train.py", "GC002")]
