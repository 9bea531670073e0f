"""Every fenced code block of README.md and docs/*.md is executed (issue 18).

How each block is checked, by its language tag:

- ``python``: run in a fresh namespace, in a helper process (imports are shared between
  blocks, state is not shared with the tests). Where a line that calls ``print`` ends in a
  comment, the comment shows what it prints: ``# prints: TEXT`` must match the output
  exactly; a plain comment (``# tensor(12.)  .grad accumulates``) must start with the
  printed line (output of several lines is only compared through ``# prints:``).
- ``console``: each ``$ command`` runs in bash; the lines after it show its output
  (stdout and stderr as a terminal shows them) and must match it.
- ``bash`` / ``sh``: each command runs and must exit 0 or 1 (1: ``gradcheck lint`` found
  something) without a traceback. Only commands known to be cheap and safe run
  (``gradcheck``, ``python -m gradcheck``, ``cat``, ``echo``, ``ls``); a block with any other
  command (``pip``, ``git``, a benchmark, a launcher) must be marked ``skip``.
- ``toml``: parsed; a ``[tool.gradcheck.lint]`` table is validated as the linter reads it.
- ``yaml``: parsed; ``run:`` commands run as bash commands, pre-commit hook ids must be
  hooks of ``.pre-commit-hooks.yaml``.
- anything else (``text``, no tag): shown output or a file tree, not code; nothing runs.

Matching of shown output: runs of whitespace (line breaks included) count as one space, so
long lines may be wrapped, and ``...`` stands for any text.

Console, bash and yaml commands run in a sandbox: a scratch directory holding a copy of
``fixtures/``, and ``train.py``, ``src/train.py`` and ``notebooks/train.ipynb`` made from a
buggy fixture, so that examples written for a user's project have one to run on.

An HTML comment on the line(s) just before a fence changes what happens to the block:

- ``<!-- doctest: skip (REASON) -->``: not run; the test is skipped with REASON (a GPU, the
  network, a multi-process launcher, a long benchmark);
- ``<!-- doctest: continue -->``: a python block that continues the page's previous python
  block (run after it, in its namespace);
- ``<!-- doctest: lint CODE[:LINE] ... -->`` / ``<!-- doctest: lint clean -->``: the block is
  a program to lint rather than to run; its findings must be exactly these codes (at
  these lines).

Run ``python tests/test_docs.py`` to print every block with how it is checked.
"""
from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]
BLOCK_TIMEOUT = 120  # seconds for one block; a block that needs more should be marked skip
SAFE_COMMANDS = ("gradcheck", "cat", "echo", "ls", "printf")
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^\n`]*)$")
_DIRECTIVE = re.compile(r"<!--\s*doctest:\s*(?P<text>.*?)\s*-->", re.S)

# Pages of rule examples: their python blocks are programs to lint, so each needs a
# ``lint`` directive (running them would only raise NameError on `loader`).
LINT_EXAMPLE_PAGES = ("docs/rules.md",)

# Blocks known to fail, by page and content hash, each expected to fail (strict): a block
# that passes, or is edited, no longer matches its entry. Empty: every block runs and says
# what the page says. Python blocks of LINT_EXAMPLE_PAGES without a directive are expected to
# fail the same way (see _expected_failure).
KNOWN_BROKEN: dict[tuple[str, str], str] = {}


# ----- finding the blocks ------------------------------------------------------------------------
@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text and its directive."""

    page: str
    line: int  # the line of the opening fence, 1-based
    language: str
    text: str
    directive: str  # "" when none

    @property
    def key(self) -> str:
        return hashlib.sha1(self.text.encode()).hexdigest()[:10]

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}:{self.language or 'plain'}"


def blocks_of(page: str) -> list[Block]:
    """The fenced blocks of ``page``, each with the directive just before it."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    found, index = [], 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, indent = opening.group("fence"), opening.group("indent")
        body, end = [], index + 1
        while end < len(lines) and not re.match(rf"^ *{re.escape(fence)}\s*$", lines[end]):
            body.append(lines[end][len(indent):] if lines[end].startswith(indent) else lines[end])
            end += 1
        language = (opening.group("info").strip().split() or [""])[0].lower()
        found.append(Block(page, index + 1, language, "\n".join(body) + "\n",
                           _directive_before(lines, index)))
        index = end + 1
    return found


def _directive_before(lines: list[str], fence: int) -> str:
    """The ``doctest:`` comment on the lines just above line ``fence`` (blank lines allowed)."""
    above = fence - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    if above < 0 or not lines[above].rstrip().endswith("-->"):
        return ""
    start = above
    while start > 0 and "<!--" not in lines[start]:
        start -= 1
    match = _DIRECTIVE.search("\n".join(lines[start:above + 1]))
    return match.group("text") if match else ""


ALL_BLOCKS = [block for page in PAGES for block in blocks_of(page)]


# ----- matching shown output ---------------------------------------------------------------------
def _collapse(text: str) -> str:
    return " ".join(text.split())


def matches(shown: str, actual: str) -> bool:
    """Whether ``actual`` is the output ``shown`` (whitespace collapsed, ``...`` any text).

    >>> matches("a b ... z", "a  b\\n c d\\n z"), matches("a", "a b")
    (True, False)
    """
    pieces = [re.escape(_collapse(piece)) for piece in _collapse(shown).split("...")]
    return re.fullmatch(".*?".join(pieces), _collapse(actual), re.S) is not None


# ----- the sandbox -------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def sandbox(tmp_path_factory) -> Path:
    """A scratch project: ``fixtures/`` and a buggy ``train.py`` in a few places."""
    root = tmp_path_factory.mktemp("docs-sandbox")
    shutil.copytree(ROOT / "fixtures", root / "fixtures")
    script = (ROOT / "fixtures" / "lint" / "bad_accum_zero_every_micro_batch.py").read_text(
        encoding="utf-8")
    (root / "train.py").write_text(script, encoding="utf-8")
    (root / "src").mkdir()
    (root / "src" / "train.py").write_text(script, encoding="utf-8")
    (root / "notebooks").mkdir()
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                           "execution_count": None, "source": script.splitlines(keepends=True)}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "notebooks" / "train.ipynb").write_text(json.dumps(notebook, indent=1),
                                                    encoding="utf-8")
    return root


def _environment() -> dict[str, str]:
    # the sandbox has no checkout: the package must come from where the tests import it
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path, "NO_COLOR": "1", "COLUMNS": "100"}


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    bin_dir = os.path.dirname(sys.executable)  # so `gradcheck` is the tested one
    environment = _environment()
    environment["PATH"] = bin_dir + os.pathsep + environment.get("PATH", "")
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=environment, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=BLOCK_TIMEOUT, check=False)


# ----- python blocks, in a helper process --------------------------------------------------------
class Helper:
    """A process that runs python blocks and lints programs, one JSON line per request."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.process: subprocess.Popen | None = None
        self.lines: queue.Queue[str] = queue.Queue()

    def _start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve"], cwd=self.cwd,
            env=_environment(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.process, self.lines), daemon=True).start()

    @staticmethod
    def _read(process: subprocess.Popen, lines: queue.Queue) -> None:
        for line in process.stdout:
            lines.put(line)
        lines.put("")  # the process ended

    def ask(self, request: dict) -> dict:
        if self.process is None or self.process.poll() is not None:
            self._start()
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        try:
            line = self.lines.get(timeout=BLOCK_TIMEOUT)
        except queue.Empty:
            self.stop()
            return {"error": f"no answer in {BLOCK_TIMEOUT} s (mark the block skip, or make it "
                             "cheaper)"}
        if not line:
            self.process = None
            return {"error": "the helper process died running the block"}
        return json.loads(line)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None


@pytest.fixture(scope="session")
def helper(sandbox):
    running = Helper(sandbox)
    yield running
    running.stop()


def _serve() -> None:
    """The helper process: requests on stdin, answers on the original stdout."""
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # output written below Python's sys.stdout cannot garble the answers
    for line in sys.stdin:
        request = json.loads(line)
        answer = _lint_program(request) if request["op"] == "lint" else _run_python(request)
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


def _run_python(request: dict) -> dict:
    """Run a block statement by statement: ``[first line, last line, stdout]`` for each."""
    import ast
    import contextlib
    import io
    import traceback

    namespace: dict = {"__name__": "__main__"}
    statements = []
    try:
        for earlier in request["setup"]:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(earlier, "<earlier block>", "exec"), namespace)
        tree = ast.parse(request["code"])
        for node in tree.body:
            output = io.StringIO()
            with contextlib.redirect_stdout(output):
                exec(compile(ast.Module([node], []), "<block>", "exec"), namespace)
            statements.append([node.lineno, node.end_lineno, output.getvalue()])
    except BaseException as error:  # noqa: BLE001  (any failure of the block is the answer)
        frames = [frame for frame in traceback.extract_tb(error.__traceback__)
                  if frame.filename in ("<block>", "<earlier block>")]
        where = f"line {frames[-1].lineno} of the block: " if frames else ""
        message = "".join(traceback.format_exception_only(type(error), error)).strip()
        return {"statements": statements, "error": where + message}
    return {"statements": statements, "error": None}


def _lint_program(request: dict) -> dict:
    from gradcheck.lint.checker import check_document
    from gradcheck.lint.document import Document
    from gradcheck.lint.registry import all_rules

    from lint_rules.finding import PREVIEW

    codes = {rule.code for rule in all_rules()}
    # the pages show every form, those still in preview included
    outcome = check_document(Document(request["code"]), "example.py", frozenset(codes | {PREVIEW}), codes)
    return {"findings": [[f.code, f.line] for f in outcome.findings]}


def _print_lines(code: str) -> dict[int, str]:
    """``line -> comment`` for each line whose statement calls ``print`` and ends in a comment."""
    import ast
    import io
    import tokenize

    comments = {}
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.COMMENT and token.line[: token.start[1]].strip():
            comments[token.start[0]] = token.string[1:].strip()
    printing = {node.end_lineno for node in ast.walk(ast.parse(code))
                if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "print"}
    return {line: text for line, text in comments.items() if line in printing}


def check_python(block: Block, helper: Helper, setup: list[str]) -> None:
    answer = helper.ask({"op": "python", "code": block.text, "setup": setup})
    assert answer["error"] is None, f"{block.name} raised, at {answer['error']}"
    output_by_line: dict[int, str] = {}
    for _, last, output in answer["statements"]:
        output_by_line[last] = output_by_line.get(last, "") + output
    for line, comment in _print_lines(block.text).items():
        printed = output_by_line.get(line, "").rstrip("\n")
        where = f"{block.page}:{block.line + line} prints {printed!r}"
        if comment.startswith("prints:"):
            assert matches(comment[len("prints:"):], printed), f"{where}; the page says {comment!r}"
        elif "\n" not in printed:
            assert _collapse(comment).startswith(_collapse(printed)) or matches(comment, printed), (
                f"{where}; the page says {comment!r}")


def check_lint(block: Block, helper: Helper) -> None:
    wanted = block.directive.split()[1:]
    expected = [] if wanted == ["clean"] else wanted
    with_lines = all(":" in item for item in expected)
    assert with_lines or not any(":" in item for item in expected), (
        f"{block.name}: give every code a line (GC002:5) or none")
    found = helper.ask({"op": "lint", "code": block.text})["findings"]
    got = [f"{code}:{line}" if with_lines else code for code, line in found]
    assert sorted(got) == sorted(expected), (
        f"{block.name}: lint found {got}, the page says {expected}")


# ----- console, bash, yaml, toml -----------------------------------------------------------------
def console_sessions(text: str) -> list[tuple[str, str]]:
    """``(command, shown output)`` for each ``$ command`` (a trailing ``\\`` continues it)."""
    sessions: list[list[str]] = []
    continuing = False
    for line in text.splitlines():
        if continuing:
            sessions[-1][0] += "\n" + line
        elif line.startswith("$ "):
            sessions.append([line[2:], ""])
        elif sessions:
            sessions[-1][1] += line + "\n"
        continuing = bool(sessions) and line.endswith("\\") and not sessions[-1][1]
    return [(command, shown) for command, shown in sessions]


def check_console(block: Block, sandbox: Path) -> None:
    sessions = console_sessions(block.text)
    assert sessions, f"{block.name}: a console block without a `$ command` line"
    for command, shown in sessions:
        run = _shell(command, sandbox)
        assert matches(shown, run.stdout), (
            f"{block.name}: `$ {command}` printed:\n{run.stdout}\nthe page shows:\n{shown}")


def _commands(text: str) -> list[str]:
    """The commands of a bash block, one per line (continued lines joined; bash itself
    reads the comments)."""
    joined = re.sub(r"\\\n", " ", text)
    return [line.strip() for line in joined.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def _words(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return list(lexer)


def _is_safe(command: str) -> bool:
    """Whether every simple command of ``command`` starts with a known cheap, safe program."""
    words, simple = _words(command) + [";"], []
    for word in words:
        if word not in ("|", "||", "&&", ";", "&"):
            simple.append(word)
            continue
        while simple and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", simple[0]):
            simple = simple[1:]  # NAME=value before a command
        if simple[:3] == ["python", "-m", "gradcheck"]:
            simple = ["gradcheck", *simple[3:]]
        if not simple or simple[0] not in SAFE_COMMANDS:
            return False
        simple = []
    return True


def check_commands(block: Block, commands: list[str], sandbox: Path) -> None:
    unsafe = [command for command in commands if not _is_safe(command)]
    assert not unsafe, (f"{block.name}: {unsafe} may be slow or change the machine; mark the "
                        "block <!-- doctest: skip (why) --> or make it cheap")
    for command in commands:
        run = _shell(command, sandbox)
        assert run.returncode in (0, 1) and "Traceback" not in run.stdout, (
            f"{block.name}: `{command}` exited {run.returncode}:\n{run.stdout}")


def check_yaml(block: Block, sandbox: Path) -> None:
    yaml = pytest.importorskip("yaml")
    document = yaml.safe_load(block.text)
    steps = document if isinstance(document, list) else []
    repos = document.get("repos", []) if isinstance(document, dict) else []
    commands = [step["run"] for step in steps if isinstance(step, dict) and "run" in step]
    hooks = [hook["id"] for repo in repos for hook in repo.get("hooks", [])]
    known = {hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) <= known, (
        f"{block.name}: hooks {set(hooks) - known} are not in .pre-commit-hooks.yaml")
    assert commands or hooks, f"{block.name}: neither `run:` steps nor pre-commit hooks to check"
    check_commands(block, commands, sandbox)


def check_toml(block: Block) -> None:
    from gradcheck.lint.config import _toml, parse_table

    table = _toml().loads(block.text)
    lint = table.get("tool", {}).get("gradcheck", {}).get("lint")
    if lint is not None:
        parse_table(lint, ROOT, None)  # raises ConfigError, naming the key, when it is wrong


# ----- the tests ---------------------------------------------------------------------------------
def _setup(block: Block) -> list[str]:
    """The code of the page's python blocks that ``block`` continues."""
    earlier = [b for b in ALL_BLOCKS if b.page == block.page and b.language == "python"
               and b.line < block.line]
    chain: list[str] = []
    current = block
    while current.directive == "continue" and earlier:
        current = earlier.pop()
        chain.insert(0, current.text)
    return chain


def _expected_failure(block: Block) -> str | None:
    if block.page in LINT_EXAMPLE_PAGES and block.language == "python" and not block.directive:
        return ("a rule example without a lint directive: lint_rules/docs.py should write "
                "<!-- doctest: lint CODE:LINE ... --> (flagged) or <!-- doctest: lint clean --> "
                "(accepted) before each example")
    return KNOWN_BROKEN.get((block.page, block.key))


def _params():
    for block in ALL_BLOCKS:
        reason = _expected_failure(block)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(block, id=block.name, marks=marks)


@pytest.mark.parametrize("block", list(_params()))
def test_block(block: Block, helper: Helper, sandbox: Path) -> None:
    directive = block.directive
    if directive.startswith("skip"):
        reason = directive[len("skip"):].strip().strip("()")
        assert reason, f"{block.name}: a skip must say why: <!-- doctest: skip (REASON) -->"
        pytest.skip(reason)
    if directive.startswith("lint"):
        check_lint(block, helper)
    elif directive not in ("", "continue"):
        pytest.fail(f"{block.name}: unknown directive {directive!r}")
    elif block.language in ("python", "py", "python3"):
        assert block.page not in LINT_EXAMPLE_PAGES, (
            f"{block.name}: a rule example needs <!-- doctest: lint CODES --> or lint clean")
        check_python(block, helper, _setup(block))
    elif block.language == "console":
        check_console(block, sandbox)
    elif block.language in ("bash", "sh", "shell"):
        check_commands(block, _commands(block.text), sandbox)
    elif block.language in ("yaml", "yml"):
        check_yaml(block, sandbox)
    elif block.language == "toml":
        check_toml(block)
    else:
        pytest.skip(f"a {block.language or 'plain'} block shows output or a tree; nothing to run")


def test_the_pages_are_found():
    assert len(ALL_BLOCKS) > 50 and {b.page for b in ALL_BLOCKS} >= {"README.md", "docs/lint.md"}
    own = [entry for entry in KNOWN_BROKEN if entry[0] in ("README.md", "docs/lint.md")]
    assert not own, f"the CLI's own pages are fixed, never excused: {own}"


def test_the_harness_fails_a_wrong_example(helper, sandbox):
    def block(language: str, text: str, directive: str = "") -> Block:
        return Block("docs/example.md", 1, language, text, directive)

    check_python(block("python", "print(1 + 1)  # prints: 2\n"), helper, [])
    with pytest.raises(AssertionError, match="prints '3'"):
        check_python(block("python", "print(1 + 2)  # prints: 2\n"), helper, [])
    with pytest.raises(AssertionError, match="prints 'False'"):
        check_python(block("python", "print(1 > 2)  # True, since ...\n"), helper, [])
    with pytest.raises(AssertionError, match="NameError"):
        check_python(block("python", "loader\n"), helper, [])
    loop = "for b in data:\n    loss.backward()\n    opt.step()\n"
    check_lint(block("python", loop, "lint GC002:3"), helper)
    with pytest.raises(AssertionError, match="lint found"):
        check_lint(block("python", loop, "lint clean"), helper)
    with pytest.raises(AssertionError, match="printed"):
        check_console(block("console", "$ echo hello\nbye\n"), sandbox)
    with pytest.raises(AssertionError, match="may be slow or change the machine"):
        check_commands(block("bash", "pip install x\n"), ["pip install x"], sandbox)


def test_the_readme_counts_the_fixture_programs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lint = ROOT / "fixtures" / "lint"
    counts = tuple(len(list(folder.glob("*.py"))) for folder in (lint, lint / "wild", lint / "shapes"))
    claims = re.findall(r"`fixtures/lint/` holds (\d+) whole programs.*?`fixtures/lint/wild/` "
                        r"(\d+) minimal programs.*?`fixtures/lint/shapes/` (\d+) minimal programs",
                        text, re.S)
    layout = re.findall(r"lint/ \((\d+) programs and (\d+) minimal ones in wild/ and (\d+) in shapes/",
                        text)
    assert claims and layout, "the README no longer states the fixture counts where this test looks"
    for stated in claims + layout:
        assert tuple(map(int, stated)) == counts, (
            f"the README says {stated} programs (top level, wild/, shapes/); there are {counts}")


def test_matching_and_sessions():
    assert matches("x ... y", "x\n  1\n2 y") and not matches("x ... y", "x 1 2 z")
    assert matches("a: ...", "a: anything at all") and not matches("True None", "False Row()")
    assert console_sessions("$ a \\\n  --b\nout 1\n$ c\n") == [("a \\\n  --b", "out 1\n"),
                                                             ("c", "")]
    assert _is_safe("cat train.py | gradcheck lint - --stdin-filename train.py")
    assert _is_safe("GRADCHECK_X=1 python -m gradcheck rules")
    assert not _is_safe("pip install -e .") and not _is_safe("gradcheck lint && git push")


def _describe() -> None:
    for block in ALL_BLOCKS:
        how = block.directive or block.language or "plain"
        print(f"{block.name:40} {block.key}  {how}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        _serve()
    else:
        _describe()
