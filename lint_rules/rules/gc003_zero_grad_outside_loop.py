"""GC003 zero-grad-outside-loop."""
from __future__ import annotations

from typing import ClassVar

from lint_rules import fixes
from lint_rules.rules.base import Invalid, Rule, Valid, short


class ZeroGradOutsideLoop(Rule):
    """## What it does
    Flags a gradient reset that runs once, before the loop that does `backward()` and `step()`,
    when nothing inside that loop resets the same optimizer: a single `zero_grad()` at module
    level, at the top of a function, or before an inner batch loop.

    ## Why is this bad?
    The first step is correct, and every later one applies the sum of all gradients seen so
    far. Training looks fine for a few batches and then drifts or diverges, which makes the
    bug easy to misread as a learning-rate problem.

    ## Known problems
    When the reset happens in a caller in another module, the rule cannot see it. When the
    loop is meant to accumulate gradients over the whole epoch, `step()` belongs after the
    loop, and then this rule does not fire.

    ## Precision
    No finding on the file-level part `test24` (210 training files, scored at b1f4f59).
    No finding on the twenty-first to twenty-third held-out parts (`test21` to `test23`, 305
    repositories, scored at 6c88e98).
    3 debatable findings on the sixteenth to eighteenth held-out parts (`test16` to `test18`,
    331 repositories, scored at 78c63a9): speed and memory benchmarks on constant data whose
    gradients nothing uses.
    1 debatable finding on the eleventh to thirteenth held-out parts (`test11` to `test13`,
    312 repositories, scored at ebb3b47): gradients do pile up, in a function that nothing in
    its repository calls.
    No finding on the ninth and tenth held-out parts (`test9` and `test10`, 274 repositories,
    scored at 9d1664e).
    No finding on the eighth held-out part (`test8`, 208 repositories, scored at 8c79788).
    3 debatable findings on the seventh held-out part (`test7`, 206 repositories, scored at
    2547af3): graph examples whose loader yields one batch per epoch.
    No finding on the sixth held-out part (`test6`, 187 repositories, scored at c9ed61b).
    No finding on the fifth held-out part (`test5`, 135 repositories, scored at 72e8f7d).
    Not established: 2 real bugs and no false alarm on the held-out parts, and 3 debatable
    findings (a benchmark of an attention layer).

    ## Example
    ```python
    optimizer.zero_grad()
    for x, y in loader:
        criterion(model(x), y).backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    ```

    ## Fix safety
    The fix moves the reset to the top of the loop body. It is unsafe: a human should confirm
    that the loop was not meant to accumulate, and reporting code that reads `.grad` after the
    loop sees different values.
    """

    CODE = "GC003"
    NAME = "zero-grad-outside-loop"
    MESSAGE = "the only gradient reset runs once, before the loop that steps"
    FIX_SAFETY = "unsafe"

    VALID: ClassVar[list[Valid]] = [
        Valid(
            "optimizer.zero_grad()\n"
            "for x, y in loader:\n"
            "    criterion(model(x), y).backward()\n"
            "optimizer.step()\n"
        ),
        Valid(
            "for epoch in range(epochs):\n"
            "    for x, y in loader:\n"
            "        optimizer.zero_grad()\n"
            "        criterion(model(x), y).backward()\n"
            "        optimizer.step()\n"
        ),
        Valid(
            "model.zero_grad()\n"
            "while True:\n"
            "    for micro in range(accum):\n"
            "        scaler.scale(model(next_batch())).backward()\n"
            "    scaler.step(optimizer)\n"
            "    scaler.update()\n"
            "    optimizer.zero_grad(set_to_none=True)\n"
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            "optimizer.zero_grad()\n"
            "for x, y in loader:\n"
            "    criterion(model(x), y).backward()\n"
            "    optimizer.step()\n",
            (1,),
            "for x, y in loader:\n"
            "    optimizer.zero_grad()\n"
            "    criterion(model(x), y).backward()\n"
            "    optimizer.step()\n",
        ),
        Invalid(
            "for epoch in range(epochs):\n"
            "    optimizer.zero_grad()\n"
            "    for x, y in loader:\n"
            "        loss = criterion(model(x), y)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
            (2,),
            "for epoch in range(epochs):\n"
            "    for x, y in loader:\n"
            "        optimizer.zero_grad()\n"
            "        loss = criterion(model(x), y)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
        ),
        Invalid(
            "for opt in optimizers:\n"
            "    opt.zero_grad()\n"
            "for batch in loader:\n"
            "    model(batch).sum().backward()\n"
            "    for opt in optimizers:\n"
            "        opt.step()\n",
            (1,),
            "for batch in loader:\n"
            "    for opt in optimizers:\n"
            "        opt.zero_grad()\n"
            "    model(batch).sum().backward()\n"
            "    for opt in optimizers:\n"
            "        opt.step()\n",
        ),
    ]

    @classmethod
    def check(cls, analysis) -> list:
        findings = []
        for zero, loop, issue in analysis.gc003:
            step, bw = issue.step, issue.backwards[0]
            message = (
                f"`{short(zero.text)}` (line {zero.line}) is the only reset and runs once, before the "
                f"loop at line {analysis.text.first_line(loop)}, where `{short(bw.text)}` (line {bw.line}) and "
                f"`{short(step.text)}` (line {step.line}) run on every iteration: each step after the "
                f"first applies the sum of all earlier gradients."
            )
            stmt = analysis.statement_of(zero.node)
            edits = None
            body = analysis.body_of(loop)
            if stmt is not None and body:
                edits = fixes.move_before(stmt, body[0], analysis.text,
                                          sole=analysis.is_sole_statement(stmt))
            findings.append(cls.finding(analysis, zero.node, message, edits, safe=False,
                                        description="move the reset to the top of the loop"))
        return findings
