"""Line endings: a lone CR, CRLF, mixed endings and form feeds give the findings of the LF file.

Python ends a line at CRLF, CR or LF and nowhere else (a form feed, ``\\v``, U+2028 are
characters inside a line), so every variant below has the same lines as the LF fixture and
must give the same findings at the same positions; ``--fix`` must give the LF file's fix,
with each line keeping its own ending byte for byte.
"""
from __future__ import annotations

import difflib
import io
import json
import shutil
import tokenize

import pytest

from gradcheck import exitcodes
from gradcheck.lint.endings import Endings, split_lines

ISSUE_CR_REPRODUCTION = (b"# t\rfor x, y in loader:\r    loss = model(x)\r    loss.backward()\r"
                         b"    optimizer.step()\r")


def _mixed(text: str) -> str:
    """LF, CRLF and CR in turn; an empty line after a CR keeps CR (CR + LF would be one CRLF)."""
    kinds = ("\n", "\r\n", "\r")
    out, previous = [], "\n"
    for number, line in enumerate(split_lines(text)):
        body = line.rstrip("\r\n")
        ending = kinds[number % 3] if line != body else ""
        if ending == "\n" and previous == "\r" and not body:
            ending = "\r"
        out.append(body + ending)
        previous = ending or previous
    return "".join(out)


def _odd_characters(text: str) -> str:
    """Form feeds on blank lines and characters ``str.splitlines`` splits on in comments."""
    out = []
    for line in split_lines(text):
        if line == "\n":
            line = "\f\n"
        elif line.lstrip().startswith("#"):
            line = line.rstrip("\n") + " \x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\n"
        out.append(line)
    return "".join(out)


VARIANTS = {
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "cr": lambda text: text.replace("\n", "\r"),
    "mixed": _mixed,
    "mixed-form-feeds": lambda text: _mixed(_odd_characters(text)),
}
WHOLE_CORPUS = ("cr", "crlf", "mixed-form-feeds")  # "mixed" alone is covered by the last one


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _copy_fixtures(kit, target) -> list[str]:
    target.mkdir()
    names = []
    for path in sorted(kit.FIXTURES.glob("*.py")):
        shutil.copy(path, target / path.name)
        names.append(path.name)
    return names


def _positions(run) -> list[tuple]:
    """Every finding, without its fix (whose offsets count the file's own endings)."""
    return [(r["path"].split("/", 1)[1], r["line"], r["column"], r["end_line"], r["end_column"],
             r["code"], r["message"]) for r in json.loads(run.stdout)]


def test_the_issue_cr_only_reproduction_reports_gc002_like_its_lf_version(project, kit):
    (project / "cr.py").write_bytes(ISSUE_CR_REPRODUCTION)
    (project / "lf.py").write_bytes(ISSUE_CR_REPRODUCTION.replace(b"\r", b"\n"))
    cr = kit.run_cli(["lint", "--no-cache", "cr.py"])
    lf = kit.run_cli(["lint", "--no-cache", "lf.py"])
    assert cr.exit_code == lf.exit_code == exitcodes.FINDINGS
    assert cr.stdout.startswith("cr.py:5:5: GC002 `optimizer.step()` (line 5)")
    assert cr.stdout.replace("cr.py", "lf.py") == lf.stdout
    assert "All checks passed!" not in cr.stderr


@pytest.fixture(scope="module")
def lf_fixtures(tmp_path_factory, kit):
    """The LF fixtures: names, findings and fixed texts, computed once for every variant."""
    root = tmp_path_factory.mktemp("endings")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        names = _copy_fixtures(kit, root / "lf")
        found = kit.run_cli(["lint", "--no-cache", "--format", "json", "lf"])
        kit.run_cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "lf"])
    fixed = {name: (root / "lf" / name).read_text(encoding="utf-8") for name in names}
    return names, found, fixed


@pytest.mark.parametrize("variant", WHOLE_CORPUS)
def test_every_fixture_gives_the_lf_findings_and_fix(project, kit, variant, lf_fixtures):
    convert = VARIANTS[variant]
    names, lf, fixed_lf = lf_fixtures
    (project / "lf").mkdir()
    for name in names:
        text = (kit.FIXTURES / name).read_text(encoding="utf-8")
        (project / "lf" / name).write_bytes(convert(text).encode("utf-8"))
    other = kit.run_cli(["lint", "--no-cache", "--format", "json", "lf"])
    assert lf.exit_code == other.exit_code == exitcodes.FINDINGS
    assert len(_positions(lf)) > 20  # the fixtures hold plenty of findings to compare
    assert _positions(other) == _positions(lf)

    kit.run_cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "lf"])
    changed = 0
    for name in names:
        fixed = (project / "lf" / name).read_bytes().decode("utf-8")
        assert _lf(fixed) == _lf(convert(fixed_lf[name])), name  # the LF file's fix
        before = convert((kit.FIXTURES / name).read_text(encoding="utf-8"))
        changed += fixed != before
        _assert_endings_kept(before, fixed, name)
    assert changed > 10  # many fixtures were fixed, so endings were really put to the test


# what fixes write: resets (inserted or moved) and .detach()
_FIX_WORDS = ("grad", "detach")


def _assert_endings_kept(before: str, after: str, name: str) -> None:
    """Lines no fix writes keep their bytes; lines a fix writes use one of the file's endings.

    (A moved line may look unchanged to difflib, so lines a fix can write are only held to
    the second rule; the rule for them is pinned by the two tests below.)
    """
    old, new = split_lines(before), split_lines(after)
    matcher = difflib.SequenceMatcher(None, [_lf(x) for x in old], [_lf(x) for x in new],
                                      autojunk=False)
    endings = {line[len(line.rstrip("\r\n")):] for line in old}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for line_before, line_after in zip(old[i1:i2], new[j1:j2]):
                if not any(word in line_before for word in _FIX_WORDS):
                    assert line_before == line_after, name
        for line in new[j1:j2]:
            ending = line[len(line.rstrip("\r\n")):]
            assert ending in endings | {""}, (name, line)


@pytest.mark.parametrize("ending", ["\r", "\r\n"])
def test_an_inserted_line_takes_the_ending_of_the_line_it_lands_on(project, kit, ending):
    # LF everywhere except the step's own line: the inserted reset follows that line's ending
    text = kit.MISSING_ZERO_GRAD
    step = "    optimizer.step()\n"
    (project / "a.py").write_bytes(text.replace(step, step[:-1] + ending).encode())
    run = kit.run_cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "a.py"])
    assert run.exit_code == exitcodes.CLEAN, run.stdout
    after = (project / "a.py").read_bytes().decode()
    assert after.endswith(f"    optimizer.step(){ending}    optimizer.zero_grad(){ending}")
    assert after.count("\r") == 2  # every other line kept its LF


def test_a_moved_line_takes_the_ending_of_the_line_it_lands_on(project, kit):
    text = kit.ZERO_BETWEEN.replace("    optimizer.zero_grad()\n", "    optimizer.zero_grad()\r\n")
    (project / "a.py").write_bytes(text.encode())
    run = kit.run_cli(["lint", "--no-cache", "--fix", "a.py"])
    assert run.exit_code == exitcodes.CLEAN, run.stdout
    after = (project / "a.py").read_bytes().decode()
    assert after.endswith("    optimizer.step()\n    optimizer.zero_grad()\n")
    assert "\r" not in after


@pytest.mark.parametrize("variant", ["cr", "crlf", "mixed"])
def test_noqa_comments_are_read_on_the_files_own_lines(project, kit, variant):
    silenced = kit.MISSING_ZERO_GRAD.replace("optimizer.step()\n",
                                             "optimizer.step()  # noqa: GC002\n")
    (project / "a.py").write_bytes(VARIANTS[variant](silenced).encode())
    (project / "b.py").write_bytes(VARIANTS[variant]("# noqa: GC999\n" + kit.MISSING_ZERO_GRAD)
                                   .encode())
    run = kit.run_cli(["lint", "--no-cache", "a.py", "b.py"])
    assert "a.py" not in run.stdout
    assert f"b.py:{kit.STEP_LINE + 1}:5: GC002" in run.stdout
    assert "warning: b.py:1: unknown rule code GC999" in run.stderr


def test_a_form_feed_before_a_statement_counts_as_a_column_as_pythons_tokenizer_says(project, kit):
    text = kit.MISSING_ZERO_GRAD.replace("    optimizer.step()", "\f    optimizer.step()")
    (project / "a.py").write_text(text, encoding="utf-8")
    column = next(token.start[1] for token in tokenize.generate_tokens(io.StringIO(text).readline)
                  if token.string == "optimizer" and token.start[0] == kit.STEP_LINE)
    run = kit.run_cli(["lint", "--no-cache", "a.py"])
    assert run.stdout.startswith(f"a.py:{kit.STEP_LINE}:{column + 1}: GC002")
    assert column == 5  # the form feed is a character of the line, not a line break


def test_diff_of_a_cr_only_file_shows_its_lines_without_a_missing_newline_note(project, kit):
    (project / "a.py").write_bytes(kit.MISSING_ZERO_GRAD.replace("\n", "\r").encode())
    run = kit.run_cli(["lint", "--no-cache", "--diff", "--unsafe-fixes", "a.py"])
    assert run.exit_code == exitcodes.FINDINGS
    assert "+    optimizer.zero_grad()\r" in run.stdout
    assert "No newline at end of file" not in run.stdout


def test_a_notebook_cell_with_a_form_feed_keeps_its_line_numbers(project, kit):
    cell = kit.MISSING_ZERO_GRAD.replace("import torch\n", "import torch\f\n")
    notebook = {"cells": [{"cell_type": "code", "source": cell, "metadata": {},
                           "outputs": [], "execution_count": None}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (project / "a.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    run = kit.run_cli(["lint", "--no-cache", "a.ipynb"])
    assert run.stdout.startswith(f"a.ipynb:cell 1:{kit.STEP_LINE}:5: GC002"), run.stdout


@pytest.mark.parametrize("text", ["", "x", "a\r\nb", "a\rb\r", "a\n\rb\r\n\n", "\r\r\n\n\r"])
def test_endings_map_every_lf_position_back_to_the_same_place(text):
    endings = Endings.of(text)
    assert endings.text == _lf(text) and len(split_lines(endings.text)) == len(split_lines(text))
    for offset in range(len(endings.text) + 1):
        original = endings.original_offset(offset)
        # the text before a position is the same text, endings aside
        assert _lf(text[:original]) == endings.text[:offset]
