"""Mutation recall of ``gradcheck lint`` on real training loops of the wild corpus.

Correct loops listed in ``loops.csv`` (see ``loop_selection.py``) get bugs planted by the
operators of ``mutation.py``. Each original must stay silent in its scope; each mutant must
get an expected code within ``TOLERANCE`` lines of a mutated statement. One part at a time:
``--part dev`` reads, lints and prints nothing of the test part, and the reverse.

    python bench/mutants/harness.py --corpus DIR --part dev [--results FILE]
    python bench/mutants/harness.py --corpus DIR --select    # rebuild loops.csv
    python bench/mutants/harness.py --corpus DIR --select --part test2  # that part's rows only

``DIR`` is what ``python bench/wild/corpus.py fetch --into DIR`` wrote.
"""
from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "wild"))
from lint_batch import lint_texts
from loop_selection import (
    Scope,
    candidates,
    capped,
    line_range,
    read_loops,
    scope_mutants,
    silent,
    write_loops,
)
from manifest import PARTS, read_manifest
from mutation import OPERATORS, TOLERANCE, Mutant


@dataclass
class Verdict:
    scope: Scope
    mutant: Mutant
    caught: bool
    reported: list[str]  # what the linter said in the scope, as "CODE@line"


def load(corpus: Path, row: dict[str, str]) -> Scope | None:
    """The scope a loops.csv row names, with its mutants; None when it is gone."""
    file = corpus / row["part"] / row["repository"].replace("/", "+") / row["path"]
    if not file.is_file():
        return None
    source = file.read_bytes().decode("utf-8", errors="replace")
    for qualname, scope, planted in scope_mutants(source):
        if qualname == row["function"] and line_range(scope, source)[0] == int(row["first_line"]):
            return Scope(row, source, planted)
    return None


def judge(scopes_: list[Scope], jobs: int | None,
          preview: bool = False) -> tuple[list[Verdict], list[tuple], list[str]]:
    """Lint originals and mutants in one run: verdicts, noisy originals, GC000 files."""
    texts, owners = {}, {}
    for i, scope in enumerate(scopes_):
        name = Path(scope.row["path"]).name
        texts[f"o{i}"] = (name, scope.source)
        for j, mutant in enumerate(scope.mutants):
            texts[f"m{i}-{j}"] = (name, mutant.source)
            owners[f"m{i}-{j}"] = (scope, mutant)
    found = lint_texts(texts, jobs, preview)
    crashed = [_label(scopes_[int(k[1:].split("-")[0])]) + (" (mutant)" if k[0] == "m" else "")
               for k, fs in found.items() if any(f["code"] == "GC000" for f in fs)]
    noisy = [(scope, [f"{f['code']}@{f['line']}" for f in found[f"o{i}"] if f["line"] in scope.lines])
             for i, scope in enumerate(scopes_)]
    noisy = [(scope, said) for scope, said in noisy if said]
    unjudged = {id(scope) for scope, _ in noisy}  # a finding there may not be the mutant's
    verdicts = []
    for key, (scope, mutant) in owners.items():
        if id(scope) in unjudged:
            continue
        findings = found[key]
        caught = any(f["code"] in mutant.expected and
                     any(abs(f["line"] - a) <= TOLERANCE for a in mutant.anchors) for f in findings)
        near = range(min(scope.lines.start, *mutant.anchors), max(scope.lines.stop, *mutant.anchors) + 2)
        verdicts.append(Verdict(scope, mutant, caught,
                                [f"{f['code']}@{f['line']}" for f in findings if f["line"] in near]))
    return verdicts, noisy, crashed


def _label(scope: Scope) -> str:
    row = scope.row
    return f"{row['repository']} {row['path']} {row['function']}"


def report(part: str, scopes_: list[Scope], verdicts: list[Verdict], noisy, crashed) -> None:
    repositories = {s.row["repository"] for s in scopes_}
    print(f"mutation recall, part {part}: {len(scopes_)} loops from {len(repositories)} "
          f"repositories, {len(verdicts)} mutants")
    print(f"{'operator':20} {'mutants':>7} {'caught':>7} {'recall':>7}  repositories")
    for operator in (*OPERATORS, None):
        chosen = [v for v in verdicts if operator in (None, v.mutant.operator)]
        caught = sum(v.caught for v in chosen)
        recall = f"{caught / len(chosen):.1%}" if chosen else "n/a"
        repos = len({v.scope.row["repository"] for v in chosen})
        print(f"{operator or 'all':20} {len(chosen):7} {caught:7} {recall:>7}  {repos}")
    print(f"originals not silent in their scope: {len(noisy)} of {len(scopes_)} "
          f"(their {sum(len(s.mutants) for s, _ in noisy)} mutants are not counted)")
    for scope, said in noisy:
        print(f"  NOISY {_label(scope)}: {', '.join(said)}")
    print(f"files with GC000: {len(crashed)}")
    for label in crashed:
        print(f"  GC000 {label}")
    misses = [v for v in verdicts if not v.caught]
    print(f"misses: {len(misses)}")
    for v in misses:
        print(f"  MISS {_label(v.scope)} [{v.mutant.operator}] {v.mutant.where}; "
              f"reported instead: {', '.join(v.reported) or 'nothing'}")


def write_results(path: Path, verdicts: list[Verdict]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["repository", "path", "function", "operator", "mutation", "anchors",
                         "expected", "caught", "reported"])
        for v in verdicts:
            writer.writerow([v.scope.row["repository"], v.scope.row["path"], v.scope.row["function"],
                             v.mutant.operator, v.mutant.where,
                             " ".join(map(str, v.mutant.anchors)), "|".join(v.mutant.expected),
                             int(v.caught), " ".join(v.reported)])


def run(corpus: Path, part: str, results: Path | None, jobs: int | None, preview: bool = False) -> int:
    rows = read_loops(part)
    scopes_ = [scope for scope in (load(corpus, row) for row in rows) if scope is not None]
    if len(scopes_) < len(rows):
        print(f"{len(rows) - len(scopes_)} loops of loops.csv are missing from {corpus}; "
              f"run `corpus.py fetch --into {corpus}`")
    verdicts, noisy, crashed = judge(scopes_, jobs, preview)
    report(part, scopes_, verdicts, noisy, crashed)
    if results is not None:
        write_results(results, verdicts)
    return 0 if all(v.caught for v in verdicts) and not noisy and not crashed else 1


def select(corpus: Path, jobs: int | None, part: str | None = None) -> int:
    """Rebuild loops.csv (or one part's rows of it); print counts only, never findings.

    With ``part``, the rows of the other parts are kept as they are: they were chosen with
    the linter of their time, and choosing them again would change a fixed benchmark.
    """
    found = candidates(corpus, read_manifest(part))
    kept = capped(silent(found, jobs))
    others = [row for other in PARTS if other != part for row in read_loops(other)] if part else []
    write_loops(kept, keep=others)
    for shown in [part] if part else PARTS:
        chosen = [s for s in kept if s.row["part"] == shown]
        operators = Counter(m.operator for s in chosen for m in s.mutants)
        print(f"{shown}: {len(chosen)} loops from {len({s.row['repository'] for s in chosen})} "
              f"repositories; mutants: " + ", ".join(f"{o} {operators[o]}" for o in OPERATORS))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="where corpus.py fetched to")
    parser.add_argument("--part", choices=PARTS,
                        help="the part to score (or, with --select, the only part to choose)")
    parser.add_argument("--select", action="store_true", help="rebuild loops.csv")
    parser.add_argument("--results", type=Path, help="also write one CSV row per mutant")
    parser.add_argument("--jobs", type=int, help="lint worker processes (default: all cores)")
    parser.add_argument("--preview", action="store_true",
                        help="score with the forms still in preview reported too (what `gradcheck "
                             "lint --preview` finds), not only the default ones")
    args = parser.parse_args()
    if args.select:
        return select(args.corpus, args.jobs, args.part)
    if args.part is None:
        parser.error("give --part PART to score, or --select to choose loops")
    return run(args.corpus, args.part, args.results, args.jobs, args.preview)


if __name__ == "__main__":
    raise SystemExit(main())
