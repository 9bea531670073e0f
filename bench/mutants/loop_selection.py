"""Choosing the correct training loops of the corpus that the harness mutates.

A scope (a function, or a module's top level) is taken when:

1. it has a loop that calls ``backward()``, an optimizer ``step()`` and a gradient reset
   (or it is a per-batch helper with all three, called inside a loop of its file);
2. at least one mutation operator applies to it;
3. the linter at selection time reports nothing in it and no GC000 in its file.

Identical scopes within a part count once (forks and copies are common), and at most
``PER_REPOSITORY`` scopes per repository are kept, chosen by a hash of path and name, so
that a few large repositories do not decide the figures. ``loops.csv`` keeps where each
scope is, never its code.
"""
from __future__ import annotations

import ast
import csv
import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from lint_batch import lint_texts
from loop_anatomy import called_in_loop, optimizer_owners, scopes, training_loops
from mutation import Context, Mutant, mutants

HERE = Path(__file__).resolve().parent
LOOPS = HERE / "loops.csv"
# No commit column: each repository of a part is pinned once, in repos.csv.
FIELDS = ["repository", "part", "path", "function", "first_line", "last_line"]
PER_REPOSITORY = 20
HINTS = (b"backward", b"step(", b"grad")


@dataclass
class Scope:
    """One selected (or candidate) scope with its mutants."""

    row: dict[str, str]  # a loops.csv row
    source: str
    mutants: list[Mutant]

    @property
    def lines(self) -> range:
        return range(int(self.row["first_line"]), int(self.row["last_line"]) + 1)


def scope_mutants(source: str) -> list[tuple[str, ast.AST, list[Mutant]]]:
    """``(qualname, scope, mutants)`` for every scope of ``source`` that has mutants."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    owners, helpers = optimizer_owners(tree), called_in_loop(tree)
    lines = source.splitlines(True)
    found = []
    for qualname, scope in scopes(tree):
        helper = isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and scope.name in helpers
        context = Context(source, lines, scope, owners, tree)
        planted = [m for loop in training_loops(scope, owners, helper) for m in mutants(context, loop)]
        if planted:
            found.append((qualname, scope, planted))
    return found


def line_range(scope: ast.AST, source: str) -> tuple[int, int]:
    if isinstance(scope, ast.Module):
        return 1, max(1, source.count("\n") + 1)
    first = min([scope.lineno, *(d.lineno for d in scope.decorator_list)])
    return first, scope.end_lineno


def candidates(corpus: Path, repositories: list[dict[str, str]]) -> list[Scope]:
    """Every scope of the corpus with mutants, one per distinct text within a part."""
    found, seen = [], set()
    for repo in repositories:
        root = corpus / repo["part"] / repo["repository"].replace("/", "+")
        for file in sorted(root.rglob("*.py")):
            data = file.read_bytes()
            if not all(hint in data for hint in HINTS):
                continue
            source = data.decode("utf-8", errors="replace")
            for qualname, scope, planted in scope_mutants(source):
                first, last = line_range(scope, source)
                body = "".join(source.splitlines(True)[first - 1:last])
                digest = (repo["part"], hashlib.sha256(body.encode()).hexdigest())
                if digest in seen:
                    continue
                seen.add(digest)
                row = {"repository": repo["repository"], "part": repo["part"], "path": file.relative_to(root).as_posix(),
                       "function": qualname, "first_line": str(first), "last_line": str(last)}
                found.append(Scope(row, source, planted))
    return found


def capped(scopes_: list[Scope], per_repository: int = PER_REPOSITORY) -> list[Scope]:
    def rank(scope: Scope) -> str:
        key = f"{scope.row['path']}::{scope.row['function']}"
        return hashlib.sha256(key.encode()).hexdigest()

    kept, counts = [], Counter()
    for scope in sorted(scopes_, key=rank):
        if counts[scope.row["repository"]] < per_repository:
            counts[scope.row["repository"]] += 1
            kept.append(scope)
    return kept


def silent(scopes_: list[Scope], jobs: int | None = None) -> list[Scope]:
    """The scopes on which the linter reports nothing (and no GC000 in their file)."""
    files = {f"f{i}": (Path(s.row["path"]).name, s.source) for i, s in enumerate(scopes_)}
    found = lint_texts(files, jobs)
    kept = []
    for i, scope in enumerate(scopes_):
        findings = found[f"f{i}"]
        if any(f["code"] == "GC000" for f in findings):
            continue
        if not any(f["line"] in scope.lines for f in findings):
            kept.append(scope)
    return kept


def write_loops(scopes_: list[Scope], path: Path = LOOPS,
                keep: list[dict[str, str]] = ()) -> None:
    """Write the rows of ``scopes_`` and the rows in ``keep`` to ``path``, sorted."""
    rows = sorted([*keep, *(s.row for s in scopes_)],
                  key=lambda r: (r["part"], r["repository"].lower(), r["path"], int(r["first_line"])))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def read_loops(part: str, path: Path = LOOPS) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return [row for row in csv.DictReader(handle) if row["part"] == part]
