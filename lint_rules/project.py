"""The project around a module: where its imports lead, and what is defined there.

Training code is spread over modules: a trainer class in ``engine.py``, a helper that resets
gradients in ``utils.py``, a meter in ``metrics.py``, an optimizer wrapper in ``optim.py``. The
flow analysis walks a call into a function of another module of the project exactly as it
walks a call into one of the same module (``effects.py``), so it needs that function's tree
and the index of its module. ``Project`` finds them: it resolves an import the way Python
would from a script or a package of the tree (the importing file's directory, the roots of
its package, the repository's root), reads and indexes the module once, and remembers it for
every file of the run. What it cannot find (a third-party package, a module too large, one
that does not parse) is unknown, and calls into it stay what they were: no events.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = (root / "helpers.py").write_text("def reset(opt):\\n    opt.zero_grad()\\n")
>>> project = Project.around(root / "train.py")
>>> function, module = project.definition("helpers", "reset")
>>> function.name, module.path.name
('reset', 'helpers.py')
"""
from __future__ import annotations

import ast
import functools
import hashlib
import io
import re
import tokenize
import warnings
from dataclasses import dataclass, field
from pathlib import Path

MAX_MODULE_BYTES = 2_000_000  # a generated module this large is not read for its helpers
MAX_MODULES = 64  # modules one project loads in a process, beyond the files being linted
MAX_READS = 12  # modules one analysed file may have read for it
MAX_PROJECTS = 16  # projects remembered by one process
_PROJECTS: dict[tuple[Path, ...], "Project"] = {}
_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
# What a module must mention for a caller to learn anything from it: a gradient event, an
# optimizer, or a method that adds to an attribute of its object (a meter's `update`).
_NEXT_TOP_LEVEL = re.compile(rb"^[^\s#)\]}]", re.MULTILINE)
_DEFINITION = re.compile(rb"^(?:async\s+)?(?:def|class)\s+(\w+)", re.MULTILINE)
_RELEVANT = re.compile(rb"zero_grad|backward\s*\(|\.grad\b|\.step\s*\(|[Oo]ptim|self\.[\w.]+\s*\+=")
# `from .train import Trainer` (or `*`, or a parenthesised list) in a package's __init__.py
_REEXPORT = re.compile(rb"^from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.MULTILINE)
MAX_REEXPORT_HOPS = 2  # `pkg/__init__.py` -> `pkg/utils/__init__.py` -> `pkg/utils/train.py`


@dataclass
class LoadedModule:
    """One module of the project: its text, tree and index (``summaries.ModuleIndex``)."""

    path: Path
    digest: str  # of its bytes: a cached result that relied on this module is checked by it
    index: object | None = None  # None when the module holds nothing the analysis can use
    definitions: dict[str, ast.AST] = field(default_factory=dict)  # top-level functions, classes


class Project:
    """The modules around one linted file, loaded on first use."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self._loaded: dict[Path, LoadedModule | None] = {}
        self.used: dict[str, str] = {}  # modules whose definitions the current analysis used
        self.reads = 0  # modules read for the current analysis
        self._names: dict[Path, frozenset[str]] = {}  # see _relevant_definitions
        self._every_name: dict[Path, tuple[frozenset[str], str]] = {}  # see _all_definitions
        self._exports: dict[Path, list[tuple[str, int, str, str]]] = {}  # see _reexports
        self._found: dict[tuple, Path | None] = {}  # (module, importer, level) -> its file

    @classmethod
    def around(cls, path: Path | str) -> Project:
        """The project seen from ``path``: its directory, the directory above its top-level
        package, the nearest repository root above it, and the current directory when it
        holds ``path``. Files with the same roots share
        one project, so each module of it is read once per process."""
        roots = cls.roots_of(path)
        key = tuple(roots)
        if key not in _PROJECTS:
            if len(_PROJECTS) >= MAX_PROJECTS:
                _PROJECTS.clear()
            _PROJECTS[key] = cls(roots)
        return _PROJECTS[key]

    @staticmethod
    def roots_of(path: Path | str) -> list[Path]:
        """The directories ``path``'s imports are resolved from (see ``around``)."""
        return list(_roots_of_directory(Path(path).resolve().parent, Path.cwd()))

    def definition(self, module: str, name: str, importer: Path | None = None,
                   level: int = 0, hops: int = 0) -> tuple[ast.AST, LoadedModule] | None:
        """The function or class ``name`` of module ``module`` (``from module import name``),
        and its loaded module; None when either is not in the project. A package that
        re-exports ``name`` from one of its modules (``from .train import Trainer`` in its
        ``__init__.py``) leads to that module's definition."""
        path = self._find(module, importer, level)
        if path is None:
            return None
        if not self._defines(path, name):
            if hops >= MAX_REEXPORT_HOPS:
                return None
            for source, source_level, original in self._reexports(path, name):
                found = self.definition(source, original, path, source_level, hops + 1)
                if found is not None:
                    return found
            return None  # `torch.zeros(...)`: nothing to parse a whole module for
        loaded = self.module(module, importer, level)
        if loaded is None:
            return None
        found = loaded.definitions.get(name)
        if found is None:
            # `from pkg import mod` then `mod.fn(...)`: handled by the caller as a module
            return None
        self.used[str(loaded.path)] = loaded.digest
        return found, loaded

    def _reexports(self, path: Path, name: str) -> list[tuple[str, int, str]]:
        """Where a package's ``__init__.py`` imports ``name`` from: (module, level, name
        there) for each ``from .x import name [as alias]`` naming it, then each ``*`` import."""
        if path.name != "__init__.py":
            return []
        imports = self._exports.get(path)
        if imports is None:
            self._exports[path] = imports = _package_imports(path)
        named = [(module, level, original) for module, level, original, exposed in imports
                 if exposed == name]
        starred = [(module, level, name) for module, level, _, exposed in imports if exposed == "*"]
        return named + starred

    def may_define_events(self, module: str, name: str, importer: Path | None, level: int,
                          hops: int = 0) -> bool:
        """Whether ``module`` is one of the project's and its ``name`` (defined there, or
        re-exported from a module that defines it) may hold a gradient event, by its text:
        what a caller that cannot read it learns is then unknown. A third-party module is
        not the project's."""
        path = self._find(module, importer, level)
        if path is None:
            return False
        return self._defines(path, name) or hops < MAX_REEXPORT_HOPS and any(
            self.may_define_events(source, original, path, source_level, hops + 1)
            for source, source_level, original in self._reexports(path, name))

    def defines_plainly(self, module: str, name: str, importer: Path | None, level: int,
                        hops: int = 0) -> bool:
        """Whether ``module`` is one of the project's and defines ``name`` (or re-exports it
        from a module that does) in text that mentions no gradient, step or optimizer: a
        course's NumPy ``SGD``, which no torch optimizer class can be (deriving from one
        names it)."""
        path = self._find(module, importer, level)
        if path is None:
            return False
        names, digest = self._all_definitions(path)
        if name in names:
            if self._defines(path, name):
                return False
            self.used[str(path)] = digest  # a cached verdict rests on this module's text
            return True
        return hops < MAX_REEXPORT_HOPS and any(
            self.defines_plainly(source, original, path, source_level, hops + 1)
            for source, source_level, original in self._reexports(path, name))

    def _all_definitions(self, path: Path) -> tuple[frozenset[str], str]:
        """Every top-level function and class name of a module, by its text, and the
        digest of that text."""
        found = self._every_name.get(path)
        if found is None:
            data = _module_bytes(path)
            names = frozenset(m.group(1).decode("ascii", "replace") for m in _DEFINITION.finditer(data))
            self._every_name[path] = found = (names, hashlib.sha256(data).hexdigest())
        return found

    def module(self, module: str, importer: Path | None = None, level: int = 0) -> LoadedModule | None:
        path = self._find(module, importer, level)
        if path is None:
            return None
        if path not in self._loaded:
            if self.reads >= MAX_READS:
                return None  # this file's analysis has read enough of the project
            self.reads += 1
            self._loaded[path] = None  # an import cycle finds nothing while it loads
            self._loaded[path] = self._load(path) if len(self._loaded) <= MAX_MODULES else None
        return self._loaded[path]

    def _defines(self, path: Path, name: str) -> bool:
        """Whether the module's text has ``def name`` or ``class name`` at its top level, and
        mentions something a caller could learn from (read once; parsed only if so)."""
        return name in self._relevant_definitions(path)

    def _relevant_definitions(self, path: Path) -> frozenset[str]:
        """The top-level functions and classes of a module whose own text (up to the next
        line at the margin) is relevant: `F.cross_entropy(...)` is no reason to parse all
        of torch.nn.functional. Found once per module, since every called name asks."""
        names = self._names.get(path)
        if names is not None:
            return names
        data = _module_bytes(path)
        found: set[str] = set()
        if _RELEVANT.search(data):
            for match in _DEFINITION.finditer(data):
                end = _NEXT_TOP_LEVEL.search(data, match.end())
                if _RELEVANT.search(data, match.start(), end.start() if end else len(data)):
                    found.add(match.group(1).decode("ascii", "replace"))
        self._names[path] = names = frozenset(found)
        return names

    def _find(self, module: str, importer: Path | None, level: int) -> Path | None:
        key = (module, str(importer) if level else "", level)
        if key not in self._found:  # a module's names are asked for at every call to them
            self._found[key] = self._search(module, importer, level)
        return self._found[key]

    def _search(self, module: str, importer: Path | None, level: int) -> Path | None:
        parts = [p for p in module.split(".") if p]
        if level:
            if importer is None:
                return None
            base = Path(importer).resolve().parent
            for _ in range(level - 1):
                base = base.parent
            bases = [base]
        else:
            bases = self.roots
        for base in bases:
            target = base.joinpath(*parts) if parts else base
            for candidate in (target.with_suffix(".py") if parts else None, target / "__init__.py"):
                if candidate is not None and candidate.is_file():
                    return candidate
        return None

    def _load(self, path: Path) -> LoadedModule | None:
        from lint_rules.narrowing import hollow
        from lint_rules.source import SourceText
        from lint_rules.summaries import ModuleIndex

        try:
            if path.stat().st_size > MAX_MODULE_BYTES:
                return None
            data = path.read_bytes()
        except OSError:
            return None
        loaded = LoadedModule(path, hashlib.sha256(data).hexdigest())
        if not _RELEVANT.search(data):
            return loaded  # nothing a caller could learn from it
        try:
            # the encoding it declares (PEP 263), as Python reads it
            text = data.decode(tokenize.detect_encoding(io.BytesIO(data).readline)[0])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(text, str(path))
        except (UnicodeDecodeError, LookupError, SyntaxError, ValueError, RecursionError, MemoryError):
            return loaded
        hollow(tree, text)
        # NOTE: its own imports are not followed: one module away covers the helpers, meters
        # and trainers a script imports, and following them further would read whole trees
        loaded.index = ModuleIndex(tree, SourceText(text), path=path, finder=self)
        loaded.definitions = {node.name: node for node in tree.body
                              if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        return loaded


@functools.lru_cache(maxsize=4096)
def _module_bytes(path: Path) -> bytes:
    """A module's text, or nothing for one too large to read or unreadable."""
    try:
        return path.read_bytes() if path.stat().st_size <= MAX_MODULE_BYTES else b""
    except OSError:
        return b""


def _roots_of_directory(here: Path, cwd: Path) -> tuple[Path, ...]:
    """See ``Project.around``; asked for every file of a run, so remembered per directory."""
    roots = [here]
    top = here
    while (top / "__init__.py").exists() and top.parent != top:
        top = top.parent
    roots.append(top)
    marked = None
    for parent in [here, *here.parents][:12]:
        if any((parent / marker).exists() for marker in _MARKERS):
            marked = parent
            roots.append(parent)
            break
    # `gradcheck lint .` run at a checkout's top, as `python -m pkg.train` would be: its
    # top-level packages import each other from there, marker or not. Not a directory
    # above the file's own project (another project's modules are not this one's).
    if cwd in here.parents and (marked is None or marked == cwd or marked in cwd.parents):
        roots.append(cwd)
    return tuple(dict.fromkeys(roots))


def _package_imports(path: Path) -> list[tuple[str, int, str, str]]:
    """(module, level, name there, name exposed) for each ``from ... import`` of a package's
    ``__init__.py`` (``*`` exposes ``*``), read from its text without parsing it."""
    found = []
    for match in _REEXPORT.finditer(_module_bytes(path)):
        dots, module, listed = (g.decode("ascii", "replace") for g in match.groups())
        for item in listed.strip("() \t\r\n").replace("\\", " ").split(","):
            words = item.split()
            if words:
                exposed = words[2] if len(words) == 3 and words[1] == "as" else words[0]
                found.append((module, len(dots), words[0], exposed))
    return found
