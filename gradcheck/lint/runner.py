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
from gradcheck.lint.config import ConfigFinder
from gradcheck.lint.document import Document, parse
from gradcheck.lint.files import discover
from gradcheck.lint.registry import all_rules
from gradcheck.lint.result import FileResult, Report
from gradcheck.lint.screening import Job, cells, screen, settle_bytes
from gradcheck.lint.settings import Overrides, Settings

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


def _display(path: Path) -> str:
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


def process(job: Job, fixing: bool, unsafe: bool, known: set[str]) -> FileResult:
    """Read, prefilter, lint (and, when ``fixing``, fix) one file. Runs in a worker."""
    from gradcheck.lint.checker import check_document, io_error
    from gradcheck.lint.fixes import fix_document, unified_diff

    screened = screen(job, known, fixing)
    if isinstance(screened, FileResult):
        return screened
    job = screened
    document = parse(job.data, notebook=job.notebook)
    warnings: list[tuple[int, str]] = []

    def lint(doc: Document) -> list:
        outcome = check_document(doc, job.display, job.codes, known)
        warnings[:] = outcome.warnings
        return outcome.findings

    if not fixing:
        return _cell_messages(FileResult(job.display, lint(document), warnings, cells(document)))
    fixed_doc, applied, remaining = fix_document(document, lint, unsafe=unsafe)
    result = FileResult(job.display, remaining, warnings, cells(fixed_doc), fixed=applied)
    new_bytes = fixed_doc.to_bytes()
    if applied and new_bytes != job.data:
        before = job.data.decode("utf-8")
        result.diff = unified_diff(before, new_bytes.decode("utf-8"), job.display)
        problem = write_atomically(Path(job.path), new_bytes) if job.write else None
        if problem is not None:
            # nothing was written: report the file as it stands, and why it was not fixed
            error = io_error(f"cannot write the {applied} fix{'es' * (applied != 1)}: {problem}; "
                             "the file is unchanged")
            result = FileResult(job.display, [error, *lint(document)], warnings, cells(document))
    if job.path == "-":
        result.output = new_bytes
    return _cell_messages(result)


def write_atomically(path: Path, data: bytes) -> str | None:
    """Replace ``path``'s bytes with ``data`` through a temporary file and a rename, so a
    reader never sees half a file; None on success, else why it failed.

    A read-only file is left alone (a rename would replace it despite its mode, and
    root's writes ignore the mode altogether).
    """
    import stat
    import tempfile

    target = Path(os.path.realpath(path))  # through a symlink, not over it
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError as error:
        return error.strerror or str(error)
    if not mode & stat.S_IWUSR or not os.access(target, os.W_OK):
        return f"{path} is read-only (make it writable, or leave out --fix)"
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                             suffix=".gradcheck-fix")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except OSError as error:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        return f"{error.strerror or error} ({target.parent})"
    return None


def _process_chunk(chunk: list[Job], fixing: bool, unsafe: bool, known: set[str]) -> list[FileResult]:
    return [process(job, fixing, unsafe, known) for job in chunk]


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


def _run_jobs(jobs: list[Job], workers: int, fixing: bool, unsafe: bool, known: set[str]) -> list[FileResult]:
    """Process ``jobs``: screening here, or in a pool when there is much source; what
    screening leaves goes to a pool when it is enough for several cores, else to one
    child process (see ``workers.py``)."""
    sizes = {id(job): _size(job) for job in jobs}

    def size(job: Job) -> int:
        return sizes[id(job)] if job.data is None else len(job.data)

    parallel = workers > 1 and len(jobs) > 1
    if parallel and sum(map(size, jobs)) >= SCREEN_IN_POOL_BYTES:
        return _in_children(jobs, size, workers, fixing, unsafe, known)
    results: list[FileResult] = []
    remaining: list[Job] = []
    for job in jobs:
        screened = screen(job, known, fixing)
        (results if isinstance(screened, FileResult) else remaining).append(screened)
    if not remaining:
        return results
    if not (parallel and len(remaining) > 1 and sum(map(size, remaining)) >= PARALLEL_MIN_BYTES):
        workers = 1
    return results + _in_children(remaining, size, workers, fixing, unsafe, known)


def _in_children(jobs: list[Job], size: Callable[[Job], int], workers: int, fixing: bool,
                 unsafe: bool, known: set[str]) -> list[FileResult]:
    """:func:`process` ``jobs`` in a pool of ``workers`` processes, or in one child."""
    import functools

    # NOTE: imported only when some file needs a child (multiprocessing costs ~15 ms)
    import lint_rules  # noqa: F401  (loaded before forking so workers share it)
    from gradcheck.lint import workers as pools

    work = functools.partial(_process_chunk, fixing=fixing, unsafe=unsafe, known=known)
    if workers > 1:
        return pools.run_in_pool(jobs, size, work, workers, _crashed)
    return pools.run_contained(jobs, work, _crashed)


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
    for missing in found.missing:
        results.append(FileResult(_display(missing), [io_error("no such file or directory")]))
    write = options.fix and not options.diff
    for path in found.files:
        display = _display(path)
        codes = settings.codes_for(path)
        notebook = path.suffix == ".ipynb"
        explicit = path in found.explicit
        if cache is None:
            pending.append(Job(str(path), display, codes, None, notebook, write, explicit))
            continue
        try:
            with open(path, "rb") as handle:
                data = handle.read()
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
        job = Job(str(path), display, codes, data, notebook, write, explicit)
        settled = settle_bytes(job, data, known)  # here: the bytes are already read
        if settled is not None:
            results.append(settled)
            cache.put(key, _to_cache(settled))
            continue
        pending.append(job)
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
