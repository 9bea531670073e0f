"""A file-level held-out part: training files read one by one, each linted alone.

When no snapshot of a repository can be fetched, its training files can still be read one
at a time from a store of public source files. ``files.csv`` pins each such file:
``repository,commit,part,path`` (the commit is that file's own: the files of one
repository may come from different commits, so each is linted alone, in a folder of its
own, never with its neighbours). Nothing of the files is committed, only these rows.

    python bench/wild/files.py check
    python bench/wild/files.py findings --part test14 --into DIR --out FILE [--preview]
    python bench/wild/files.py score --part test14 --into DIR [--preview]

``DIR/<part>/<owner>+<name>/<path>`` holds the files. ``findings`` writes what the linter
reports in triage.csv's schema (verdict ``?``); ``score`` compares with triage.csv, as
``corpus.py score`` does for whole repositories.
"""
from __future__ import annotations

import argparse
import csv
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import TRIAGE, TRIAGE_FIELDS, _key, _print_summary, in_preview, lint
from manifest import checkout_name

HERE = Path(__file__).resolve().parent
FILES = HERE / "files.csv"
FIELDS = ["repository", "commit", "part", "path"]
FILE_PARTS = ("test14", "test15", "test20", "test24")


def read_files(part: str | None = None, path: Path = FILES) -> list[dict[str, str]]:
    """The rows of ``files.csv``, all or those of one part, in file order."""
    if part is not None and part not in FILE_PARTS:
        raise ValueError(f"unknown file-level part {part!r}: use one of {', '.join(FILE_PARTS)}")
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [row for row in rows if part is None or row["part"] == part]


def problems(rows: list[dict[str, str]], whole_repositories: set[str],
             reserved: set[str] = frozenset()) -> list[str]:
    """Every way the rows break the rules, as sentences: a file listed twice, a commit that
    is no sha, an unknown part, a repository reserved or already in a whole-repository
    part."""
    found, seen = [], set()
    for number, row in enumerate(rows, start=2):
        where = f"files.csv line {number} ({row['repository']}/{row['path']})"
        key = (row["repository"].lower(), row["path"])
        if key in seen:
            found.append(f"{where}: listed twice")
        seen.add(key)
        if len(row["commit"]) != 40 or not all(c in "0123456789abcdef" for c in row["commit"]):
            found.append(f"{where}: commit {row['commit']!r} is not a 40-digit hex sha")
        if row["part"] not in FILE_PARTS:
            found.append(f"{where}: part {row['part']!r} is not one of {', '.join(FILE_PARTS)}")
        if row["repository"].lower() in reserved:
            found.append(f"{where}: reserved for independent evaluation; remove the row")
        if row["repository"].lower() in whole_repositories:
            found.append(f"{where}: the repository is already in repos.csv")
    return found


def finding_rows(part: str, into: Path, preview: bool = False,
                 files: Path = FILES) -> list[dict[str, str]]:
    """Every finding on ``part``, each file linted alone in a folder of its own."""
    rows = []
    for row in read_files(part, files):
        source = into / part / checkout_name(row["repository"]) / row["path"]
        if not source.is_file():
            raise SystemExit(f"{source} is missing: read the file at {row['commit']} first")
        with tempfile.TemporaryDirectory(prefix="gradcheck-file-") as tmp:
            shutil.copy(source, Path(tmp) / source.name)
            for finding in lint(Path(tmp), preview):
                cell = finding.get("cell")
                rows.append({"repository": row["repository"], "commit": row["commit"],
                             "path": row["path"] if cell is None else f"{row['path']}#cell{cell}",
                             "line": str(finding["line"]), "code": finding["code"],
                             "verdict": "?",
                             "reason": " ".join(finding["message"].split())[:200],
                             "pattern": finding.get("pattern", "")})
    return rows


def read_triage(part: str, files: Path = FILES,
                triage: Path = TRIAGE) -> dict[tuple, dict[str, str]]:
    """Triage rows of the files of ``part`` only."""
    listed = {(row["repository"], row["path"]) for row in read_files(part, files)}
    with triage.open(newline="", encoding="utf-8") as handle:
        return {_key(r): r for r in csv.DictReader(handle)
                if (r["repository"], r["path"].split("#cell")[0]) in listed}


def write_findings(part: str, into: Path, out: Path, preview: bool, files: Path,
                   triage_file: Path) -> None:
    triage = read_triage(part, files, triage_file)
    new = [row for row in finding_rows(part, into, preview, files) if _key(row) not in triage]
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, [*TRIAGE_FIELDS, "pattern"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(new)
    print(f"wrote {len(new)} untriaged findings of part {part} to {out}")


def score(part: str, into: Path, preview: bool, files: Path, triage_file: Path) -> int:
    triage = read_triage(part, files, triage_file)
    found = [r for r in finding_rows(part, into, preview=True, files=files)
             if preview or not in_preview(r["code"], r["pattern"])]
    new = [row for row in found if _key(row) not in triage]
    judged = [{**triage[_key(row)], "pattern": row["pattern"]}
              for row in found if _key(row) in triage]
    listed = read_files(part, files)
    repositories = Counter(row["repository"] for row in listed)
    _print_summary(part, judged, new, [], heading=f"part {part}: {len(listed)} files "
                   f"of {len(repositories)} repositories, each linted alone")
    return 1 if new or any(r["verdict"] == "false" for r in judged) else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("check", "findings", "score"):
        sub.add_parser(name)
    sub.choices["check"].add_argument("--reserved", type=Path)
    for name in ("check", "findings", "score"):
        sub.choices[name].add_argument("--files", type=Path, default=FILES,
                                       help="the rows to read (default: files.csv)")
        sub.choices[name].add_argument("--triage", type=Path, default=TRIAGE,
                                       help="the verdicts to read (default: triage.csv)")
    for name in ("findings", "score"):
        command = sub.choices[name]
        command.add_argument("--part", choices=FILE_PARTS, required=True)
        command.add_argument("--into", type=Path, required=True)
        command.add_argument("--preview", action="store_true")
    sub.choices["findings"].add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "findings":
        write_findings(args.part, args.into, args.out, args.preview, args.files, args.triage)
        return 0
    if args.command == "score":
        return score(args.part, args.into, args.preview, args.files, args.triage)
    from manifest import read_manifest
    reserved: set[str] = set()
    if args.reserved is not None:
        lines = args.reserved.read_text(encoding="utf-8").splitlines()
        reserved = {s.strip().lower() for s in lines if s.strip() and not s.startswith("#")}
    whole = {row["repository"].lower() for row in read_manifest()}
    rows = read_files(None, args.files)
    found = problems(rows, whole, reserved)
    for problem in found:
        print(problem)
    verdict = f"{len(found)} problems" if found else "the rows follow the rules"
    print(f"{len(rows)} files; {verdict}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
