"""The wild corpus: real repositories, linted and scored against a hand triage.

Nothing of those repositories is committed here: ``repos.csv`` pins each one to a commit,
and ``triage.csv`` records every finding the linter made on them with the verdict a human
gave after reading the code (``bug``, ``debatable`` or ``false``) and why. This script
re-fetches the pinned commits and scores the current linter against that triage.

    python bench/wild/corpus.py fetch [--mirror DIR]   # into bench/_corpus/wild (git-ignored)
    python bench/wild/corpus.py score                  # precision, new and lost findings
    python bench/wild/corpus.py score --write-new      # append untriaged findings as "?"

``--mirror DIR`` reads ``DIR/<owner>+<name>/repo`` git directories instead of cloning.
Precision counts ``bug`` as right and ``false`` as wrong; ``debatable`` is reported apart.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "_corpus" / "wild"
REPOS = HERE / "repos.csv"
TRIAGE = HERE / "triage.csv"
TRIAGE_FIELDS = ["repository", "commit", "path", "line", "code", "verdict", "reason"]


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def checkout_dir(repository: str) -> Path:
    return CORPUS / repository.replace("/", "+")


def fetch(mirror: Path | None) -> None:
    """Extract the ``.py`` files of every pinned commit into the corpus directory."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    if not (CORPUS / ".git").exists():
        # Its own repository, so that this project's .gitignore and config do not apply.
        subprocess.run(["git", "init", "-q"], cwd=CORPUS, check=True)
    for row in read_csv(REPOS):
        target = checkout_dir(row["repository"])
        if target.exists():
            continue
        git_dir = _git_dir(row["repository"], mirror)
        run = subprocess.run(["git", "--git-dir", str(git_dir), "archive", row["commit"], "--",
                              ":(glob)**/*.py"], capture_output=True)
        if run.returncode:
            print(f"skipped {row['repository']}: {run.stderr.decode(errors='replace').strip()}")
            continue
        archive = run.stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".py")]
            tar.extractall(target, members=members, filter="data")
        print(f"fetched {row['repository']}@{row['commit'][:10]}: {len(members)} files")


def _git_dir(repository: str, mirror: Path | None) -> Path:
    if mirror is not None:
        base = mirror / repository.replace("/", "+") / "repo"
        return base / ".git" if (base / ".git").is_dir() else base
    clone = CORPUS.parent / "wild-git" / repository.replace("/", "+")
    if not clone.exists():
        url = f"https://github.com/{repository}.git"
        subprocess.run(["git", "clone", "-q", "--bare", "--filter=blob:none", url, str(clone)],
                       check=True)
    return clone


def lint(repository: str) -> list[dict]:
    """The linter's JSON findings on one checked-out repository (paths relative to it)."""
    root = checkout_dir(repository)
    run = subprocess.run(
        [sys.executable, "-m", "gradcheck", "lint", "--format", "json", "--no-cache",
         "--exit-zero", "."],
        cwd=root, capture_output=True, text=True,
    )
    if run.returncode not in (0, 1, 2):
        raise SystemExit(f"lint crashed on {repository}:\n{run.stderr}")
    return json.loads(run.stdout or "[]")


def score(write_new: bool) -> int:
    triage = {(r["repository"], r["path"], int(r["line"]), r["code"]): r
              for r in read_csv(TRIAGE)} if TRIAGE.exists() else {}
    seen: set[tuple] = set()
    new: list[dict[str, str]] = []
    for row in read_csv(REPOS):
        for finding in lint(row["repository"]):
            key = (row["repository"], finding["path"].lstrip("./"), finding["line"], finding["code"])
            seen.add(key)
            if key not in triage:
                new.append(dict(zip(TRIAGE_FIELDS, (*key[:1], row["commit"], *key[1:], "?",
                                                    finding["message"][:200]))))
    verdicts = Counter(triage[k]["verdict"] for k in seen if k in triage)
    lost = [r for k, r in triage.items() if k not in seen and r["verdict"] == "bug"]
    _print_summary(verdicts, new, lost)
    if write_new and new:
        _append(new)
    return 1 if new or lost or verdicts["false"] else 0


def _print_summary(verdicts: Counter, new: list[dict], lost: list[dict]) -> None:
    judged = verdicts["bug"] + verdicts["false"]
    precision = verdicts["bug"] / judged if judged else 1.0
    print(f"findings: {sum(verdicts.values()) + len(new)}  bug: {verdicts['bug']}  "
          f"debatable: {verdicts['debatable']}  false: {verdicts['false']}  untriaged: {len(new)}")
    print(f"precision (bug / (bug + false)): {precision:.1%}")
    for row in new:
        print(f"  NEW  {row['repository']}/{row['path']}:{row['line']} {row['code']} {row['reason']}")
    for row in lost:
        print(f"  LOST {row['repository']}/{row['path']}:{row['line']} {row['code']} ({row['reason']})")


def _append(rows: list[dict[str, str]]) -> None:
    exists = TRIAGE.exists()
    with TRIAGE.open("a", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, TRIAGE_FIELDS)
        if not exists:
            writer.writeheader()
        writer.writerows(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fetch_parser = sub.add_parser("fetch")
    fetch_parser.add_argument("--mirror", type=Path)
    score_parser = sub.add_parser("score")
    score_parser.add_argument("--write-new", action="store_true")
    args = parser.parse_args()
    if args.command == "fetch":
        fetch(args.mirror)
        return 0
    return score(args.write_new)


if __name__ == "__main__":
    raise SystemExit(main())
