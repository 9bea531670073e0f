"""The text prefilter: never skips a file with a finding, skips most model code."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
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
    "loss.backward()\ntotal = total + loss\n",
    "loss.backward()\ntotal_loss = total_loss + loss\n",
]

# GC004 sums that the rule flags although no single line holds both the `+` and the loss
_LOOP = "for x, y in loader:\n    loss = criterion(model(x), y)\n"
MULTI_LINE_SUMS = [
    _LOOP + "    loss.backward()\n    total = total + \\\n        loss\n",
    _LOOP + "    loss.backward()\n    total = total + (\n        loss\n    )\n",
    _LOOP + "    loss.backward()\n    total += (\n        2 * loss  # weighted\n    )\n",
    _LOOP + "    loss.backward()\n    total += -\\\n        loss\n",
    _LOOP + "    accelerator.backward(\n        loss\n    )\n    total = total + loss\n",
    _LOOP + "    (\n        loss\n    ).backward()\n    running_loss = running_loss + loss\n",
    ("def train(loader):\n    for x in loader:\n        loss = f(x)\n        scaler.scale(\n"
     "            loss).backward()\n        stats.total = stats.total + (\n            loss)\n"),
]


def _fixture_sources() -> list[Path]:
    return sorted(FIXTURES.glob("*.py"))


@pytest.fixture
def rules_without_prefilter(monkeypatch):
    """``check_source`` with the prefilter switched off, to see what the rules really find."""
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith("lint_rules.") and name != "lint_rules.prefilter" and hasattr(
            module, "could_have_findings"
        ):
            monkeypatch.setattr(module, "could_have_findings", lambda source: True)
    return lint_rules.check_source


def _rule_examples() -> list[str]:
    sources = []
    for rule in lint_rules.RULES:
        for case in [*rule.VALID, *rule.INVALID]:
            text = case if isinstance(case, str) else getattr(case, "code", None)
            if isinstance(text, str):
                sources.append(text)
    return sources


@pytest.mark.parametrize("source", MULTI_LINE_SUMS)
def test_multi_line_sums_the_rules_flag_are_kept(rules_without_prefilter, source):
    assert [f.code for f in rules_without_prefilter(source, "case.py")] == ["GC004"]
    assert could_have_findings(source)


def test_prefilter_keeps_everything_the_rules_flag(rules_without_prefilter):
    sources = [path.read_text(encoding="utf-8") for path in _fixture_sources()] + _rule_examples()
    flagged = [text for text in sources if rules_without_prefilter(text, "case.py")]
    assert len(flagged) >= 10  # the comparison means something
    assert [text for text in flagged if not could_have_findings(text)] == []


_BODY = st.lists(st.sampled_from([
    "loss = criterion(model(x), y)", "loss.backward()", "optimizer.step()",
    "optimizer.zero_grad()", "total += loss", "total = total + loss", "scheduler.step()",
    "scaler.scale(loss).backward()", "scaler.step(optimizer)", "accelerator.backward(loss)",
    "total_loss = total_loss + loss * x.shape[0]", "total = total + (\n            loss)",
    "total = total + \\\n            loss", "total += (\n            loss\n        )",
    "accelerator.backward(\n            loss)", "(\n            loss\n        ).backward()",
]), min_size=1, max_size=6)


@st.composite
def training_programs(draw) -> str:
    """Training loops in the layouts the prefilter must see through: module level, in a
    function, in a method, behind a helper, with docstrings and comments around."""
    body = draw(_BODY)
    gated = draw(st.sets(st.integers(0, len(body) - 1)))
    helper = draw(st.booleans()) and "loss.backward()" in body
    lines = ["for i, (x, y) in enumerate(loader):"]
    for index, statement in enumerate(body):
        if helper and statement == "loss.backward()":
            statement = "do_backward(loss)"
        if index in gated:
            lines += ["    if (i + 1) % 4 == 0:", f"        {statement}"]
        else:
            lines.append(f"    {statement}")
    if draw(st.booleans()):
        lines.insert(0, "optimizer.zero_grad()")
    if draw(st.booleans()):
        lines.insert(0, "total = 0.0")
    layout = draw(st.sampled_from(["module", "function", "method"]))
    indent = {"module": "", "function": "    ", "method": "        "}[layout]
    code = [indent + line for line in lines]
    if layout != "module":
        code.insert(0, indent + '"""Train.\n' + indent + '    loss.backward() in a docstring."""')
    if layout == "function":
        code.insert(0, "def train(model, loader, optimizer, scaler, scheduler, criterion):")
    elif layout == "method":
        code[:0] = ["class Trainer:", ("    def fit(self, model, loader, optimizer, scaler, "
                    "scheduler, criterion, accelerator):")]
    prelude = ["import torch", "# optimizer.step() in a comment"]
    if helper:
        prelude += ["", "def do_backward(loss):", "    loss.backward()", ""]
    return "\n".join(prelude + code) + "\n"


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # a stateless patch
@given(training_programs())
def test_prefilter_never_drops_a_generated_program_with_findings(rules_without_prefilter, source):
    if rules_without_prefilter(source, "generated.py"):
        assert could_have_findings(source), source


@pytest.mark.parametrize("snippet", SNIPPETS)
def test_every_trigger_form_passes(snippet):
    assert could_have_findings(snippet)


@pytest.mark.parametrize("source", [
    "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
    "def backward(ctx, grad):\n    return grad\nopt.step()\n",
    "y = max_pool2d_backward(x)\nopt.step()\n",
    "loss.backward()\nprint(loss)\n",  # no step, nothing accumulated
    "scheduler.step()\nx += 1\n",
    "loss.backward()\ntotal = total + (\n    other\n)\n",  # the sum never adds the loss
    "loss.backward()\ntotal = total + \\\n    other  # loss\n",  # only a comment names it
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
