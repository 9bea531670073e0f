"""A cheap text test that lets the linter skip files that cannot contain a finding.

Every rule needs a backward call. GC001-GC003 also need an optimizer step call, and GC004
needs a running total (``+=`` or ``x = x + ...``) of the backpropagated loss. Parsing costs
~100x more than a regex scan, so most of a large tree (model code, utilities) should never
reach the parser. The test may say True for a file without findings (that only costs time)
but must never say False for a file with one.

Two stages:

1. file level: a backward call and a step call (or a sum of a backpropagated name);
2. unit level: a line scan splits the file into *units* (each outermost function, plus the
   module's own code) and asks whether one unit combines backward and step, either directly
   or through calls to functions of the same file, as the rules' summaries do.
"""
from __future__ import annotations

import re

_BACKWARD = re.compile(r"backward\s*\(")  # a literal prefix keeps the scan fast
_STEP = re.compile(r"\.\s*(?:optimizer_)?step\s*\(")  # opt.step(), scaler.step(opt), xm.optimizer_step
_WORD = re.compile(r"[A-Za-z_]\w*")
_CALLED = re.compile(r"([A-Za-z_]\w*)\s*\(")
_DEF = re.compile(r"(?:async\s+)?def\s+([A-Za-z_]\w*)")
_TRIPLE = re.compile(r"'''|\"\"\"")
# words that carry a backward call but are never the accumulated loss
_CARRIERS = frozenset(
    "self backward manual_backward scale scaler accelerator fabric torch autograd engine "
    "model_engine deepspeed amp".split()
)


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


def _loss_names(source: str, calls: list[re.Match[str]]) -> set[str]:
    """Names in the backpropagated expressions: ``loss`` in ``loss.backward()``,
    ``scaler.scale(loss).backward()`` or ``accelerator.backward(loss)``."""
    names: set[str] = set()
    for match in calls:
        line_start = source.rfind("\n", 0, match.start()) + 1
        line_end = source.find("\n", match.end())
        before = source[line_start : match.start()]
        # only the expression the call hangs off, not an assignment target before it
        receiver = re.split(r"[=:;,]|\b(?:return|await|if|else|and|or|not)\b", before)[-1]
        arguments = source[match.end() : line_end if line_end != -1 else len(source)]
        names.update(_WORD.findall(receiver))
        names.update(_WORD.findall(arguments.split(")", 1)[0]))
    return names - _CARRIERS


def _sums_a_name(text: str, names: set[str]) -> bool:
    """Whether a line of ``text`` adds (``+``) and mentions one of ``names``."""
    if not names or "+" not in text:
        return False
    alternatives = "|".join(sorted(map(re.escape, names)))
    pattern = re.compile(rf"^[^\n#]*(?:\+[^\n]*\b(?:{alternatives})\b|\b(?:{alternatives})\b[^\n]*\+)",
                         re.MULTILINE)
    return pattern.search(text) is not None


def _unit_spans(source: str) -> tuple[list[tuple[list[tuple[int, int]], str]], list[tuple[int, int]]]:
    """The code-line spans and name of each outermost ``def``, and of module-level code.

    A line scan: a ``def`` ends at the next code line indented no deeper than it. Lines in
    triple-quoted strings and bracket continuations never end a unit; comment lines and
    lines inside triple-quoted strings (docstrings, doctest examples) are left out.
    """
    units: list[tuple[list[tuple[int, int]], str]] = []
    module: list[tuple[int, int]] = []
    body: list[tuple[int, int]] = []
    current: tuple[int, int, str] | None = None  # (start, indent, name)
    in_string: str | None = None
    depth = 0
    offset = 0
    for line in source.splitlines(keepends=True):
        start, offset = offset, offset + len(line)
        if in_string is None and depth == 0:
            stripped = line.lstrip()
            if stripped and not stripped.startswith("#"):
                indent = len(line[: len(line) - len(stripped)].expandtabs())
                if current is not None and indent <= current[1]:
                    units.append((body, current[2]))
                    current = None
                if current is None:
                    header = _DEF.match(stripped)
                    if header:
                        current, body = (start, indent, header.group(1)), []
        code_line = in_string is None and not line.lstrip().startswith("#")
        if current is None and code_line:
            module.append((start, offset))
        elif code_line:
            body.append((start, offset))
        if '""' in line or "''" in line:
            for match in _TRIPLE.finditer(line):
                if in_string is None:
                    in_string = match.group(0)
                elif in_string == match.group(0):
                    in_string = None
        if in_string is None:
            code = line.split("#", 1)[0] if "#" in line and "'" not in line and '"' not in line else line
            opened = code.count("(") + code.count("[") + code.count("{")
            closed = code.count(")") + code.count("]") + code.count("}")
            if opened or closed:
                depth = max(0, depth + opened - closed)
    if current is not None:
        units.append((body, current[2]))
    return units, module


def _combines_in_one_unit(source: str, calls: list[re.Match[str]]) -> bool:
    """Whether some unit (transitively through same-file calls) does backward and step,
    or sums the loss it backpropagates."""
    units, module = _unit_spans(source)
    texts = {f"def {i}": "".join(source[s:e] for s, e in spans) for i, (spans, _) in enumerate(units)}
    texts["<module>"] = "".join(source[s:e] for s, e in module)
    names = {f"def {i}": name for i, (_, name) in enumerate(units)}
    backward = {key for key, text in texts.items() if _backward_calls(text)}
    step = {key for key, text in texts.items() if _STEP.search(text)}
    for key in backward:
        text = texts[key]
        if _sums_a_name(text, _loss_names(text, _backward_calls(text))):
            return True
    called = {key: set(_CALLED.findall(text)) for key, text in texts.items()}
    for reach in (backward, step):  # close both sets over same-file calls
        changed = True
        while changed:
            reached_names = {names[key] for key in reach if key in names}
            grown = {key for key, calls_made in called.items() if not calls_made.isdisjoint(reached_names)}
            changed = not grown <= reach
            reach |= grown
    return not backward.isdisjoint(step)


def could_have_findings(source: str) -> bool:
    """False only when no rule could possibly fire on ``source``.

    >>> could_have_findings("loss.backward()\\noptimizer.step()\\n")
    True
    >>> could_have_findings("def step(self):\\n    return self.model(x)\\n")
    False
    """
    if "backward" not in source:
        return False
    calls = _backward_calls(source)
    if not calls:
        return False
    if _STEP.search(source) is None and not _sums_a_name(source, _loss_names(source, calls)):
        return False
    return _combines_in_one_unit(source, calls)
