"""Large and deep programs: a very large module is analysed in pieces with the same answer,
and generated hostile programs never end in a traceback, a dead run or a silent pass."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lint_rules.check as check_module
from lint_rules import check_source
from lint_rules.pieces import split

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "fixtures").rglob("*.py"))


def _signature(findings):
    return [(f.line, f.column, f.end_line, f.code, f.message, f.fix) for f in findings]


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_pieces_give_the_same_findings_and_fixes(path: Path, monkeypatch) -> None:
    source = path.read_text(encoding="utf-8")
    whole = _signature(check_source(source, strict=True))
    # every group of related functions in its own piece
    monkeypatch.setattr(check_module, "PIECE_LINES", 0)
    monkeypatch.setattr(check_module, "split", lambda text: split(text, piece_lines=1))
    assert _signature(check_source(source, strict=True)) == whole


TRAIN = textwrap.dedent("""\
    def train_{i}(model, optimizer, loader):
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()


    """)


def test_a_large_module_splits_into_bounded_pieces(monkeypatch) -> None:
    bad = TRAIN.format(i="bad").replace("        optimizer.zero_grad()\n", "")
    source = "import torch\n\n\n" + "".join(TRAIN.format(i=i) for i in range(150)) + bad
    pieces = split(source, piece_lines=250)
    assert pieces is not None and len(pieces) >= 4
    assert all(piece.text.count("\n") <= 250 + 10 for piece in pieces)
    monkeypatch.setattr(check_module, "PIECE_LINES", 250)
    monkeypatch.setattr(check_module, "split", lambda text: split(text, piece_lines=250))
    (finding,) = check_source(source)
    step_line = source.splitlines().index("def train_bad(model, optimizer, loader):") + 5
    assert (finding.code, finding.line) == ("GC002", step_line)
    assert f"(line {step_line})" in finding.message
    fixed = finding.fix.apply(source)
    assert fixed.count("optimizer.zero_grad()") == 151
    assert fixed.splitlines()[step_line] == "        optimizer.zero_grad()"


def test_a_function_and_its_callers_stay_in_one_piece() -> None:
    source = ("import torch\n\n\ndef step_once(model, optimizer, x):\n"
              "    model(x).sum().backward()\n    optimizer.step()\n\n\n"
              + "".join(f"def helper_{i}():\n    return {i}\n\n\n" for i in range(40))
              + "def fit(model, optimizer, loader):\n    for x in loader:\n"
              "        step_once(model, optimizer, x)\n")
    pieces = split(source, piece_lines=20)
    assert pieces is not None
    (together,) = [p for p in pieces if "def fit" in p.text]
    assert "def step_once" in together.text


# ----- generated hostile programs --------------------------------------------------------------
LOOP = ("for x, y in data:\n"
        "    loss = ((model(x) - y) ** 2).mean()\n"
        "    junk = {expression}\n"
        "    loss.backward()\n"
        "    optimizer.step()\n")
HEAD = ("import torch\nmodel = torch.nn.Linear(4, 1)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n")


@st.composite
def hostile_expressions(draw) -> str:
    depth = draw(st.sampled_from([1, 50, 150, 400, 1_000, 6_000]))
    kind = draw(st.sampled_from(["attribute", "call", "conditional", "lambda", "sum", "unary",
                                 "subscript"]))
    return {
        "attribute": "x" + ".a" * depth,
        "call": "f(" * min(depth, 190) + "x" + ")" * min(depth, 190),
        "conditional": "a if b else " * depth + "c",
        "lambda": "(" + "lambda: " * depth + "x)",
        "sum": " + ".join(["a"] * depth),
        "unary": "-" * depth + "a",
        "subscript": "x" + "[0]" * depth,
    }[kind]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=hostile_expressions(), filler=st.sampled_from([0, 10, 500]),
       nesting=st.integers(0, 30))
def test_generated_programs_report_the_bug_or_say_why_not(tmp_path_factory, expression, filler,
                                                          nesting) -> None:
    from gradcheck.lint.runner import LintOptions, lint_paths

    loop = textwrap.indent(LOOP.format(expression=expression), "    " * nesting)
    guards = "".join("    " * level + "if True:\n" for level in range(nesting))
    body = "".join(f"v{i} = {i}\n" for i in range(filler))
    path = tmp_path_factory.mktemp("hostile") / "train.py"
    path.write_text(HEAD + body + guards + loop, encoding="utf-8")
    # through the runner: a parser crash would kill a child process, not this test
    report = lint_paths(LintOptions(paths=[str(path)], use_cache=False, jobs=1))
    codes = {finding.code for _, finding in report.findings}
    assert codes & {"GC002", "GC000"}, codes  # the planted bug, or why it could not be seen


def test_split_survives_decorators_strings_and_else_at_column_zero() -> None:
    # Candidate cuts at column 0 that are not statement starts: a decorator line, a string
    # spanning lines whose text starts at column 0, and `else:` of a top-level `if`.
    source = (
        "import torch\n"
        "if torch.cuda.is_available():\n    device = 'cuda'\nelse:\n    device = 'cpu'\n"
        "@torch.no_grad()\ndef evaluate(model):\n    return model\n"
        'HELP = """\nsay():\n  nothing\n"""\n'
        "def train(model, data, opt):\n    for b in data:\n        model(b).backward()\n        opt.step()\n"
        "def other():\n    return 1\n"
    )
    pieces = split(source, piece_lines=6)
    assert pieces is not None and len(pieces) > 1
    joined = sorted({line for piece in pieces for line in piece.lines})
    assert joined == list(range(1, source.count("\n") + 1))  # every line lands in some piece
    for piece in pieces:
        compile(piece.text, "<piece>", "exec")
