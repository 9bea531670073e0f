"""What a lint run produces: one :class:`FileResult` per file, gathered in a :class:`Report`."""
from __future__ import annotations

from dataclasses import dataclass, field

from gradcheck.lint.registry import IO_ERROR_CODE
from lint_rules.finding import Finding


@dataclass
class FileResult:
    """The findings of one file, plus what ``--fix`` / ``--diff`` did to it."""

    display: str
    findings: list[Finding] = field(default_factory=list)
    warnings: list[tuple[int, str]] = field(default_factory=list)
    cells: list[tuple[int, int]] | None = None  # notebooks: (first program line, cell number)
    fixed: int = 0
    diff: str = ""
    output: bytes | None = None  # stdin with --fix: the fixed text
    noqa_added: int = 0  # --add-noqa: the lines that got a comment
    depends: dict[str, str] = field(default_factory=dict)  # other modules read -> digests

    def locate(self, line: int) -> tuple[int | None, int]:
        """``(cell number or None, line)`` for a program line.

        >>> FileResult("n.ipynb", cells=[(1, 1), (4, 2)]).locate(5)
        (2, 2)
        """
        if not self.cells:
            return None, line
        first, number = self.cells[0]
        for start, cell in self.cells:
            if start <= line:
                first, number = start, cell
        return number, line - first + 1

    @property
    def has_error(self) -> bool:
        """Whether the file could not be checked (a GC000 finding)."""
        return any(f.code == IO_ERROR_CODE for f in self.findings)


@dataclass
class Report:
    """Every file's result, sorted by path."""

    results: list[FileResult]

    @property
    def findings(self) -> list[tuple[FileResult, Finding]]:
        """``(file, finding)`` pairs in output order."""
        return [(result, finding) for result in self.results for finding in result.findings]

    @property
    def has_errors(self) -> bool:
        """Whether some file could not be checked."""
        return any(result.has_error for result in self.results)

    @property
    def fixed(self) -> int:
        """How many fixes were applied (or shown, with ``--diff``)."""
        return sum(result.fixed for result in self.results)

    @property
    def noqa_added(self) -> int:
        """How many lines ``--add-noqa`` gave a comment."""
        return sum(result.noqa_added for result in self.results)
