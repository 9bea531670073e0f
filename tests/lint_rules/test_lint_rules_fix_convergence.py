"""``--fix`` converges: applying fixes until none is left takes a few passes, a further pass
changes nothing, and the output is the same in every run.

The programs are generated training loops with the shapes real code has: ``try``/``except``
around the batch, ``with`` blocks, an epoch loop around the batch loop, two optimizers, and
counter-gated accumulation, each statement placed at random.
"""
from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from lint_rules import check_source

OPTIMIZERS = ("optimizer", "opt_d")
leaf = st.one_of(
    st.sampled_from([f"{o}.zero_grad()" for o in OPTIMIZERS] + [f"{o}.step()" for o in OPTIMIZERS]),
    st.sampled_from(["loss.backward()", "loss_d.backward()", "model.zero_grad()",
                     "total += loss", "total += loss.item()", "continue"]),
)


def _wrapped(inner):
    kinds = st.sampled_from(["try", "with", "accumulate", "counter", "flag"])
    return st.tuples(kinds, inner)


block = st.recursive(st.lists(leaf, min_size=1, max_size=5),
                     lambda inner: st.lists(st.one_of(leaf, _wrapped(inner)), min_size=1, max_size=5),
                     max_leaves=10)
HEADERS = {
    "with": ["with torch.autocast('cpu'):"],
    "accumulate": ["with accelerator.accumulate(model):"],
    "counter": ["if (i + 1) % accum_steps == 0:"],
    "flag": ["if use_amp:"],
}


def render(body, epochs: bool) -> str:
    lines = ["total = 0", "for epoch in range(epochs):" if epochs else "if True:",
             "    for i, batch in enumerate(loader):", "        loss = model(batch)"]

    def emit(stmts, depth: int) -> None:
        pad = "    " * depth
        for stmt in stmts:
            if isinstance(stmt, str):
                lines.append(pad + stmt)
            elif stmt[0] == "try":
                lines.append(pad + "try:")
                emit(stmt[1], depth + 1)
                lines.extend([pad + "except RuntimeError:", pad + "    pass"])
            else:
                lines.extend(pad + header for header in HEADERS[stmt[0]])
                emit(stmt[1], depth + 1)

    emit(body, 2)
    return "\n".join(lines) + "\n"


def fix_until_done(source: str) -> tuple[str, list[int]]:
    """What the CLI does (its own loop): apply every fix that does not collide, re-lint,
    repeat; the number of findings before each pass."""
    from gradcheck.lint.document import Document
    from gradcheck.lint.fixes import fix_document

    counts: list[int] = []

    def lint(document: Document) -> list:
        found = check_source(document.program, strict=True)
        counts.append(len(found))
        return found

    fixed = fix_document(Document(source), lint, unsafe=True)[0].program
    compile(fixed, "fixed.py", "exec")
    return fixed, counts


@settings(max_examples=150, deadline=None)
@given(block, st.booleans())
def test_fixing_reaches_a_fixed_point_and_never_adds_findings(body, epochs) -> None:
    source = render(body, epochs)
    fixed, counts = fix_until_done(source)
    assert counts == sorted(counts, reverse=True) or counts[-1] < counts[0], (counts, source)
    assert counts[-1] <= counts[0], source
    # A second `--fix` run finds nothing to apply.
    assert all(f.fix is None for f in check_source(fixed, strict=True)), fixed


@settings(max_examples=60, deadline=None)
@given(block, st.booleans())
def test_the_same_source_gives_the_same_findings_and_fixes(body, epochs) -> None:
    source = render(body, epochs)
    first, second = check_source(source, strict=True), check_source(source, strict=True)
    assert [(f, f.fix) for f in first] == [(f, f.fix) for f in second], source


# the reproduction: before, each --fix run added ten more resets after the step
OOM_TOLERANT = (Path(__file__).resolve().parents[2] / "fixtures" / "lint" / "shapes"
                / "good_oom_tolerant_loop.py").read_text(encoding="utf-8")


def test_an_oom_tolerant_loop_is_clean_and_left_alone() -> None:
    assert check_source(OOM_TOLERANT, strict=True) == []
    assert fix_until_done(OOM_TOLERANT) == (OOM_TOLERANT, [0])


def test_a_fix_that_does_not_remove_its_finding_is_withdrawn() -> None:
    from lint_rules.finding import Edit, Finding, Fix
    from lint_rules.proof import proven

    source = "for b in data:\n    model(b).backward()\n    opt.step()\n"
    real = check_source(source, strict=True)
    assert [f.code for f in real] == ["GC002"] and real[0].fix is not None
    # The same finding with a fix that only adds a comment proves nothing.
    useless = Finding(real[0].line, real[0].column, "GC002", "missing-zero-grad", "m",
                      fix=Fix("noop", (Edit(0, 0, "# hi\n"),)))
    lint = lambda text: check_source(text, strict=True)
    assert proven(source, [useless], lint)[0].fix is None
    assert proven(source, real, lint)[0].fix is real[0].fix
