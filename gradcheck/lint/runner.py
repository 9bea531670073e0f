"""Run the linter over paths: discovery, settings, cache, prefilter, then the rules in parallel.

The main process answers what it can from the cache; every other file is read, passed
through the cheap text prefilter, and only when it may hold a finding handed to the
libcst-based rules, in a process pool when there is enough work to pay for one.
"""
from __future__ import annotations

import dataclasses
import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from gradcheck.lint.cache import CACHE_DIR, Cache, entry_key, finding_from_dict, finding_to_dict
from gradcheck.lint.config import ConfigFinder
from gradcheck.lint.document import Document, DocumentError, parse
from gradcheck.lint.files import discover
from gradcheck.lint.noqa import scan, warnings_for
from gradcheck.lint.registry import all_rules
from gradcheck.lint.result import FileResult, Report
from gradcheck.lint.settings import Overrides, Settings

PARALLEL_MIN_BYTES = 200_000  # below this much source to parse, process start-up costs more


@dataclass
class LintOptions:
    """Everything a lint run needs; the CLI fills it from its options."""

    paths: list[str] = field(default_factory=lambda: ["."])
    overrides: Overrides = field(default_factory=Overrides)
    fix: bool = False
    diff: bool = False
    unsafe_fixes: bool = False
    use_cache: bool = True
    jobs: int | None = None
    stdin_data: bytes | None = None
    stdin_filename: str | None = None
    cache_dir: Path | None = None


@dataclass(frozen=True)
class _Job:
    path: str
    display: str
    codes: frozenset[str]
    data: bytes | None  # None: the worker reads the file itself
    notebook: bool
    write: bool  # write fixes back to ``path`` (False for stdin and --diff)
    explicit: bool = False  # named on the command line or stdin: syntax errors always count


def _display(path: Path) -> str:
    if path.is_absolute():
        try:
            return path.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return str(path)
    return path.as_posix()


def _cells(document: Document) -> list[tuple[int, int]] | None:
    if document.notebook is None:
        return None
    return [(cell.first_line, cell.number) for cell in document.notebook.cells]


_LINE_REFERENCE = re.compile(r"\bline (\d+)\b")


def _cell_messages(result: FileResult) -> FileResult:
    """In a notebook, rewrite "line N" of the whole program as "cell C, line L"."""
    if not result.cells:
        return result

    def cell_line(match: re.Match[str]) -> str:
        cell, line = result.locate(int(match.group(1)))
        return f"cell {cell}, line {line}"

    result.findings = [
        dataclasses.replace(f, message=_LINE_REFERENCE.sub(cell_line, f.message))
        for f in result.findings
    ]
    return result


def _quick(job: _Job, document: Document, known: set[str]) -> FileResult | None:
    """A result reached without the rules (the prefilter says no finding); else None."""
    from gradcheck.lint.checker import syntax_errors
    from lint_rules.prefilter import could_have_findings

    program = document.program
    if job.codes and could_have_findings(program):
        return None
    # NOTE: only a file the user named is parsed here, as ruff reports its syntax errors;
    # a directory walk keeps the text shortcut (a skipped file cannot hold a finding)
    findings = syntax_errors(program, job.display) if job.explicit else []
    # only unknown-code warnings are left to find; they need a "GC..." code in a comment
    has_code = "GC" in program or "gc" in program
    warnings = warnings_for(scan(program), known, program) if has_code else []
    return FileResult(job.display, findings, warnings, cells=_cells(document))


def process(job: _Job, fixing: bool, unsafe: bool, known: set[str]) -> FileResult:
    """Read, prefilter, lint (and, when ``fixing``, fix) one file. Runs in a worker."""
    from gradcheck.lint.checker import check_document, io_error
    from gradcheck.lint.fixes import fix_document, unified_diff

    if job.data is None:
        try:
            job = dataclasses.replace(job, data=Path(job.path).read_bytes())
        except OSError as error:
            return FileResult(job.display, [io_error(f"cannot read: {error.strerror}")])
    try:
        document = parse(job.data, notebook=job.notebook)
    except DocumentError as error:
        quick: FileResult | None = FileResult(job.display, [io_error(str(error))])
    else:
        quick = _quick(job, document, known)
    if quick is not None:
        if fixing and job.path == "-":
            quick.output = job.data  # stdin with --fix echoes the text it left alone
        return quick
    warnings: list[tuple[int, str]] = []

    def lint(doc: Document) -> list:
        outcome = check_document(doc, job.display, job.codes, known)
        warnings[:] = outcome.warnings
        return outcome.findings

    if not fixing:
        return _cell_messages(FileResult(job.display, lint(document), warnings, _cells(document)))
    fixed_doc, applied, remaining = fix_document(document, lint, unsafe=unsafe)
    result = FileResult(job.display, remaining, warnings, _cells(fixed_doc), fixed=applied)
    new_bytes = fixed_doc.to_bytes()
    if applied and new_bytes != job.data:
        before = job.data.decode("utf-8")
        result.diff = unified_diff(before, new_bytes.decode("utf-8"), job.display)
        if job.write:
            Path(job.path).write_bytes(new_bytes)
    if job.path == "-":
        result.output = new_bytes
    return _cell_messages(result)


def _process_chunk(chunk: list[_Job], fixing: bool, unsafe: bool, known: set[str]) -> list[FileResult]:
    return [process(job, fixing, unsafe, known) for job in chunk]


def _size(job: _Job) -> int:
    if job.data is not None:
        return len(job.data)
    try:
        return os.stat(job.path).st_size
    except OSError:
        return 0


def _run_jobs(jobs: list[_Job], workers: int, fixing: bool, unsafe: bool, known: set[str]) -> list[FileResult]:
    """Process ``jobs``, in a process pool when there is enough source to pay for one."""
    import lint_rules  # noqa: F401  (loaded before forking so workers share it)

    sizes = {id(job): _size(job) for job in jobs}
    jobs = sorted(jobs, key=lambda job: sizes[id(job)], reverse=True)
    if workers <= 1 or len(jobs) < 2 or sum(sizes.values()) < PARALLEL_MIN_BYTES:
        return _process_chunk(jobs, fixing, unsafe, known)
    import multiprocessing

    # NOTE: round-robin chunks over the size-sorted list give every chunk a share of the
    # large files, so no worker is left with all of them
    count = min(len(jobs), workers * 4)
    chunks = [jobs[i::count] for i in range(count)]
    method = "fork" if sys.platform.startswith("linux") else None
    context = multiprocessing.get_context(method)
    results: list[FileResult] = []
    with ProcessPoolExecutor(max_workers=min(workers, count), mp_context=context) as pool:
        futures = [pool.submit(_process_chunk, chunk, fixing, unsafe, known) for chunk in chunks]
        for future in futures:
            results.extend(future.result())
    return results


def _from_cache(display: str, value: dict) -> FileResult:
    return FileResult(
        display,
        [finding_from_dict(f) for f in value["findings"]],
        [tuple(w) for w in value["warnings"]],  # type: ignore[misc]
        [tuple(c) for c in value["cells"]] if value["cells"] is not None else None,  # type: ignore[misc]
    )


def _to_cache(result: FileResult) -> dict:
    return {
        "findings": [finding_to_dict(f) for f in result.findings],
        "warnings": [list(w) for w in result.warnings],
        "cells": None if result.cells is None else [list(c) for c in result.cells],
    }


def lint_paths(options: LintOptions) -> Report:
    """Lint ``options.paths`` and return a :class:`Report` (raises ConfigError, SelectorError).

    >>> report = lint_paths(LintOptions(paths=["no_such_dir_xyz"], use_cache=False))
    >>> report.results[0].findings[0].code
    'GC000'
    """
    from gradcheck.lint.checker import io_error
    from gradcheck.lint.fixes import applicable

    rules = all_rules()
    known = {rule.code for rule in rules}
    finder = ConfigFinder(Path.cwd())
    settings = Settings(rules, options.overrides, finder)
    fixing = options.fix or options.diff
    results: list[FileResult] = []
    pending: list[_Job] = []
    cache = None
    if options.use_cache:
        cache = Cache(options.cache_dir or finder.project_root(Path.cwd()) / CACHE_DIR)
    keys: dict[str, str] = {}

    if options.stdin_data is not None:
        name = options.stdin_filename or "-"
        codes = settings.codes_for(Path(options.stdin_filename or "stdin.py"))
        pending.append(_Job("-", name, codes, options.stdin_data, name.endswith(".ipynb"),
                            False, True))
    found = discover([Path(p) for p in options.paths if p != "-"], finder)
    for missing in found.missing:
        results.append(FileResult(_display(missing), [io_error("no such file or directory")]))
    write = options.fix and not options.diff
    for path in found.files:
        display = _display(path)
        codes = settings.codes_for(path)
        notebook = path.suffix == ".ipynb"
        explicit = path in found.explicit
        if cache is None:
            pending.append(_Job(str(path), display, codes, None, notebook, write, explicit))
            continue
        try:
            data = path.read_bytes()
        except OSError as error:
            results.append(FileResult(display, [io_error(f"cannot read: {error.strerror}")]))
            continue
        key = entry_key(data, notebook, codes, explicit)
        hit = cache.get(key)
        if hit is not None:
            cached = _from_cache(display, hit)
            if not fixing or not any(applicable(f, options.unsafe_fixes) for f in cached.findings):
                results.append(cached)
                continue
        pending.append(_Job(str(path), display, codes, data, notebook, write, explicit))
        keys[display] = key
    workers = options.jobs or os.cpu_count() or 1
    for result in _run_jobs(pending, workers, fixing, options.unsafe_fixes, known):
        results.append(result)
        key = keys.get(result.display)
        if cache is not None and key is not None and not result.fixed:
            cache.put(key, _to_cache(result))
    if cache is not None:
        cache.save()
    results.sort(key=lambda r: r.display)
    return Report(results)
