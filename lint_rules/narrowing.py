"""Hollow out functions that cannot take part in a finding, before the flow analysis.

The files that pass the text prefilter are often large test modules where only a few
functions train anything. Every function whose text mentions no gradient event and no
optimizer loses its body (``hollow`` replaces it by ``...`` in the tree), so the index and
the analysis never walk it. Positions of everything kept are unchanged.

The prefilter's regex split into functions is not reused here: it may end a function early in
contrived layouts, which a text screen tolerates but hollowing must not.

>>> source = "def f():\\n    return 1\\n\\ndef g(opt):\\n    opt.step()\\n"
>>> tree = ast.parse(source)
>>> hollow(tree, source)
>>> print(ast.unparse(tree))
def f():
    ...
<BLANKLINE>
def g(opt):
    opt.step()
"""
from __future__ import annotations

import ast
import bisect
import functools
import re

from lint_rules.source import split_lines
from lint_rules.syntax import memoised

# A function whose code (not its strings, not its comments) mentions none of these has no
# gradient event and builds no optimizer; nor can it hold a GC004 running total, which needs a
# backward() in the same function. The flow analysis learns nothing from its body.
# NOTE: strings are left out because argparse setup that says "--optimizer" in its help texts
# is the largest part of many training scripts. A string spanning lines is kept as code.
_RELEVANT = re.compile(r"backward|zero_grad|clear_grad|\.grad\b|\.step\b|optim")
# A method that adds an argument into an attribute (a meter's ``update``) can keep a loss's
# graph for GC004 when a training loop hands it the loss: kept when the file calls it.
_ADDS_TO_SELF = re.compile(r"\bself\.[\w.]+\s*\+=")
# A method that returns what one of its object's networks computes (``return
# -self.q(s, self.policy(s)).mean()``) tells which networks a loss built by calling it goes
# through (``reach.py``): kept when the file calls it.
_RETURNS_OWN_CALL = re.compile(r"\breturn\b[^\r\n]*\bself\.[\w.]+\s*\(")
# A method that returns a counter test (``return step % k == k - 1``) tells when a step runs
# (``do_step = self._should_do_step()``): kept when the file calls it. Both kinds of
# ``return`` line are read off one scan.
_RETURN_LINE = re.compile(r"\breturn\b[^\r\n]*")
_STRING = re.compile(r"""[rRbBuUfF]{0,2}(?:"(?:[^"\\\r\n]|\\[^\r\n])*"|'(?:[^'\\\r\n]|\\[^\r\n])*')""")
_COMMENT = re.compile(r"#[^\r\n]*")
_LINE_END = re.compile(r"\r\n|\r|\n")
# `\b` first: a name that is not called is tried once, not once per character
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def hollow(tree: ast.Module, source: str) -> None:
    """Replace the body of every function of ``tree`` that cannot take part in a finding
    by a single ``...`` (in place)."""
    functions = _functions(tree)
    if not functions:
        return
    code = _Code(source)
    kept = _kept(functions, code)
    removed = []
    for index in _hollowed(functions, kept):
        function = functions[index][0]
        first = function.body[0]
        start, end = code.span(first.lineno, function.end_lineno)
        removed.append(code.text[start:end])
        function.body = [ast.Expr(ast.Constant(...), lineno=first.lineno, col_offset=first.col_offset,
                                  end_lineno=first.lineno, end_col_offset=first.col_offset + 3)]
    # What the removed bodies said still counts as evidence (`model.eval()` there shows a
    # network), so an answer never depends on the hollowing: see hollowed_calls, mentioned.
    tree.hollowed_code = "\n".join(removed)


_DOTTED_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\(")


def hollowed_calls(tree: ast.Module) -> set[str]:
    """The dotted names called in the bodies ``hollow`` removed (``model.eval``)."""
    return {m.group(1).rstrip(".") for m in _DOTTED_CALL.finditer(getattr(tree, "hollowed_code", ""))}


_ASSIGNED_ATTRIBUTE = re.compile(r"^[ \t]*((?:self|cls)(?:\.\w+)+)[ \t]*=[ \t]*([^=\r\n][^\r\n]*?)[ \t]*$",
                                 re.M)
_PLAIN_NAME = re.compile(r"[A-Za-z_]\w*")


def hollowed_attribute_values(tree: ast.Module) -> dict[str, set[str | None]]:
    """What the bodies ``hollow`` removed assign to attributes of ``self`` on a line of
    their own: the name assigned (``self.opt = opt_d``), or None for any other value. Read
    once per tree; callers copy before they add to it."""
    def scan(module: ast.Module) -> dict[str, set[str | None]]:
        found: dict[str, set[str | None]] = {}
        for match in _ASSIGNED_ATTRIBUTE.finditer(getattr(module, "hollowed_code", "")):
            value = match.group(2)
            found.setdefault(match.group(1), set()).add(value if _PLAIN_NAME.fullmatch(value) else None)
        return found
    return memoised("hollowed attribute values", tree, scan)


def mentioned_in_hollowed(tree: ast.Module, name: str) -> bool:
    """Whether a body ``hollow`` removed mentions ``name`` (a function handed on as a hook)."""
    code = getattr(tree, "hollowed_code", "")
    return name in code and re.search(rf"\b{re.escape(name)}\b", code) is not None


class _Code:
    """The file's text without single-line strings and comments (every line kept), with
    where each relevant word and each call lies in it."""

    def __init__(self, source: str) -> None:
        self.text = _COMMENT.sub("", _STRING.sub('""', source))
        self.starts = [0] + [m.end() for m in _LINE_END.finditer(self.text)]
        self.starts.append(len(self.text) + 1)
        self.relevant = [m.start() for m in _RELEVANT.finditer(self.text)]
        self.calls: dict[str, list[int]] = {}
        for match in _CALL.finditer(self.text):
            self.calls.setdefault(match.group(1), []).append(match.start())

    # The three below matter only for functions the file calls that mention nothing
    # relevant: computed the first time such a function is weighed.
    @functools.cached_property
    def adds_to_self(self) -> list[int]:
        return [m.start() for m in _ADDS_TO_SELF.finditer(self.text)]

    @functools.cached_property
    def _returns(self) -> list[re.Match]:
        return list(_RETURN_LINE.finditer(self.text))

    @functools.cached_property
    def counter_returns(self) -> list[int]:
        return [m.start() for m in self._returns if "%" in m.group()]

    @functools.cached_property
    def own_call_returns(self) -> list[int]:
        return [m.start() for m in self._returns if _RETURNS_OWN_CALL.match(m.group())]

    def span(self, first: int, last: int) -> tuple[int, int]:
        """Offsets from the start of line ``first`` to the end of line ``last``."""
        return self.starts[first - 1], self.starts[min(last, len(self.starts) - 1)]


def _any_within(offsets: list[int], span: tuple[int, int]) -> bool:
    index = bisect.bisect_left(offsets, span[0])
    return index < len(offsets) and offsets[index] < span[1]


def _functions(tree: ast.AST) -> list[tuple[ast.AST, int]]:
    """Every function with the index of its enclosing function (-1 at the top), parents
    first. Functions live only in statement bodies, so expressions are never entered."""
    found: list[tuple[ast.AST, int]] = []
    stack: list[tuple[ast.AST, int]] = [(tree, -1)]
    while stack:
        node, owner = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _FUNCTIONS):
                found.append((child, owner))
                stack.append((child, len(found) - 1))
            elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                stack.append((child, owner))
    return found


def _kept(functions: list[tuple[ast.AST, int]], code: _Code) -> set[int]:
    """Indexes of the functions to keep: those whose code mentions a gradient event or an
    optimizer, and those that call (by name, transitively) a kept function, since the flow
    analysis walks calls to functions of the same file."""
    spans = [code.span(function.lineno, function.end_lineno) for function, _ in functions]
    relevant = {i for i, span in enumerate(spans) if _any_within(code.relevant, span)
                or functions[i][0].name in code.calls and (
                    _any_within(code.adds_to_self, span) or _any_within(code.counter_returns, span)
                    or _any_within(code.own_call_returns, span))}
    new_names = {functions[i][0].name for i in relevant}
    kept_names: set[str] = set()
    calls: list[int] = []  # where the file calls a kept function, sorted
    while new_names - kept_names:
        for name in new_names - kept_names:
            calls += code.calls.get(name, ())
        kept_names |= new_names
        calls.sort()
        new_names = set()
        for index, span in enumerate(spans):
            if index not in relevant and _any_within(calls, span):
                relevant.add(index)
                new_names.add(functions[index][0].name)
    return relevant


def _hollowed(functions: list[tuple[ast.AST, int]], kept: set[int]) -> list[int]:
    """Indexes of the outermost irrelevant functions."""
    inside: set[int] = set()
    out = []
    for index, (_, owner) in enumerate(functions):
        if owner in inside:
            inside.add(index)  # inside a hollowed function already
        elif index not in kept:
            inside.add(index)
            out.append(index)
    return out


_BRACKETS = re.compile(r"[()\[\]{}]")


def deepest_position(text: str) -> tuple[int, int]:
    r"""1-based (line, column) where ``text`` nests deepest, to point a "too deeply nested"
    report at: the deepest bracket, or else the start of the longest line (a chain such
    as ``x.a.a.a...`` nests without brackets).

    >>> deepest_position("x = 1\ny = f(g(h(1)))\n")
    (2, 10)
    """
    depth = best = 0
    where = 0
    for match in _BRACKETS.finditer(text):
        depth += 1 if match.group() in "([{" else -1
        if depth > best:
            best, where = depth, match.start()
    if best < 3:
        lines = split_lines(text) or [""]
        longest = max(range(len(lines)), key=lambda i: len(lines[i]))
        return longest + 1, 1
    line = text.count("\n", 0, where) + 1
    return line, where - (text.rfind("\n", 0, where) + 1) + 1
