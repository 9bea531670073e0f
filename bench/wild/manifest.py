"""The manifest of the wild corpus: which repositories, at which commit, in which part.

``repos.csv`` has one row per repository: ``repository,commit,part,category,origin``.
Nothing of a repository is committed here, only its name and the commit it is pinned to.

The corpus is split **by repository** into a development part (``dev``), which anyone may
lint and read while improving the linter, and a held-out ``test`` part, scored once at the
end. The rule is fixed before anything is linted, so it cannot be bent to fit results:

- the repositories the linter was tuned on before the split (``origin`` = ``tuning``) are
  ``dev``: figures on them measure fit, not generalisation;
- every other repository goes by the first byte of the SHA-256 of its lower-cased name:
  below ``TEST_BELOW`` (160 of 256, about 62%) it is ``test``, otherwise ``dev``.

    >>> part_by_rule("Owner/Name", "added") == part_by_rule("owner/name", "added")
    True

A second held-out part, ``test2``, was added after the ``test`` part had been scored and the
linter changed using what it showed, so ``test`` no longer measures generalisation. Its
repositories were chosen afresh (none is in another part) and every one of them is held
out: no hash rule applies to ``test2`` rows, only ``origin`` = ``added``. A third, ``test3``,
was added on the same terms once ``test2`` had been scored and used in turn, a fourth,
``test4``, once ``test3`` had, a fifth, ``test5``, once ``test4`` had, a sixth, ``test6``,
once ``test5`` had, chosen dense in training loops (courses, books and collections of models),
a seventh, ``test7``, once ``test6`` had, chosen the same way, an eighth, ``test8``,
once ``test7`` had, chosen the same way, and a ninth and a tenth, ``test9`` and ``test10``,
once ``test8`` had, chosen the same way at the same time from separate families of code
(``test10``: reinforcement learning, graph, recommender, time-series, medical, molecular,
scientific, remote-sensing, federated, continual, meta-learning, self-supervised,
distillation, pruning, quantisation and architecture-search code; ``test9`` the rest), and
so on to ``test13``. ``test14`` and ``test15`` are file-level parts (``files.py``);
``test16`` to ``test18`` are whole-repository parts again, chosen at once from separate
families, and ``test19`` a small one (the session's last fetches) scored after them.
``test21`` (language and audio), ``test22`` (vision) and ``test23`` (reinforcement learning,
graphs, recommenders, federated, meta-learning, scientific ML and the rest) are
whole-repository parts again, built at once from those separate families. ``test25``
(university course code: homework, assignments and course projects) is a whole-repository
part built beside two others: ``test26``
(tutorials, books' companion code and self-study practice collections) and ``test27``
(competition solutions, personal side projects and reimplementations, theses).
"""
from __future__ import annotations

import csv
import hashlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPOS = HERE / "repos.csv"
FIELDS = ["repository", "commit", "part", "category", "origin"]
PARTS = ("dev", "test", "test2", "test3", "test4", "test5", "test6", "test7", "test8",
         "test9", "test10", "test11", "test12", "test13", "test16", "test17", "test18",
         "test19", "test21", "test22", "test23", "test25", "test26", "test27")
# Every row of these parts is held out; the hash rule does not apply to them.
HELD_OUT_WHOLE = ("test2", "test3", "test4", "test5", "test6", "test7", "test8", "test9",
                  "test10", "test11", "test12", "test13", "test16", "test17", "test18", "test19",
                  "test21", "test22", "test23", "test25", "test26", "test27")
ORIGINS = ("tuning", "added")
TEST_BELOW = 160


def part_by_rule(repository: str, origin: str) -> str:
    """The part a repository belongs to under the split rule (see the module docstring)."""
    if origin == "tuning":
        return "dev"
    first_byte = hashlib.sha256(repository.lower().encode("utf-8")).digest()[0]
    return "test" if first_byte < TEST_BELOW else "dev"


def read_manifest(part: str | None = None, path: Path = REPOS) -> list[dict[str, str]]:
    """The manifest's rows, all of them or those of one part, in file order."""
    if part is not None and part not in PARTS:
        raise ValueError(f"unknown part {part!r}: use one of {', '.join(PARTS)}")
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [row for row in rows if part is None or row["part"] == part]


def checkout_name(repository: str) -> str:
    """The directory name of a repository inside a part: ``owner+name``."""
    return repository.replace("/", "+")


def problems(rows: list[dict[str, str]], reserved: set[str] = frozenset()) -> list[str]:
    """Every way the rows break the manifest's rules, as sentences (empty when sound).

    ``reserved`` holds lower-cased repository names that must never be in the corpus.
    """
    found: list[str] = []
    seen: set[str] = set()
    for number, row in enumerate(rows, start=2):  # line 1 is the header
        name = row["repository"]
        where = f"repos.csv line {number} ({name})"
        if name.lower() in seen:
            found.append(f"{where}: listed twice")
        seen.add(name.lower())
        if name.lower() in reserved:
            found.append(f"{where}: reserved for independent evaluation; remove the row")
        if len(row["commit"]) != 40 or not all(c in "0123456789abcdef" for c in row["commit"]):
            found.append(f"{where}: commit {row['commit']!r} is not a 40-digit hex sha")
        if row["origin"] not in ORIGINS:
            found.append(f"{where}: origin {row['origin']!r} is not one of {', '.join(ORIGINS)}")
            continue
        if row["part"] in HELD_OUT_WHOLE:
            if row["origin"] != "added":
                found.append(f"{where}: part {row['part']!r} holds only repositories never "
                             f"linted before (origin 'added'), not {row['origin']!r}")
            continue
        expected = part_by_rule(name, row["origin"])
        if row["part"] != expected:
            found.append(f"{where}: part is {row['part']!r} but the split rule gives "
                         f"{expected!r}; write {expected!r}")
    return found
