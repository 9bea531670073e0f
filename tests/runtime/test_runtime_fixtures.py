"""The runtime fixtures are well formed: a Bug/Correct header, an expected-findings file, and a
script that trains under torch and under the reference engine."""
from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np
import pytest

from gradcheck.runtime import check_training_step

FIXTURE_LINE = re.compile(r"^(\d+):(\d+) (GC00[1-4])$")
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime"


def _stems():
    return sorted(p.stem for p in FIXTURES.glob("*.py"))


def test_every_fixture_has_a_header_and_a_well_formed_expected_file():
    stems = _stems()
    assert len([s for s in stems if s.startswith("bug_")]) >= 4
    assert len([s for s in stems if s.startswith("correct_")]) >= 5
    for stem in stems:
        source = (FIXTURES / f"{stem}.py").read_text(encoding="utf-8").splitlines()
        header = "# Bug: " if stem.startswith("bug_") else "# Correct: "
        assert source[0].startswith(header), stem
        expected = (FIXTURES / f"{stem}.expected").read_text(encoding="utf-8").splitlines()
        for line in expected:
            match = FIXTURE_LINE.match(line)
            assert match, f"{stem}.expected: {line!r}"
            row, col = int(match.group(1)), int(match.group(2))
            call = source[row - 1][col - 1:]
            assert re.match(r"\w+\.(step|zero_grad)\(", call), f"{stem}:{row}:{col} {call!r}"


@pytest.mark.parametrize("framework", ["torch", "ref"])
def test_every_fixture_runs_as_a_script_and_trains(framework_context, framework):
    for stem in _stems():
        with framework_context(framework):
            namespace = runpy.run_path(str(FIXTURES / f"{stem}.py"), run_name="fixture")
            setup = namespace["make"]()
            model = setup["pairs"][0][0]
            before = [np.array(p.detach().numpy(), copy=True) for p in model.parameters()]
            for batch in setup["batches"]:
                setup["step"](batch)
        after = [p.detach().numpy() for p in model.parameters()]
        moved = any(not np.array_equal(a, b) for a, b in zip(before, after))
        assert moved is not stem.startswith("bug_wiped"), stem  # wiped loops never move


def test_a_closure_without_zero_grad_is_stale():
    torch = pytest.importorskip("torch")
    from gradcheck.runtime import GradGuardError, guard

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=3)
    x, y = torch.randn(8, 3), torch.randn(8, 1)

    def step(batch):
        def closure():
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            return loss

        opt.step(closure)

    report = check_training_step(step, model, opt, [0, 1, 2], raise_on_failure=False)
    assert report.kinds == {"stale_gradients"}
    with guard(opt), pytest.raises(GradGuardError, match="stale"):
        step(0)


@pytest.mark.parametrize("stem", _stems())
def test_the_linter_reports_exactly_the_expected_findings(stem):
    lint_rules = pytest.importorskip("lint_rules")
    source = (FIXTURES / f"{stem}.py").read_text(encoding="utf-8")
    found = sorted(f"{f.line}:{f.column} {f.code}" for f in lint_rules.check_source(source, stem))
    expected = (FIXTURES / f"{stem}.expected").read_text(encoding="utf-8").split()
    assert found == sorted(" ".join(pair) for pair in zip(expected[::2], expected[1::2]))
