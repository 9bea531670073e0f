"""The text prefilter: never skips a file with a finding, skips most model code."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lint_rules
from lint_rules.prefilter import could_have_findings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lint"
SNIPPETS = [
    "loss.backward()\noptimizer.step()\n",
    "scaler.scale(loss).backward()\nscaler.step(optimizer)\n",
    "accelerator.backward(loss)\noptimizer.step()\n",
    "self.manual_backward(loss)\nopt.step()\n",
    "torch.autograd.backward(loss)\nopt.step()\n",
    "loss.backward()\nxm.optimizer_step(optimizer)\n",
    "loss.backward()\ntotal += loss\n",
    "(loss / k).backward()\nrunning += loss\n",
    "fabric.backward(loss)\ntotal_loss += loss * 2\n",
]


def _fixture_sources() -> list[Path]:
    return sorted(FIXTURES.glob("*.py"))


def test_every_fixture_with_a_finding_passes_the_prefilter():
    sources = _fixture_sources()
    if not sources:
        pytest.skip("no fixtures yet")
    for path in sources:
        if lint_rules.check_source(path.read_text(encoding="utf-8"), str(path)):
            assert could_have_findings(path.read_text(encoding="utf-8")), path.name


def test_prefilter_agrees_with_the_rules_on_fixtures(monkeypatch):
    """Run the rules with the prefilter disabled: whatever they find, it must let through."""
    sources = _fixture_sources()
    if not sources:
        pytest.skip("no fixtures yet")
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith("lint_rules") and hasattr(module, "could_have_findings"):
            monkeypatch.setattr(module, "could_have_findings", lambda source: True)
    for path in sources:
        text = path.read_text(encoding="utf-8")
        if lint_rules.check_source(text, str(path)):
            assert could_have_findings(text), path.name


@pytest.mark.parametrize("snippet", SNIPPETS)
def test_every_trigger_form_passes(snippet):
    assert could_have_findings(snippet)


@pytest.mark.parametrize("source", [
    "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
    "def backward(ctx, grad):\n    return grad\nopt.step()\n",
    "y = max_pool2d_backward(x)\nopt.step()\n",
    "loss.backward()\nprint(loss)\n",  # no step, nothing accumulated
    "scheduler.step()\nx += 1\n",
    "",
])
def test_files_that_cannot_have_findings_are_skipped(source):
    assert not could_have_findings(source)


@given(prefix=st.text(max_size=200), suffix=st.text(max_size=200), snippet=st.sampled_from(SNIPPETS))
def test_surrounding_text_never_hides_a_trigger(prefix, suffix, snippet):
    assert could_have_findings(prefix + "\n" + snippet + "\n" + suffix)


@given(st.text(alphabet=st.characters(blacklist_characters="bB"), max_size=300))
def test_text_without_backward_is_always_skipped(text):
    assert not could_have_findings(text)
