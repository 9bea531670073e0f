"""The accumulation-semantics suite: both frameworks conform, and a planted deviation fails."""
from __future__ import annotations

import sys
import types

import pytest
from click.testing import CliRunner

from gradcheck import exitcodes
from gradcheck.cli import main
from gradcheck.runtime import run_semantics
from gradcheck.runtime import semantics as semantics_module
from gradcheck.runtime.scenarios import SCENARIOS


@pytest.mark.parametrize("framework", ["torch", "ref"])
def test_every_semantic_passes(framework):
    if framework == "torch":
        pytest.importorskip("torch")
    report = run_semantics(framework)
    assert [row.name for row in report.rows] == [s.name for s in SCENARIOS]
    assert report.passed, report.table()
    assert all(row.expected is not None for row in report.rows)


def _torch_with_sticky_zero_grad():
    """torch, except that SGD.zero_grad() keeps zero tensors instead of setting None."""
    torch = pytest.importorskip("torch")

    class StickySGD(torch.optim.SGD):
        def zero_grad(self, set_to_none: bool = False) -> None:
            super().zero_grad(set_to_none=set_to_none)

    fake = types.SimpleNamespace(**{name: getattr(torch, name) for name in ("tensor", "autograd", "nn")})
    fake.optim = types.SimpleNamespace(SGD=StickySGD)
    fake.__name__ = "sticky_torch"
    return fake


def test_a_planted_deviation_shows_a_fail_row():
    report = run_semantics(_torch_with_sticky_zero_grad())
    assert [row.name for row in report.failed] == ["zero-grad-modes"]
    assert "default_sets_none=False" in report.failed[0].detail
    table = report.table()
    assert "zero-grad-modes" in table and "FAIL" in table and "1 failed" in table


def test_a_framework_that_raises_fails_only_that_row():
    torch = pytest.importorskip("torch")
    fake = types.SimpleNamespace(tensor=torch.tensor, nn=torch.nn, optim=torch.optim,
                                 autograd=types.SimpleNamespace(), __name__="no_autograd_grad")
    report = run_semantics(fake)
    assert [row.name for row in report.failed] == ["autograd-grad"]
    assert "AttributeError" in report.failed[0].detail


def test_cli_prints_the_table_and_exits_clean():
    result = CliRunner().invoke(main, ["semantics", "--framework", "ref"])
    assert result.exit_code == exitcodes.CLEAN, result.output
    assert "ref: 7 semantics, all passed" in result.output
    assert result.output.count("PASS") == len(SCENARIOS)


def test_cli_exits_with_findings_when_a_semantic_fails(monkeypatch):
    monkeypatch.setitem(sys.modules, "sticky_torch", _torch_with_sticky_zero_grad())
    monkeypatch.setitem(semantics_module.FRAMEWORKS, "torch", "sticky_torch")
    result = CliRunner().invoke(main, ["semantics", "--framework", "torch"])
    assert result.exit_code == exitcodes.FINDINGS, result.output
    assert "FAIL" in result.output


def test_cli_rejects_an_unknown_framework():
    result = CliRunner().invoke(main, ["semantics", "--framework", "jax"])
    assert result.exit_code == exitcodes.ERROR
    assert "jax" in result.output


def test_unknown_framework_name_is_a_clear_error():
    with pytest.raises(ValueError, match="framework must be one of"):
        run_semantics("tensorflow")


def test_rows_fail_when_the_reference_engine_cannot_run_them(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setattr(semantics_module, "_load_reference", lambda: types.SimpleNamespace())
    report = run_semantics("torch")
    assert len(report.failed) == len(SCENARIOS)
    assert all("reference engine could not run it" in row.detail for row in report.failed)
