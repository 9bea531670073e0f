"""Generate docs/fixtures.md: one row per golden lint fixture (name, what it shows, expected codes).

Run from the repository root:  python tests/fixtures_golden/make_fixture_table.py > docs/fixtures.md
The fixture's first line (`# Bug: ...` / `# Correct: ...`) is its description, and its `.expected`
file gives the codes, so the table cannot drift from the fixtures (a test checks it is current).
"""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

# discovery, `.expected` parsing and the runnable test live in the tests' conftest
_GOLDEN = runpy.run_path(str(Path(__file__).with_name("conftest.py")))

HEADER = """# Golden lint fixtures

`fixtures/lint/` holds whole training programs that act as the acceptance test of the lint rules
(GC001-GC004). Each `name.py` has a `name.expected` beside it with one `LINE:COL CODE [message]`
line per finding the rules must report; an empty file means the program must lint clean.
`bad_*` programs start with `# Bug: ...`, `good_*` programs with `# Correct: ...`.

- `python -m pytest tests/fixtures_golden/test_fixtures_golden.py` lints every fixture and
  compares with its `.expected` file (exact `LINE:COL CODE`, and the message when one is given).
- `GRADCHECK_UPDATE_GOLDEN=1 python -m pytest tests/fixtures_golden/test_fixtures_golden.py`
  fills in or refreshes the messages of lines whose position and code already match. It never
  adds or removes a line: which findings are expected is decided by people, not by the linter.
- Fixtures marked *runnable* define `def train(...) -> dict` and run in well under a second.
  `tests/fixtures_golden/test_fixtures_run.py` runs them with `torch` bound to the reference
  engine `gradcheck.ref` and with real PyTorch, each bug beside its corrected twin, and asserts
  the bug's effect (frozen weights, only the last micro-batch applied, summed stale gradients,
  growing GAN gradients, a retained graph).
- `# known false negative:` comments inside a fixture mark bugs the rules are not expected to
  catch.

Regenerate this file with `python tests/fixtures_golden/make_fixture_table.py > docs/fixtures.md`.

| fixture | bug or pattern | expected | runnable |
|---|---|---|---|
"""


def describe(path: Path) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    return re.sub(r"^# (Bug|Correct): ", "", first).replace("|", "\\|")


def expected_cell(path: Path) -> str:
    expected_path = _GOLDEN["expected_path"](path)
    expected = _GOLDEN["parse_expected"](expected_path.read_text(encoding="utf-8"), str(expected_path))
    cells = [f"{e.code} ({e.line}:{e.column})" for e in expected]
    return ", ".join(cells) if cells else "none"


def render() -> str:
    rows = []
    paths = _GOLDEN["fixture_paths"]()
    for path in paths:
        runnable = "yes" if _GOLDEN["is_runnable"](path) else ""
        rows.append(f"| `{path.stem}` | {describe(path)} | {expected_cell(path)} | {runnable} |")
    n_bad = sum(1 for p in paths if p.name.startswith("bad_"))
    n_good = sum(1 for p in paths if p.name.startswith("good_"))
    footer = f"\n{n_bad} bad and {n_good} good fixtures.\n"
    return HEADER + "\n".join(rows) + "\n" + footer


if __name__ == "__main__":
    sys.stdout.write(render())
