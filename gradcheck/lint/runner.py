"""Run the linter over paths: discovery, settings, cache, prefilter, then the rules in parallel.

The main process answers what it can from the cache; every other file is read, passed
through the cheap text prefilter, and only when it may hold a finding handed to the
rules, in a process pool when there is enough work to pay for one.
"""
from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gradcheck.lint.cache import CACHE_DIR, Cache, entry_key, finding_from_dict, finding_to_dict
from gradcheck.lint.config import CommandLine, ConfigFinder
from gradcheck.lint.document import Document, parse
from gradcheck.lint.files import discover
from gradcheck.lint.noqa_adding import add_noqa
from gradcheck.lint.reading import ReadError, missing, read_bounded
from gradcheck.lint.registry import all_rules
from gradcheck.lint.result import FileResult, Report
from gradcheck.lint.screening import Job, cells, screen, settle_bytes
from gradcheck.lint.settings import Overrides, Settings
from gradcheck.lint.writing import write_atomically

# below this much source to check, starting a pool costs more than it saves
PARALLEL_MIN_BYTES = 100_000
# below this much source to screen, screening here beats a round trip through a pool
SCREEN_IN_POOL_BYTES = 4_000_000


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
    add_noqa: bool = False
    command_line: CommandLine | None = None  # --config, --exclude, --extend-exclude


@dataclass(frozen=True)
class Mode:
    """What a worker does to each file besides linting it."""

    fixing: bool = False  # compute fixes (--fix, --diff)
    unsafe: bool = False  # --unsafe-fixes
    add_noqa: bool = False  # --add-noqa


def display_path(path: Path) -> str:
    """How output names ``path``: relative to the current directory when it is below it.

    Bytes of a file name that are not UTF-8 print as U+FFFD (as ruff prints them): every
    format can then be written, and the file itself is still read and written by its own
    name.
    """
    text = _relative(path)
    if not text.isascii():
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text


def _relative(path: Path) -> str:
    if path.is_absolute():
        try:
            return path.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return str(path)
    return path.as_posix()


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


def process(job: Job, mode: Mode, known: set[str]) -> FileResult:
    """Read, prefilter, lint (and fix, or add noqa comments to) one file. Runs in a worker."""
    from gradcheck.lint.checker import check_document, io_error
    from gradcheck.lint.fixes import fix_document, unified_diff

    screened = screen(job, known, mode.fixing)
    if isinstance(screened, FileResult):
        return screened
    job = screened
    document = parse(job.data, notebook=job.notebook)
    warnings: list[tuple[int, str]] = []

    depends: dict[str, str] = {}

    def lint(doc: Document) -> list:
        outcome = check_document(doc, job.display, job.codes, known)
        warnings[:] = outcome.warnings
        depends.update(outcome.depends)
        return outcome.findings

    if mode.add_noqa:
        return _cell_messages(add_noqa(job, document, lint, warnings))
    if not mode.fixing:
        result = FileResult(job.display, lint(document), warnings, cells(document))
        result.depends = depends
        return _cell_messages(result)
    fixed_doc, applied, remaining = fix_document(document, lint, unsafe=mode.unsafe)
    result = FileResult(job.display, remaining, warnings, cells(fixed_doc), fixed=applied)
    new_bytes = fixed_doc.to_bytes()
    if applied and new_bytes != job.data:
        before = job.data.decode(document.encoding)
        result.diff = unified_diff(before, new_bytes.decode(document.encoding), job.display)
        problem = write_atomically(Path(job.path), new_bytes) if job.write else None
        if problem is not None:
            # nothing was written: report the file as it stands, and why it was not fixed
            error = io_error(f"cannot write the {applied} fix{'es' * (applied != 1)}: {problem}; "
                             "the file is unchanged")
            result = FileResult(job.display, [error, *lint(document)], warnings, cells(document))
    if job.path == "-":
        result.output = new_bytes
    return _cell_messages(result)


def _process_chunk(chunk: list[Job], mode: Mode, known: set[str]) -> list[FileResult]:
    return [process(job, mode, known) for job in chunk]


def _crashed(job: Job, how: str) -> FileResult:
    from gradcheck.lint.checker import io_error

    return FileResult(job.display, [io_error(
        f"not checked: the parser crashed on this file (its worker process died: {how}); "
        "the file is probably nested too deeply for the parser. Simplify the deepest expression, "
        "exclude the file, or report it")])


def _size(job: Job) -> int:
    if job.data is not None:
        return len(job.data)
    try:
        return os.stat(job.path).st_size
    except OSError:
        return 0


def _run_jobs(jobs: list[Job], workers: int, mode: Mode, known: set[str]) -> list[FileResult]:
    """Process ``jobs``: screening here, or in a pool when there is much source; what
    screening leaves goes to a pool when it is enough for several cores, else to one
    child process (see ``workers.py``)."""
    sizes = {id(job): _size(job) for job in jobs}

    def size(job: Job) -> int:
        return sizes[id(job)] if job.data is None else len(job.data)

    parallel = workers > 1 and len(jobs) > 1
    if parallel and sum(map(size, jobs)) >= SCREEN_IN_POOL_BYTES:
        return _in_children(jobs, size, workers, mode, known)
    results: list[FileResult] = []
    remaining: list[Job] = []
    for job in jobs:
        screened = screen(job, known, mode.fixing)
        (results if isinstance(screened, FileResult) else remaining).append(screened)
    if not remaining:
        return results
    if not (parallel and len(remaining) > 1 and sum(map(size, remaining)) >= PARALLEL_MIN_BYTES):
        workers = 1
    return results + _in_children(remaining, size, workers, mode, known)


def _in_children(jobs: list[Job], size: Callable[[Job], int], workers: int, mode: Mode,
                 known: set[str]) -> list[FileResult]:
    """:func:`process` ``jobs`` in a pool of ``workers`` processes, or in one child."""
    import functools

    # NOTE: imported only when some file needs a child (multiprocessing costs ~15 ms)
    import lint_rules  # noqa: F401  (loaded before forking so workers share it)
    from gradcheck.lint import workers as pools

    work = functools.partial(_process_chunk, mode=mode, known=known)
    if workers > 1:
        return pools.run_in_pool(jobs, size, work, workers, _crashed)
    return pools.run_contained(jobs, work, _crashed)


def _from_cache(display: str, value: dict) -> FileResult | None:
    """The stored result, or None when a module its analysis read has changed since."""
    if not all(_digest(path) == digest for path, digest in value.get("depends", {}).items()):
        return None
    return FileResult(
        display,
        [finding_from_dict(f) for f in value["findings"]],
        [tuple(w) for w in value["warnings"]],  # type: ignore[misc]
        [tuple(c) for c in value["cells"]] if value["cells"] is not None else None,  # type: ignore[misc]
    )


def _digest(path: str) -> str | None:
    import hashlib

    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _to_cache(result: FileResult) -> dict:
    return {
        "findings": [finding_to_dict(f) for f in result.findings],
        "warnings": [list(w) for w in result.warnings],
        "cells": None if result.cells is None else [list(c) for c in result.cells],
        "depends": dict(sorted(result.depends.items())),
    }


def _needs_work(cached: FileResult, mode: Mode) -> bool:
    """Whether a cached result leaves something for this run to do to the file."""
    from gradcheck.lint.fixes import applicable
    from gradcheck.lint.registry import IO_ERROR_CODE

    if mode.add_noqa:
        return any(f.code != IO_ERROR_CODE for f in cached.findings)
    return mode.fixing and any(applicable(f, mode.unsafe) for f in cached.findings)


def lint_paths(options: LintOptions) -> Report:
    """Lint ``options.paths`` and return a :class:`Report` (raises ConfigError, SelectorError).

    >>> report = lint_paths(LintOptions(paths=["no_such_dir_xyz"], use_cache=False))
    >>> report.results[0].findings[0].code
    'GC000'
    """
    from gradcheck.lint.checker import io_error

    rules = all_rules()
    known = {rule.code for rule in rules}
    finder = ConfigFinder(Path.cwd(), options.command_line)
    settings = Settings(rules, options.overrides, finder)
    mode = Mode(options.fix or options.diff, options.unsafe_fixes, options.add_noqa)
    results: list[FileResult] = []
    pending: list[Job] = []
    cache = None
    if options.use_cache:
        cache = Cache(options.cache_dir or finder.project_root(Path.cwd()) / CACHE_DIR)
    keys: dict[str, str] = {}

    if options.stdin_data is not None:
        name = options.stdin_filename or "-"
        codes = settings.codes_for(Path(options.stdin_filename or "stdin.py"))
        pending.append(Job("-", name, codes, options.stdin_data, name.endswith(".ipynb"),
                            False, True))
    found = discover([Path(p) for p in options.paths if p != "-"], finder)
    for absent in found.missing:
        results.append(FileResult(display_path(absent), [io_error(missing(str(absent)))]))
    for path, message in found.errors:
        results.append(FileResult(display_path(path), [io_error(message)]))
    write = (options.fix and not options.diff) or options.add_noqa
    for path in found.files:
        display = display_path(path)
        codes = settings.codes_for(path)
        notebook = path.suffix == ".ipynb"
        explicit = path in found.explicit
        if cache is None:
            pending.append(Job(str(path), display, codes, None, notebook, write, explicit))
            continue
        try:
            data = read_bounded(str(path))
        except ReadError as error:
            results.append(FileResult(display, [io_error(str(error))]))
            continue
        key = entry_key(data, notebook, codes, explicit, _import_root(path))
        hit = cache.get(key)
        cached = _from_cache(display, hit) if hit is not None else None
        if cached is not None:
            if not _needs_work(cached, mode):
                results.append(cached)
                continue
        job = Job(str(path), display, codes, data, notebook, write, explicit)
        settled = settle_bytes(job, data, known)  # here: the bytes are already read
        if settled is not None:
            results.append(settled)
            cache.put(key, _to_cache(settled))
            continue
        pending.append(job)
        keys[display] = key
    workers = options.jobs or os.cpu_count() or 1
    for result in _run_jobs(pending, workers, mode, known):
        results.append(result)
        key = keys.get(result.display)
        if cache is not None and key is not None and not result.fixed and not result.noqa_added:
            cache.put(key, _to_cache(result))
    if cache is not None:
        cache.save()
    results.sort(key=lambda r: r.display)
    return Report(results)


def _import_root(path: Path) -> str:
    """The current directory when it holds ``path``: the analysis resolves the file's
    imports from there too (``lint_rules.project``), so its cached result depends on it."""
    from lint_rules.project import Project

    cwd = Path.cwd()
    return str(cwd) if cwd in Project.roots_of(path) else ""
