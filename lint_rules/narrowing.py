"""The cheap stage before libcst: hollow out functions that cannot take part in a finding.

libcst parses at roughly a tenth of the stdlib parser's speed, and the files that pass the
text prefilter are often large test modules where only a few functions train anything. The
stdlib parser finds every function whose text mentions no gradient event and no optimizer;
its body is replaced by ``...`` and blank lines. Lines and columns of everything kept are
unchanged, so positions and fix offsets computed on the original text stay valid.

The prefilter's regex split into functions is not reused here: it may end a function early in
contrived layouts, which a text screen tolerates but hollowing must not (the result has to
parse).

>>> print(narrow("def f():\\n    return 1\\n\\ndef g(opt):\\n    opt.step()\\n"), end="")
def f():
    ...
<BLANKLINE>
def g(opt):
    opt.step()
"""
from __future__ import annotations

import ast
import re
import warnings

from lint_rules.source import split_lines

# A function whose text mentions none of these has no gradient event and builds no optimizer;
# nor can it hold a GC004 running total, which needs a backward() in the same function. The
# flow analysis learns nothing from its body.
_RELEVANT = re.compile(r"backward|zero_grad|clear_grad|\.grad\b|\.step\b|optim")


def narrow(source: str) -> str:
    """``source`` with irrelevant function bodies hollowed out (itself if nothing changes).

    When the stdlib parser rejects the text (new syntax, or a real error) the text comes
    back unchanged, and libcst gives the verdict.
    """
    try:
        with warnings.catch_warnings():
            # Invalid escape sequences and the like are the user's business, not the linter's.
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source
    lines = split_lines(source)
    spans = list(_hollow_spans(tree, lines))
    if not spans:
        return source
    for first, last in spans:
        head = lines[first - 1]
        lines[first - 1] = head[: len(head) - len(head.lstrip())] + "..." + _ending(head)
        for number in range(first + 1, last + 1):
            lines[number - 1] = _ending(lines[number - 1])
    return "".join(lines)


def _hollow_spans(node: ast.AST, lines: list[str]):
    """(first, last) body lines of every irrelevant function, outermost first."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = _first_line(child.body[0])
            text = "".join(lines[child.lineno - 1: child.end_lineno])
            if first > child.lineno and not _RELEVANT.search(text):
                yield first, child.end_lineno
                continue
        yield from _hollow_spans(child, lines)


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", [])
    return min([statement.lineno] + [d.lineno for d in decorators])


def _ending(line: str) -> str:
    stripped = line.rstrip("\r\n")
    return line[len(stripped):] or "\n"
