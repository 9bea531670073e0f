"""A cheap text test that lets the linter skip files that cannot contain a finding.

Every rule needs a backward call. GC001-GC003 also need an optimizer step call, and GC004
needs a running total (``+=`` or ``x = x + ...``) of the backpropagated loss. Parsing costs
~100x more than a regex scan, so most of a large tree (model code, utilities) should never
reach the parser. The test may say True for a file without findings (that only costs time)
but must never say False for a file with one.

Two stages:

1. file level: a backward call and a step call (or a sum of a backpropagated name);
2. unit level: the file is split into *units* (each outermost function, plus the module's
   own code) and one unit must combine backward and step (or sum its backpropagated loss),
   directly or through calls to functions of the same file, as the rules' summaries do.
   Comments and doctest lines do not count.

Expressions are followed across lines where Python continues them (open brackets, a
trailing backslash): ``total = total + (`` on one line and ``loss)`` on the next is a sum of
``loss``, and ``accelerator.backward(`` / ``loss)`` backpropagates it.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

_BACKWARD = re.compile(r"backward\s*\(")  # a literal prefix keeps the scan fast
_STEP = re.compile(r"step\s*\(")  # opt.step(), scaler.step(opt), xm.optimizer_step(opt)
_WORD = re.compile(r"[A-Za-z_]\w*")
# words that carry a backward call but are never the accumulated loss
_CARRIERS = frozenset({
    "self", "backward", "manual_backward", "scale", "scaler", "accelerator", "fabric", "torch",
    "autograd", "engine", "model_engine", "deepspeed", "amp",
})


def _is_call_site(source: str, start: int) -> bool:
    """``.backward(`` / ``.manual_backward(`` / bare ``backward(``, not ``def backward(``
    or ``max_pool2d_backward(``."""
    head = source[max(0, start - 16) : start]
    if head.endswith("manual_"):
        head = head[: -len("manual_")]
        return head.rstrip().endswith(".")
    if head.rstrip().endswith("."):
        return True
    return not (head[-1:].isalnum() or head.endswith("_")) and not head.endswith("def ")


def _backward_calls(source: str) -> list[re.Match[str]]:
    return [m for m in _BACKWARD.finditer(source) if _is_call_site(source, m.start())]


def _step_calls(source: str) -> list[re.Match[str]]:
    """``.step(`` and ``.optimizer_step(`` calls (not ``def step(`` or ``lr_step(``)."""
    if "step" not in source:
        return []
    calls = []
    for match in _STEP.finditer(source):
        head = source[max(0, match.start() - 16) : match.start()]
        head = head.removesuffix("optimizer_")
        if head.rstrip().endswith("."):
            calls.append(match)
    return calls


_MAX_SPAN = 4000  # characters a bracketed expression is followed for; longer ones are cut


def _depth(text: str) -> int:
    """Open minus closed brackets in ``text`` (strings are not skipped: that only widens)."""
    return sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")


def _argument_text(source: str, start: int) -> str:
    """The text from ``start`` (just after an opening bracket) to its closing bracket."""
    depth, position = 1, start
    end = min(len(source), start + _MAX_SPAN)
    while position < end:
        char = source[position]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                break
        position += 1
    return source[start:position]


def _receiver_text(source: str, line_start: int, call_start: int) -> str:
    """The text of the expression a call hangs off, reaching back over earlier lines while
    its brackets are unbalanced (``(\n    loss * w\n).backward()``)."""
    start = line_start
    while _depth(source[start:call_start]) < 0 and start > 0 and call_start - start < _MAX_SPAN:
        start = source.rfind("\n", 0, start - 1) + 1
    return source[start:call_start]


def _loss_names(source: str, calls: list[re.Match[str]]) -> set[str]:
    """Names in the backpropagated expressions: ``loss`` in ``loss.backward()``,
    ``scaler.scale(loss).backward()`` or ``accelerator.backward(loss)``, also when the
    expression spans several lines."""
    names: set[str] = set()
    for match in calls:
        line_start = source.rfind("\n", 0, match.start()) + 1
        before = _receiver_text(source, line_start, match.start())
        # only the expression the call hangs off, not an assignment target before it
        receiver = re.split(r"[=:;,]|\b(?:return|await|if|else|and|or|not)\b", before)[-1]
        names.update(_WORD.findall(receiver))
        names.update(_WORD.findall(_argument_text(source, match.end())))
    return names - _CARRIERS


def _logical_line_end(text: str, line_start: int, line_end: int) -> int:
    """The end of the statement that starts on the line ``[line_start, line_end)``: later
    lines are taken while brackets are open or a line ends with a backslash."""
    depth, origin = 0, line_start
    while True:
        code = text[line_start:line_end].split("#", 1)[0]
        depth += _depth(code)
        continued = code.rstrip().endswith("\\")
        if (depth <= 0 and not continued) or line_end >= len(text):
            return line_end
        if line_end - origin > _MAX_SPAN:
            return line_end
        next_end = text.find("\n", line_end + 1)
        line_start, line_end = line_end + 1, len(text) if next_end == -1 else next_end


def _sums_a_name(text: str, names: set[str]) -> bool:
    """Whether a statement of ``text`` adds (``+``) and mentions one of ``names`` on the line
    of the ``+`` or on the continuation lines after it."""
    if not names:
        return False
    position = text.find("+")
    while position != -1:
        line_start = text.rfind("\n", 0, position) + 1
        line_end = text.find("\n", position)
        line_end = len(text) if line_end == -1 else line_end
        code = text[line_start:line_end].split("#", 1)[0]
        if "+" in code:
            if not names.isdisjoint(_WORD.findall(code)):
                return True
            statement_end = _logical_line_end(text, line_start, line_end)
            if statement_end > line_end:
                rest = text[line_end:statement_end]
                words = _WORD.findall("\n".join(ln.split("#", 1)[0] for ln in rest.split("\n")))
                if not names.isdisjoint(words):
                    return True
        position = text.find("+", line_end)
    return False


# NOTE: the patterns start with a literal ("def", a newline), so the regex engine finds
# candidates with a fast scan instead of trying every character (``^`` gives it no prefix)
_DEF = re.compile(r"def[ \t]+([A-Za-z_]\w*)")
_HEADER_INDENT = re.compile(r"([ \t]*)(?:async[ \t]+)?")
_MODULE = -1


@lru_cache(maxsize=64)
def _closer(width: int) -> re.Pattern[str]:
    """A newline, then a code line indented by at most ``width`` columns."""
    return re.compile(rf"\n[ \t]{{0,{width}}}(?=[^ \t\r\n#])")


def _header(source: str, position: int) -> tuple[int, str, int, str] | None:
    """The first ``def`` header that starts a line at or after ``position`` (a line
    start): its line start, indent, end and function name."""
    for match in _DEF.finditer(source, position):
        line_start = source.rfind("\n", 0, match.start()) + 1
        indent = _HEADER_INDENT.fullmatch(source, line_start, match.start())
        if indent is not None:
            return line_start, indent.group(1), match.end(), match.group(1)
    return None


def _units(source: str) -> tuple[list[int], list[int], list[str]]:
    """Starts, ends and names of the outermost ``def`` blocks.

    A ``def`` ends at the next code line indented no deeper than its header (regex search,
    so a multi-line string or bracket continuation at a lower indent can end it early;
    that only splits a unit and costs recall in contrived layouts).
    """
    starts: list[int] = []
    ends: list[int] = []
    names: list[str] = []
    header = _header(source, 0)
    while header is not None:
        line_start, indent, header_end, name = header
        body = source.find("\n", header_end)
        if body == -1:
            end = len(source)
        else:
            found = _closer(len(indent.expandtabs())).search(source, body)
            end = found.start() + 1 if found else len(source)
        starts.append(line_start)
        ends.append(end)
        names.append(name)
        # the search resumes after the block, so nested defs are never even matched
        header = _header(source, end) if end < len(source) else None
    return starts, ends, names


def _owner(position: int, starts: list[int], ends: list[int]) -> int:
    index = bisect_right(starts, position) - 1
    return index if index >= 0 and position < ends[index] else _MODULE


def _string_spans(source: str) -> tuple[list[int], list[int]]:
    """Starts and ends of triple-quoted strings (docstrings and their examples).

    An opening quote after a ``#`` on its line is a comment, not a string, and is skipped.
    """
    starts: list[int] = []
    ends: list[int] = []
    # the next of each kind of quote at or after ``position``: plain finds, each text
    # scanned once, are much faster than a regex alternation
    following = {quote: source.find(quote) for quote in ('"""', "'''")}
    position = 0
    while True:
        for quote, found in following.items():
            if -1 < found < position:
                following[quote] = source.find(quote, position)
        candidates = [found for found in following.values() if found != -1]
        if not candidates:
            return starts, ends
        start = min(candidates)
        line_start = source.rfind("\n", 0, start) + 1
        if "#" in source[line_start:start]:
            position = start + 3
            continue
        close = source.find(source[start : start + 3], start + 3)
        if close == -1:  # never closed: not a string; a later quote may still open one
            position = start + 1
            continue
        starts.append(start)
        ends.append(close + 3)
        position = close + 3


class _CodeTest:
    """Whether a position is code: not in a comment, a doctest line or a docstring."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts, self.ends = _string_spans(source) if ('"""' in source or "'''" in source) else ([], [])

    def __call__(self, position: int) -> bool:
        line_start = self.source.rfind("\n", 0, position) + 1
        prefix = self.source[line_start:position]
        if "#" in prefix or prefix.lstrip().startswith((">>>", "...")):
            return False
        index = bisect_right(self.starts, position) - 1
        return not (index >= 0 and position < self.ends[index])


def _combines_in_one_unit(source: str, calls: list[re.Match[str]]) -> bool:
    """Whether some unit (an outermost function, or the module's own code) does backward
    and step, directly or through calls to functions of the same file, or sums the loss
    it backpropagates."""
    starts, ends, names = _units(source)
    is_code = _CodeTest(source)
    backward_calls: dict[int, list[re.Match[str]]] = {}
    for call in calls:
        if is_code(call.start()):
            backward_calls.setdefault(_owner(call.start(), starts, ends), []).append(call)
    backward = set(backward_calls)
    step = {_owner(m.start(), starts, ends) for m in _step_calls(source) if is_code(m.start())}
    if not backward.isdisjoint(step):
        return True
    for unit, unit_calls in backward_calls.items():
        span = (0, len(source)) if unit == _MODULE else (starts[unit], ends[unit])
        if _sums_a_name(source[span[0] : span[1]], _loss_names(source, unit_calls)):
            return True
    for reach in (backward, step):  # close both sets over same-file calls by name
        frontier = set(reach)
        while frontier:
            called = {names[unit] for unit in frontier if unit != _MODULE}
            frontier = _callers(source, called, starts, ends) - reach if called else set()
            reach |= frontier
    return not backward.isdisjoint(step)


_WORD_CHARACTER = re.compile(r"\w")


def _callers(source: str, called: set[str], starts: list[int], ends: list[int]) -> set[int]:
    """The units that call a function of ``called`` by name."""
    # NOTE: no ``\b`` in the pattern: it hides the names' first letters from the regex
    # engine's prefix scan (4x slower); the word boundary is checked per match instead
    pattern = re.compile(r"(?:" + "|".join(sorted(called)) + r")\s*\(")
    units = set()
    for match in pattern.finditer(source):
        start = match.start()
        if start == 0 or not _WORD_CHARACTER.match(source, start - 1):
            units.add(_owner(start, starts, ends))
    return units


def could_have_findings_in_bytes(data: bytes) -> bool:
    """The first stage on a Python file's raw bytes, before any decoding: False only when
    no rule could fire, because no backward call is spelled in it.

    Every rule needs a ``backward`` call, and in UTF-8 that word is the same bytes as in
    ASCII, so the test never needs the text (most files of a tree end here). Not for
    notebooks: their JSON may spell a letter as an escape.

    >>> could_have_findings_in_bytes(b"import torch\\nmodel = torch.nn.Linear(1, 1)\\n")
    False
    """
    return b"backward" in data


def could_have_findings(source: str) -> bool:
    """False only when no rule could possibly fire on ``source``.

    >>> could_have_findings("loss.backward()\\noptimizer.step()\\n")
    True
    >>> could_have_findings("def step(self):\\n    return self.model(x)\\n")
    False
    >>> could_have_findings("for b in data:\\r    loss.backward()\\r    opt.step()\\r")
    True
    >>> could_have_findings("def f():\\n    loss.backward()\\n\\f\\n    opt.step()\\n")
    True
    """
    if "backward" not in source:
        return False
    if "\r" in source:  # the scans below split lines at "\n"; Python also ends them at "\r"
        source = source.replace("\r\n", "\n").replace("\r", "\n")
    if "\f" in source:
        # NOTE: Python reads a form feed in a line's indentation as whitespace (a "\f" line is
        # blank); to the unit scan it would start a top-level unit and split a function in
        # two. Dropping it can only join units, which keeps the test conservative.
        source = source.replace("\f", "")
    calls = _backward_calls(source)
    if not calls:
        return False
    if not _step_calls(source) and not _sums_a_name(source, _loss_names(source, calls)):
        return False
    return _combines_in_one_unit(source, calls)
