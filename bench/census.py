"""API census: which parts of torch real training code uses, and which the engine covers.

Scans directories of Python code (one folder per repository, ``owner+name/``) for every
``torch.*`` name (``torch.nn.*``, ``torch.nn.functional.*``, ``torch.optim.*``,
``torch.utils.data.*`` included) and every Tensor method or attribute used. Names are
resolved through the file's imports with ``ast``: ``import torch.nn.functional as F`` makes
``F.relu`` mean ``torch.nn.functional.relu``, ``from torch.optim import Adam`` makes ``Adam``
mean ``torch.optim.Adam``. An attribute of anything else (``x.view``, ``out.sum()``) counts as
a Tensor method only when ``torch.Tensor`` really has that attribute; attributes of imported
modules (``np.sum``, ``os.path``) never do.

Each name is weighted by the number of repositories using it. A name is covered when it
resolves on ``gradcheck.ref`` (``gradcheck.ref.Tensor`` for methods) to something that is not
a stand-in raising NotImplementedError; names that real torch (this one) lacks are listed
apart and left out of the denominator.

    python bench/census.py CORPUS [CORPUS ...]          # ranked table, coverage
    python bench/census.py CORPUS --missing             # only what the engine lacks
    python bench/census.py CORPUS --markdown --top 40   # the table in docs/engine.md
    python bench/census.py extract --mirrors DIR        # snapshots -> bench/_corpus (manifest)

A CORPUS folder holds ``owner+name/`` trees of .py files (or is one such tree).
"""
from __future__ import annotations

import argparse
import ast
import csv
import importlib
import json
import subprocess
import sys
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

MANIFEST = Path(__file__).with_name("census_repos.csv")
DEFAULT_OUT = Path(__file__).with_name("_corpus")
TENSOR = "Tensor."
# Tensor attributes that builtins have too (dict.values, list.index, str.split, set.add, ...):
# they count only on a receiver that is evidently a tensor (``torch.cat(xs).split(2)``).
AMBIGUOUS = frozenset(name for kind in (dict, list, str, set, tuple, bytes, int, float)
                      for name in dir(kind) if not name.startswith("__"))


# ----------------------------------------------------------------------------- scanning
class _Uses(ast.NodeVisitor):
    """The torch names and Tensor attributes one module uses."""

    def __init__(self, tensor_attrs: frozenset) -> None:
        self.tensor_attrs = tensor_attrs
        self.aliases: dict[str, str] = {}     # local name -> qualified torch name
        self.modules: set[str] = set()        # local names bound to any imported module
        self.names: Counter = Counter()

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            self.modules.add(local)
            if alias.name == "torch" or alias.name.startswith("torch."):
                qualified = alias.name if alias.asname else "torch"
                self.aliases[local] = qualified
                self.names[alias.name] += 1

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or not (module == "torch" or module.startswith("torch.")):
            for alias in node.names:
                self.modules.discard(alias.asname or alias.name)
            return
        for alias in node.names:
            if alias.name == "*":
                continue
            qualified = f"{module}.{alias.name}"
            self.aliases[alias.asname or alias.name] = qualified
            self.names[qualified] += 1

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = _chain(node)
        if chain is not None and chain[0] in self.aliases:
            self.names[_qualify(self.aliases[chain[0]], chain[1:])] += 1
            return  # the inner attributes are part of this name
        if chain is not None and chain[0] in self.modules:
            return  # np.sum, os.path.join: attributes of some other module
        receiver = node.value
        if node.attr in self.tensor_attrs and not isinstance(receiver, ast.Constant) and (
                node.attr not in AMBIGUOUS or self._from_torch(receiver)):
            self.names[TENSOR + node.attr] += 1
        self.generic_visit(node)

    def _from_torch(self, node: ast.AST) -> bool:
        """The expression is computed by torch: its chain of calls, attributes and
        subscripts starts at a torch name."""
        while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
            node = node.func if isinstance(node, ast.Call) else node.value
        return isinstance(node, ast.Name) and node.id in self.aliases

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.aliases and isinstance(node.ctx, ast.Load):
            self.names[self.aliases[node.id]] += 1


def _chain(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None when the root is not a plain name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id] + parts[::-1]


def _qualify(base: str, rest: list[str]) -> str:
    """Join, stopping at the first dunder (``torch.nn.Module.__init__`` is torch.nn.Module)."""
    parts = [base]
    for part in rest:
        if part.startswith("__"):
            break
        parts.append(part)
    return ".".join(parts)


def scan_file(source: str, tensor_attrs: frozenset) -> Counter | None:
    """Counts of the names one file uses; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    uses = _Uses(tensor_attrs)
    uses.visit(tree)
    return uses.names


def repositories(roots: Iterable[Path]) -> Iterator[tuple[str, list[Path]]]:
    """(name, .py and .ipynb files) per repository: each ``owner+name`` folder under each
    root (a root without such folders is one repository)."""
    for root in roots:
        folders = sorted(p for p in root.iterdir() if p.is_dir() and "+" in p.name)
        for folder in folders or [root]:
            files = [p for p in folder.rglob("*") if p.suffix in (".py", ".ipynb")]
            yield folder.name, sorted(files)


def source_of(path: Path) -> str:
    """A file's Python source; for a notebook, its code cells with IPython magics and shell
    lines (``%time``, ``!pip``) left out."""
    text = path.read_text(errors="replace")
    if path.suffix != ".ipynb":
        return text
    try:
        cells = json.loads(text).get("cells", [])
    except (json.JSONDecodeError, AttributeError):
        return ""
    lines = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        lines += [line for line in source.splitlines()
                  if not line.lstrip().startswith(("%", "!", "?"))]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- coverage
def _resolve(package: str, dotted: list[str]) -> object:
    """``package.a.b.c``: import the longest module prefix (``torch.utils.tensorboard`` is
    not imported by ``import torch``), then follow attributes."""
    value = importlib.import_module(package)
    for i, part in enumerate(dotted):
        try:
            value = getattr(value, part)
        except AttributeError:
            value = importlib.import_module(".".join([package, *dotted[:i + 1]]))
    return value


def _is_standin(value: object) -> bool:
    """A placeholder from gradcheck.ref.standins: it imports but raises when used."""
    return isinstance(value, type) and vars(value).get("gradcheck_standin", False)


def resolves(package: str, name: str) -> bool:
    """Whether ``name`` (``torch.x.y`` or ``Tensor.m``) resolves to a working object in
    ``package`` (``torch`` or ``gradcheck.ref``)."""
    try:
        if name.startswith(TENSOR):
            value = getattr(importlib.import_module(package).Tensor, name[len(TENSOR):])
        else:
            value = _resolve(package, name.split(".")[1:])
    except Exception:  # noqa: BLE001 - any failure to resolve means "not there"
        return False
    return not _is_standin(value)


def census(roots: list[Path]) -> dict:
    """Per name: repositories using it, occurrences, and whether engine and torch have it."""
    import torch

    tensor_attrs = frozenset(n for n in dir(torch.Tensor) if not n.startswith("__"))
    repos_using: dict[str, set] = defaultdict(set)
    occurrences: Counter = Counter()
    stats = Counter()
    for repo, files in repositories(roots):
        stats["repositories"] += 1
        for path in files:
            names = scan_file(source_of(path), tensor_attrs)
            stats["files"] += 1
            if names is None:
                stats["unparsable files"] += 1
                continue
            for name, count in names.items():
                repos_using[name].add(repo)
                occurrences[name] += count
    rows = []
    warnings.simplefilter("ignore")  # deprecated names warn when resolved
    for name, repos in repos_using.items():
        rows.append({"name": name, "repos": len(repos), "uses": occurrences[name],
                     "in_torch": resolves("torch", name),
                     "covered": resolves("gradcheck.ref", name)})
    rows.sort(key=lambda r: (-r["repos"], -r["uses"], r["name"]))
    real = [r for r in rows if r["in_torch"]]
    total = sum(r["repos"] for r in real)
    covered = sum(r["repos"] for r in real if r["covered"])
    return {"stats": dict(stats), "rows": rows, "weighted_total": total,
            "weighted_covered": covered, "coverage": covered / total if total else 1.0}


# ----------------------------------------------------------------------------- reporting
def text_table(result: dict, top: int, missing_only: bool) -> str:
    rows = [r for r in result["rows"] if r["in_torch"]]
    if missing_only:
        rows = [r for r in rows if not r["covered"]]
    lines = [f"{'rank':>4}  {'repos':>5}  {'uses':>6}  {'engine':8}  name"]
    for rank, row in enumerate(rows[:top] if top else rows, 1):
        verdict = "covered" if row["covered"] else "MISSING"
        lines.append(f"{rank:>4}  {row['repos']:>5}  {row['uses']:>6}  {verdict:8}  {row['name']}")
    return "\n".join(lines)


def summary(result: dict) -> str:
    stats = result["stats"]
    rows = result["rows"]
    unknown = [r["name"] for r in rows if not r["in_torch"]]
    missing = [r for r in rows if r["in_torch"] and not r["covered"]]
    return (f"{stats.get('repositories', 0)} repositories, {stats.get('files', 0)} files "
            f"({stats.get('unparsable files', 0)} unparsable), "
            f"{sum(r['in_torch'] for r in rows)} distinct torch names and Tensor attributes; "
            f"weighted coverage {result['weighted_covered']}/{result['weighted_total']} = "
            f"{100 * result['coverage']:.2f}%; {len(missing)} names missing; "
            f"{len(unknown)} names unknown to this torch (left out)")


def markdown(result: dict, top: int, listed_from: int = 3) -> str:
    """The top ``top`` rows, then every name not covered that at least ``listed_from``
    repositories use, then how much weight the rarer missing names carry."""
    rows = [r for r in result["rows"] if r["in_torch"]]
    lines = ["| rank | name | repositories | engine |", "|---:|---|---:|---|"]
    for rank, row in enumerate(rows[:top], 1):
        lines.append(f"| {rank} | `{row['name']}` | {row['repos']} | "
                     f"{'covered' if row['covered'] else '**not covered**'} |")
    missing = [r for r in rows[top:] if not r["covered"]]
    listed = [r for r in missing if r["repos"] >= listed_from]
    rest = [r for r in missing if r["repos"] < listed_from]
    if listed:
        lines += ["", f"Not covered, below rank {top}, used by {listed_from} or more "
                      "repositories (repositories using each):", ""]
        lines.append(", ".join(f"`{r['name']}` ({r['repos']})" for r in listed))
    if rest:
        lines += ["", f"And {len(rest)} more names not covered, each used by fewer than "
                      f"{listed_from} repositories (weight {sum(r['repos'] for r in rest)})."]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- extraction
def _git_dir(folder: Path) -> Path:
    """A snapshot folder is a git directory or holds one (``repo/`` or ``repo/.git``)."""
    for candidate in (folder, folder / "repo", folder / "repo" / ".git", folder / ".git"):
        if (candidate / "HEAD").exists():
            return candidate
    raise SystemExit(f"{folder} holds no git snapshot; fetch the repository first")


def extract(mirrors: Path, out: Path, manifest: Path = MANIFEST) -> None:
    """Write each manifest repository's .py files, at its pinned commit, under ``out``."""
    with manifest.open() as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        git = _git_dir(mirrors / row["repository"].replace("/", "+"))
        target = out / row["repository"].replace("/", "+")
        listing = subprocess.run(["git", f"--git-dir={git}", "ls-tree", "-r", "--name-only",
                                  row["commit"]], capture_output=True, text=True, check=True)
        for name in listing.stdout.splitlines():
            if not name.endswith(".py"):
                continue
            blob = subprocess.run(["git", f"--git-dir={git}", "show", f"{row['commit']}:{name}"],
                                  capture_output=True, check=True).stdout
            path = target / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(blob)
        print(f"{row['repository']}: extracted at {row['commit'][:12]} into {target}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["extract"]:
        parser = argparse.ArgumentParser(prog="census.py extract")
        parser.add_argument("--mirrors", type=Path, required=True,
                            help="folder of owner+name/ git snapshots")
        parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
        parser.add_argument("--manifest", type=Path, default=MANIFEST)
        args = parser.parse_args(argv[1:])
        extract(args.mirrors, args.out, args.manifest)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=0, help="rows to print (0: all)")
    parser.add_argument("--missing", action="store_true", help="only names the engine lacks")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--json", type=Path, help="write every row here")
    args = parser.parse_args(argv)
    result = census(args.corpus)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    if args.markdown:
        print(markdown(result, args.top or 40))
    else:
        print(text_table(result, args.top, args.missing))
    print(summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
