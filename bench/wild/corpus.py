"""The wild corpus: real repositories, linted part by part and scored against a hand triage.

Nothing of those repositories is committed here. ``repos.csv`` pins each one to a commit and
puts it in the ``dev`` part or a held-out one (``test``, ``test2`` to ``test13``, ``test16``
to ``test19``; the rules are in ``manifest.py``); ``triage.csv`` records findings with the
verdict a human gave after reading the code (``bug``, ``debatable``, ``false``) and why. See
docs/corpus.md for the method.

    python bench/wild/corpus.py fetch --mirror DIR [--into DIR] [--part dev]
    python bench/wild/corpus.py stats [--into DIR] [--part dev]
    python bench/wild/corpus.py score --part dev [--into DIR]
    python bench/wild/corpus.py findings --part dev --out FILE [--into DIR]
    python bench/wild/corpus.py check [--reserved FILE]

``fetch`` writes the ``.py`` and ``.ipynb`` files of each pinned commit to
``INTO/<part>/<owner>+<name>/`` (``INTO`` defaults to ``bench/_corpus/wild``), reading
``DIR/<owner>+<name>/repo`` git directories, or cloning when ``--mirror`` is not given.
``score`` and ``findings`` lint one part only and print nothing about the other.
Precision counts ``bug`` as right and ``false`` as wrong; ``debatable`` is reported apart.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from manifest import PARTS, checkout_name, problems, read_manifest
from snapshot import SUFFIXES, extract, mirror_git_dir

HERE = Path(__file__).resolve().parent
DEFAULT_INTO = HERE.parent / "_corpus" / "wild"
TRIAGE = HERE / "triage.csv"
TRIAGE_FIELDS = ["repository", "commit", "path", "line", "code", "verdict", "reason"]


def checkout_dir(into: Path, row: dict[str, str]) -> Path:
    return into / row["part"] / checkout_name(row["repository"])


def fetch(mirror: Path | None, into: Path, part: str | None) -> None:
    """Extract the source files of every pinned commit of ``part`` (or all) under ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    if not (into / ".git").exists():
        # Its own repository, so that no enclosing project's .gitignore or config applies.
        subprocess.run(["git", "init", "-q"], cwd=into, check=True)
    for row in read_manifest(part):
        target = checkout_dir(into, row)
        if target.exists():
            continue
        name = checkout_name(row["repository"])
        git_dir = mirror_git_dir(mirror, name) if mirror else _clone(row["repository"], into)
        try:
            written, absent = extract(git_dir, row["commit"], target)
        except subprocess.CalledProcessError as error:
            print(f"skipped {row['repository']}: {error.stderr.strip()}")
            continue
        note = f" ({absent} absent from the snapshot)" if absent else ""
        print(f"fetched {row['repository']}@{row['commit'][:10]} into {row['part']}: "
              f"{written} files{note}")


def _clone(repository: str, into: Path) -> Path:
    clone = into.parent / f"{into.name}-git" / checkout_name(repository)
    if not clone.exists():
        url = f"https://github.com/{repository}.git"
        subprocess.run(["git", "clone", "-q", "--bare", "--filter=blob:none", url, str(clone)],
                       check=True)
    return clone


def stats(into: Path, part: str | None) -> None:
    """Repositories, ``.py`` files and lines, and notebooks per part and category."""
    table: dict[tuple[str, str], Counter] = {}
    for row in read_manifest(part):
        counts = table.setdefault((row["part"], row["category"]), Counter())
        counts["repositories"] += 1
        for file in _sources(checkout_dir(into, row)):
            if file.suffix == ".py":
                counts["files"] += 1
                counts["lines"] += file.read_bytes().count(b"\n")
            else:
                counts["notebooks"] += 1
    print(f"{'part':5} {'category':17} {'repos':>5} {'.py files':>9} {'.py lines':>10} "
          f"{'notebooks':>9}")
    totals: dict[str, Counter] = {}
    for (part_name, category), counts in sorted(table.items()):
        totals[part_name] = totals.get(part_name, Counter()) + counts
        _stats_row(part_name, category, counts)
    for part_name, counts in sorted(totals.items()):
        _stats_row(part_name, "(all)", counts)


def _stats_row(part: str, category: str, counts: Counter) -> None:
    print(f"{part:5} {category:17} {counts['repositories']:5} {counts['files']:9} "
          f"{counts['lines']:10} {counts['notebooks']:9}")


def _sources(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file()]


def lint(root: Path, preview: bool = False) -> list[dict]:
    """The linter's JSON findings on one extracted repository (paths relative to it); with
    ``preview``, those of the forms still in preview too."""
    run = subprocess.run(
        [sys.executable, "-m", "gradcheck", "lint", "--format", "json", "--no-cache",
         "--exit-zero", *(["--preview"] if preview else []), "."],
        cwd=root, capture_output=True, text=True, check=False,
        # A repository's own top-level modules must not shadow the linter's imports.
        env={**os.environ, "PYTHONSAFEPATH": "1"},
    )
    if run.returncode not in (0, 1, 2) or not run.stdout.lstrip().startswith("["):
        # no JSON (gradcheck not importable here, say) is a failure, never "no findings"
        raise SystemExit(f"lint failed on {root.name} (exit {run.returncode}):\n{run.stderr[-2000:]}")
    return json.loads(run.stdout)


def finding_rows(part: str, into: Path, preview: bool = False) -> list[dict[str, str]]:
    """Every finding on ``part``, as rows of triage.csv's schema with verdict ``?``."""
    rows = []
    for repo in read_manifest(part):
        root = checkout_dir(into, repo)
        if not root.is_dir():
            raise SystemExit(f"{root} is missing: run `corpus.py fetch --part {part}` first")
        for finding in lint(root, preview):
            rows.append({"repository": repo["repository"], "commit": repo["commit"],
                         "path": _triage_path(finding), "line": str(finding["line"]),
                         "code": finding["code"], "verdict": "?",
                         "reason": " ".join(finding["message"].split())[:200],
                         "pattern": finding.get("pattern", "")})
    return rows


def _triage_path(finding: dict) -> str:
    path = finding["path"].removeprefix("./")
    # NOTE: a notebook's line counts within its code cell, so the cell is part of the key.
    return path if finding.get("cell") is None else f"{path}#cell{finding['cell']}"


def _key(row: dict[str, str]) -> tuple[str, str, int, str]:
    return row["repository"], row["path"], int(row["line"]), row["code"]


def read_triage(part: str) -> dict[tuple, dict[str, str]]:
    """Triage rows of the repositories of ``part`` only."""
    names = {row["repository"] for row in read_manifest(part)}
    if not TRIAGE.exists():
        return {}
    with TRIAGE.open(newline="", encoding="utf-8") as handle:
        return {_key(r): r for r in csv.DictReader(handle) if r["repository"] in names}


def score(part: str, into: Path, preview: bool = False) -> int:
    triage = read_triage(part)
    every = finding_rows(part, into, preview=True)
    # a bug that only a form in preview finds is not lost when those forms are off
    lost = [r for k, r in triage.items()
            if k not in {_key(row) for row in every} and r["verdict"] == "bug"]
    found = every if preview else [r for r in every if not in_preview(r["code"], r["pattern"])]
    new = [row for row in found if _key(row) not in triage]
    judged = [{**triage[_key(row)], "pattern": row["pattern"]} for row in found if _key(row) in triage]
    _print_summary(part, judged, new, lost)
    hidden = [r for r in every if r not in found and triage.get(_key(r), {}).get("verdict") == "bug"]
    if hidden:
        print(f"  {len(hidden)} more bugs are found by the forms in preview (--preview)")
    return 1 if new or lost or any(r["verdict"] == "false" for r in judged) else 0


def _print_summary(part: str, judged: list[dict], new: list[dict], lost: list[dict],
                   heading: str | None = None) -> None:
    verdicts = Counter(r["verdict"] for r in judged)
    print(heading or f"part {part}: {len(read_manifest(part))} repositories")
    print(f"findings: {len(judged) + len(new)}  bug: {verdicts['bug']}  "
          f"debatable: {verdicts['debatable']}  false: {verdicts['false']}  untriaged: {len(new)}")
    print(f"precision (bug / (bug + false)): {_precision(verdicts)}")
    default = Counter(r["verdict"] for r in judged if not in_preview(r["code"], r["pattern"]))
    if default != verdicts:
        print(f"  default forms (without --preview): bug {default['bug']}  false {default['false']}  "
              f"debatable {default['debatable']}  precision {_precision(default)}")
    for code in sorted({r["code"] for r in judged + new}):
        by_code = Counter(r["verdict"] for r in judged if r["code"] == code)
        untriaged = sum(r["code"] == code for r in new)
        print(f"  {code}: bug {by_code['bug']}  false {by_code['false']}  debatable "
              f"{by_code['debatable']}  untriaged {untriaged}  precision {_precision(by_code)}")
        for pattern in sorted({r["pattern"] for r in judged + new if r["code"] == code} - {""}):
            forms = Counter(r["verdict"] for r in judged if (r["code"], r["pattern"]) == (code, pattern))
            left = sum((r["code"], r["pattern"]) == (code, pattern) for r in new)
            mark = " (preview)" if in_preview(code, pattern) else ""
            print(f"    {pattern}{mark}: bug {forms['bug']}  false {forms['false']}  debatable "
                  f"{forms['debatable']}  untriaged {left}  precision {_precision(forms)}")
    for row in new:
        print(f"  NEW  {row['repository']}/{row['path']}:{row['line']} {row['code']} {row['reason']}")
    for row in lost:
        print(f"  LOST {row['repository']}/{row['path']}:{row['line']} {row['code']} ({row['reason']})")


def in_preview(code: str, pattern: str) -> bool:
    """Whether the form ``pattern`` of rule ``code`` is reported only with ``--preview``."""
    from lint_rules import RULES

    return any(rule.CODE == code and pattern in rule.PREVIEW for rule in RULES)


def _precision(verdicts: Counter) -> str:
    judged = verdicts["bug"] + verdicts["false"]
    return f"{verdicts['bug'] / judged:.1%}" if judged else "n/a (nothing judged)"


def write_findings(part: str, into: Path, out: Path, preview: bool = False) -> None:
    """Write the untriaged findings of ``part`` to ``out`` in triage.csv's schema."""
    triage = read_triage(part)
    new = [row for row in finding_rows(part, into, preview) if _key(row) not in triage]
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, TRIAGE_FIELDS, lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(new)
    print(f"wrote {len(new)} untriaged findings of part {part} to {out}")


def check(reserved_file: Path | None) -> int:
    reserved: set[str] = set()
    if reserved_file is not None:
        lines = reserved_file.read_text(encoding="utf-8").splitlines()
        reserved = {s.strip().lower() for s in lines if s.strip() and not s.startswith("#")}
    found = problems(read_manifest(), reserved)
    for problem in found:
        print(problem)
    rows = read_manifest()
    counts = Counter(row["part"] for row in rows)
    print(f"{len(rows)} repositories: " + ", ".join(f"{p} {counts[p]}" for p in PARTS)
          + (f"; {len(found)} problems" if found else "; the manifest follows the rules"))
    return 1 if found else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("fetch", "stats", "score", "findings"):
        command = sub.add_parser(name)
        command.add_argument("--into", type=Path, default=DEFAULT_INTO,
                             help="the corpus directory (default: bench/_corpus/wild)")
        command.add_argument("--part", choices=PARTS, required=name in ("score", "findings"))
    sub.choices["fetch"].add_argument("--mirror", type=Path)
    sub.choices["findings"].add_argument("--out", type=Path, required=True)
    for name in ("score", "findings"):
        sub.choices[name].add_argument("--preview", action="store_true",
                                       help="also lint with the forms still in preview")
    sub.add_parser("check").add_argument("--reserved", type=Path,
                                         help="a file of reserved owner/name lines")
    args = parser.parse_args()
    if args.command == "fetch":
        fetch(args.mirror, args.into, args.part)
    elif args.command == "stats":
        stats(args.into, args.part)
    elif args.command == "score":
        return score(args.part, args.into, args.preview)
    elif args.command == "findings":
        write_findings(args.part, args.into, args.out, args.preview)
    else:
        return check(args.reserved)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
