"""GC001 zero-grad-between-backward-and-step."""
from __future__ import annotations

from typing import ClassVar

from lint_rules import evidence, fixes
from lint_rules.rules.base import Invalid, Rule, Valid, crosses_modules, short


class ZeroGradBetweenBackwardAndStep(Rule):
    """## What it does
    Flags a gradient reset (`optimizer.zero_grad()`, `model.zero_grad()`, `p.grad = None`, a loop
    zeroing every parameter) that runs after a `backward()` whose gradients a later `step()` was
    meant to apply. Beyond the textbook `backward(); zero_grad(); step()`, it follows loops: a
    reset on every micro-batch while `step()` runs only every k-th iteration, a `model.zero_grad()`
    inside `with accelerator.accumulate(model):` (accelerate gates the optimizer's methods, not
    the model's), and Lightning manual optimisation that resets in `training_step` but steps
    every k calls.

    ## Why is this bad?
    The step sees only the gradients of the last backward pass (or none at all). Gradient
    accumulation silently degrades into a small-batch update with a mis-scaled loss, or the
    model does not learn at all. Nothing crashes, so the bug survives until someone wonders
    why the loss curve looks wrong.

    ## Known problems
    Receivers are recognised by where their values come from (constructors in the file or the
    project, annotations, `accelerator.prepare`), and by name only when nothing else is known;
    an optimizer passed in under a name like `net_params` is not recognised, and the rule then
    stays silent. Conditions are compared by their text, so `if step % k == 0` and
    `if is_update_step` are treated as unrelated.
    A step that runs only some iterations is taken to be an accumulation window when its test
    is a counter test (`%`, a flag assigned from one, or a comparison that the guarded block
    restarts, such as `if tokens_seen >= tokens_per_step: ...; tokens_seen = 0`); under any
    other guard (`if math.isfinite(norm):`, `if epoch >= warmup:`) skipping the step drops the
    batch on purpose, so a reset at the top of the next iteration is not reported. A reset
    under the same counter test as the backward pass is no window: the block is the window.
    A `finally:` reset after an exception handler, and a reset outside the loop that runs the
    backward passes (`zero_grad()` at the top of an epoch, before the micro-batch loop),
    discard gradients on purpose too. A reset under a guard of its own (`if accum_steps == 1:`)
    is not compared with a counter-gated step, since nothing relates the two tests.
    A prepared optimizer's `zero_grad()` right after a `with accelerator.accumulate(...)`
    block is gated by the same sync flag, as accelerate does.

    `straight` is reported by default only when the reset is the stepped optimizer's own (or
    that of the network it was built over), the step takes no argument of its own, and
    nothing between the two reads or writes a gradient. Otherwise (a part of the network
    cleared to freeze it, another optimizer's reset, gradients saved and written back, a
    project optimizer's `step(objective)`) the finding is `unproven`, reported with
    `--preview` only. Each of the 13 `straight` false alarms of test6 and test7, re-run
    through their frozen linters with this split, became `unproven` (the split was made
    after reading them; no `straight` finding on held-out code has been a real bug).

    ## Precision
    On the file-level part `test24` (210 training files of 149 repositories, each linted
    alone, scored at b1f4f59): `window` 1 real bug (a reset on every batch of a detection
    trainer that steps every `n_accum` batches).
    On the twenty-first to twenty-third held-out parts (`test21` to `test23`, 305
    repositories, scored at 6c88e98): `window` 1 debatable (a per-batch reset that drops
    gradients only when an option left at its default of 1 is raised); `gated` (with
    `--preview`) 1 false alarm (a step skipped on purpose for a non-finite loss or norm).
    On the file-level part `test20` (126 training files of 85 repositories, each linted alone,
    scored at 16bcb42): `window` 1 false alarm (a once-per-epoch reset before an accumulation
    whose remainder is stepped after the loop, read as a skipped step).
    On the small nineteenth held-out part (`test19`, 17 repositories, scored at 17d12a3): no
    finding by default; `gated` (with `--preview`) 3 false alarms, one shape: a reset under a
    non-finite-gradient guard that drops a bad window on purpose and skips its step.
    On the sixteenth to eighteenth held-out parts (`test16` to `test18`, 331 repositories,
    scored once at 78c63a9, and with the same findings at 58a6638): `window` 1 false alarm
    (an accumulation count bound to the literal 1 in the function, so the step runs every
    iteration; such a window is now read as every iteration) and 1 debatable (a reset per call
    of a wrapper whose accumulation count is 1 in every configuration).
    On the eleventh to thirteenth held-out parts (`test11` to `test13`, 312 repositories,
    scored once at ebb3b47): no finding by default; `gated` (with `--preview`) 1 real bug
    (sub-batches whose reset sits inside the sub-batch loop) and 2 false alarms (an
    "accumulation" loop over `range(1)`). On the file-level part `test14` (194 training
    files, scored at 19aa67b): `window` 1 debatable (an accumulation step count that defaults
    to 1).
    On the ninth and tenth held-out parts (`test9` and `test10`, 274 repositories, scored once
    at 9d1664e): no finding by default; `gated` (with `--preview`) 0 real bugs and 1 false
    alarm (an accumulation branch made dead by a constant).
    On the eighth held-out part (`test8`, 208 repositories, scored once at 8c79788):
    `window` 1 real bug; `straight` no finding; `gated` (with `--preview`) 0 real bugs and
    2 false alarms (adversarial fine-tuning whose helper writes saved gradients back before
    the step). Over test5 to test8, `straight` stands at 0 real bugs and 13 false alarms.
    On the seventh held-out part (`test7`, 206 repositories, scored once at 2547af3):
    `straight` 0 real bugs and 11 false alarms (a part of a network frozen on purpose by
    clearing its gradients before the step, a project optimizer whose `step(objective)` runs
    the backward itself, separate optimizers per sub-network); `window` 1 debatable; `gated`
    (with `--preview`) 0 real bugs and 3 false alarms.
    On the sixth held-out part (`test6`, 187 repositories, scored once at c9ed61b): `straight`
    0 real bugs and 2 false alarms, federated clients that clone the gradient, reset, and write
    a corrected gradient back before the step, on purpose.
    On the fifth held-out part (`test5`, 135 repositories, scored once at 72e8f7d after the
    forms were split): no finding, in any form.
    By form, on the first four held-out parts as first scored: `window` 8 real bugs and 1
    false alarm, `straight` 0 and 1, `gated` 0 and 2; `gated` runs only with `--preview`.
    Medium. On repositories held out from development (see docs/lint.md, "Precision"): 8
    real bugs and 4 false alarms over four held-out parts (66.7%): 8 and 3 on the first, no
    finding on the second, 0 and 1 on the third, 2 debatable on the fourth. The false alarms were steps skipped on
    purpose (a dry-run flag, now recognised; a warm-up that only fills a queue), a reset under
    `if i == 0:` (no longer reported), and a reset gated by a flag that the step sets again,
    which the analysis does not relate to the step.

    ## Example
    ```python
    for i, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
    ```

    ## Use instead
    ```python
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Fix safety
    The fix moves the reset to just after the step. For the straight-line form this is safe:
    the step then applies the gradients the code just computed. For loop-carried forms it is
    unsafe: the update now sums k micro-batches, so the effective batch size changes and the
    learning rate or the loss scaling may need review. When the step sits under a guard of
    its own inside the window's counter test (`if math.isfinite(norm): step()`), the reset
    goes after that guard, so a skipped step still ends the window. A reset in `finally:` or
    in an exception handler is never moved: it also clears what a failed batch left. A reset
    that shares its line with the step (`loss.backward(); opt.zero_grad(); opt.step()`)
    moves within that line, every other token left as written.
    """

    CODE = "GC001"
    NAME = "zero-grad-between-backward-and-step"
    MESSAGE = "zeroing discards gradients that a later step() was meant to apply"
    FIX_SAFETY = "mixed"

    VALID: ClassVar[list[Valid]] = [
        Valid(
            "for x, y in loader:\n"
            "    optimizer.zero_grad()\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
        ),
        Valid(
            "for i, (x, y) in enumerate(loader):\n"
            "    loss = criterion(model(x), y) / accum\n"
            "    loss.backward()\n"
            "    if (i + 1) % accum == 0:\n"
            "        optimizer.step()\n"
            "        optimizer.zero_grad()\n"
        ),
        Valid(
            "for x, y in loader:\n"
            "    with accelerator.accumulate(model):\n"
            "        loss = criterion(model(x), y)\n"
            "        accelerator.backward(loss)\n"
            "        optimizer.step()\n"
            "        optimizer.zero_grad()\n"
        ),
        Valid(
            "for real in loader:\n"
            "    opt_d.zero_grad()\n"
            "    loss_d = d_loss(netD, netG, real)\n"
            "    loss_d.backward()\n"
            "    opt_d.step()\n"
            "    opt_g.zero_grad()\n"
            "    loss_g = g_loss(netD, netG)\n"
            "    loss_g.backward()\n"
            "    opt_g.step()\n"
        ),
        Valid(
            "for x, y in loader:\n"
            "    try:\n"
            "        loss = criterion(model(x), y)\n"
            "        loss.backward()\n"
            "    except RuntimeError:\n"
            "        optimizer.zero_grad()  # drop the batch that ran out of memory\n"
            "        continue\n"
            "    optimizer.step()\n"
            "    optimizer.zero_grad()\n"
        ),
        Valid(
            "for i, x in enumerate(loader):\n"
            "    loss = model(x)\n"
            "    loss.backward()\n"
            "    if i % k == 0:\n"
            "        optimizer.step()\n"
            "    if i % k == 0:\n"
            "        optimizer.zero_grad()\n"
        ),
        Valid(
            "for batch in loader:\n"
            "    try:\n"
            "        model(batch).loss.backward()\n"
            "        optimizer.step()\n"
            "    except torch.cuda.OutOfMemoryError:\n"
            "        torch.cuda.empty_cache()\n"
            "    finally:\n"
            "        optimizer.zero_grad(set_to_none=True)\n"
        ),
        Valid(
            "optimizer = torch.optim.AdamW(model.parameters())\n"
            "for step, (x, y) in enumerate(loader):\n"
            "    criterion(model(x), y).backward()\n"
            "    if step < freeze_steps:\n"
            "        for p in backbone.parameters():\n"
            "            p.grad = None\n"
            "    optimizer.step()\n"
            "    optimizer.zero_grad()\n"
        ),
        Valid(
            "def train_epoch(model, loader, optimizer):\n"
            "    optimizer.zero_grad()  # drop what an unfinished window left\n"
            "    for i, (x, y) in enumerate(loader):\n"
            "        (criterion(model(x), y) / accum).backward()\n"
            "        if (i + 1) % accum == 0:\n"
            "            optimizer.step()\n"
            "            optimizer.zero_grad()\n"
        ),
        Valid(
            "for x, y in loader:\n"
            "    optimizer.zero_grad()\n"
            "    criterion(model(x), y).backward()\n"
            "    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "    if torch.isfinite(norm):  # a guard, not a counter: the batch is skipped\n"
            "        optimizer.step()\n"
        ),
        Valid(
            "for epoch in range(epochs):\n"
            "    optimizer.zero_grad()  # once an epoch\n"
            "    for i, (x, y) in enumerate(loader):\n"
            "        (criterion(model(x), y) / k).backward()\n"
            "        if (i + 1) % k == 0:\n"
            "            optimizer.step()\n"
            "            optimizer.zero_grad()\n"
            "    if len(loader) % k != 0:  # the batches left over\n"
            "        optimizer.step()\n"
            "        optimizer.zero_grad()\n"
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            "loss = criterion(model(x), y)\n"
            "loss.backward()\n"
            "optimizer.zero_grad()\n"
            "optimizer.step()\n",
            (3,),
            "loss = criterion(model(x), y)\n"
            "loss.backward()\n"
            "optimizer.step()\n"
            "optimizer.zero_grad()\n",
        ),
        Invalid(
            "for i, (x, y) in enumerate(loader):\n"
            "    optimizer.zero_grad()\n"
            "    loss = criterion(model(x), y) / accum\n"
            "    loss.backward()\n"
            "    if (i + 1) % accum == 0:\n"
            "        optimizer.step()\n",
            (2,),
            "for i, (x, y) in enumerate(loader):\n"
            "    loss = criterion(model(x), y) / accum\n"
            "    loss.backward()\n"
            "    if (i + 1) % accum == 0:\n"
            "        optimizer.step()\n"
            "        optimizer.zero_grad()\n",
        ),
        Invalid(
            "for x, y in loader:\n"
            "    with accelerator.accumulate(model):\n"
            "        loss = criterion(model(x), y)\n"
            "        accelerator.backward(loss)\n"
            "        optimizer.step()\n"
            "        model.zero_grad()\n",
            (6,),
            "for x, y in loader:\n"
            "    with accelerator.accumulate(model):\n"
            "        loss = criterion(model(x), y)\n"
            "        accelerator.backward(loss)\n"
            "        optimizer.step()\n"
            "        optimizer.zero_grad()\n",
        ),
        Invalid(
            "class Model(LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        opt = self.optimizers()\n"
            "        opt.zero_grad()\n"
            "        loss = self.compute_loss(batch)\n"
            "        self.manual_backward(loss)\n"
            "        if (batch_idx + 1) % 4 == 0:\n"
            "            opt.step()\n",
            (4,),
            "class Model(LightningModule):\n"
            "    def training_step(self, batch, batch_idx):\n"
            "        opt = self.optimizers()\n"
            "        loss = self.compute_loss(batch)\n"
            "        self.manual_backward(loss)\n"
            "        if (batch_idx + 1) % 4 == 0:\n"
            "            opt.step()\n"
            "            opt.zero_grad()\n",
        ),
        Invalid(
            "for x in loader:\n"
            "\tloss = model(x)\n"
            "\tloss.backward()\n"
            "\tfor p in model.parameters():\n"
            "\t\tp.grad = None\n"
            "\toptimizer.step()\n",
            (4,),
            "for x in loader:\n"
            "\tloss = model(x)\n"
            "\tloss.backward()\n"
            "\toptimizer.step()\n"
            "\tfor p in model.parameters():\n"
            "\t\tp.grad = None\n",
        ),
        Invalid(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward(); optimizer.zero_grad(); optimizer.step()  # one line\n",
            (3,),
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward(); optimizer.step(); optimizer.zero_grad()  # one line\n",
        ),
    ]

    PATTERNS: ClassVar[dict[str, str]] = {
        "straight": "a reset between a backward pass and the step of the same iteration",
        "unproven": "as `straight`, but the reset is not the stepped optimizer's own (a part of a network, another receiver), something between it and the step touches gradients, or the step takes arguments of its own",
        "window": "a reset on every iteration while the step runs only under a counter test (`i % k == 0`) or accelerate's sync step",
        "gated": "a reset on every iteration while the step runs only under another test (a flag, a comparison), related across iterations by the analysis",
    }
    PREVIEW: ClassVar[frozenset[str]] = frozenset({"gated", "unproven"})

    @classmethod
    def check(cls, analysis) -> list:
        findings = []
        for issue in analysis.gc001:
            edits, safe = (None, True) if crosses_modules(issue) else _fix(analysis, issue)
            findings.append(
                cls.finding(analysis, issue.at.node, _message(issue), edits, safe=safe,
                            description="move the reset to just after the step",
                            pattern=_form(analysis, issue))
            )
        return findings


def _form(analysis, issue) -> str:
    """``straight``: the reset sits between a backward and the step of the same iteration;
    ``window``: a reset on every iteration against a step gated by a counter test or by
    accelerate's sync flag; ``gated``: against a step gated by any other test, whose
    relation to the reset rests on the analysis of flags across iterations."""
    if not issue.loop_carried:
        return "straight" if evidence.resets_the_stepped_optimizer(analysis, issue) else "unproven"
    if issue.counter_gated or "<sync>" in issue.conditions:
        return "window"
    return "gated"


def _nearest_backward(issue):
    """The backward pass the reset follows most closely in its own file (the loop's own,
    rather than one inside a helper the loop called first), else the first one known."""
    zero = issue.at
    before = [b for b in issue.backwards if b.source is zero.source and b.line <= zero.line]
    if before:
        return max(before, key=lambda b: (b.line, b.col))
    return issue.backwards[0] if issue.backwards else None


def _message(issue) -> str:
    zero, step = issue.at, issue.step
    bw = _nearest_backward(issue) if not issue.loop_carried else \
        issue.backwards[0] if issue.backwards else None
    z = f"`{short(zero.text)}` (line {zero.line})"
    s = f"`{short(step.text)}` (line {step.line})"
    b = f"`{short(bw.text)}` (line {bw.line})" if bw else "the backward pass"
    if not issue.loop_carried:
        return f"{z} clears the gradients of {b} before {s} applies them, so that step has nothing to apply."
    condition = issue.conditions[-1] if issue.conditions else None
    if condition == "<sync>":
        return (f"{z} runs on every micro-batch, but inside `accumulate()` {s} only acts on the "
                f"sync step: the gradients {b} accumulated in between are discarded.")
    if condition:
        return (f"{z} runs on every iteration, but {s} runs only when `{condition}`: the "
                f"gradients {b} computed in the iterations in between are discarded.")
    return (f"{z} runs more often than {s}: it discards the gradients {b} accumulated since the "
            f"last step, so each step applies only the last backward pass.")


def _fix(analysis, issue):
    import ast

    zero_stmt = analysis.statement_of(issue.at.node)
    step_stmt = analysis.statement_of(issue.step.node)
    if zero_stmt is None or step_stmt is None:
        return None, True
    if type(zero_stmt) is ast.Expr and zero_stmt.value is not issue.at.node:
        return None, True
    if analysis.function_of(zero_stmt) is not analysis.function_of(step_stmt):
        return None, True
    if _in_cleanup(analysis, zero_stmt):
        # The reset also clears what a failed iteration left; moving it would let that leak.
        return None, True
    step_stmt = _window_end(analysis, step_stmt, zero_stmt)
    replacement = None
    receiver = issue.at.target
    if "<sync>" in issue.conditions and not analysis.index.is_optimizer(receiver):
        # accelerate gates only the optimizer's own zero_grad(), so switch to it.
        replacement = f"{analysis.optimizer_text(issue.step)}.zero_grad()"
    edits = fixes.move_after(zero_stmt, step_stmt, analysis.text,
                             sole=analysis.is_sole_statement(zero_stmt), replacement=replacement)
    return edits, not issue.loop_carried


def _in_cleanup(analysis, node) -> bool:
    """Whether ``node`` sits in an ``except`` handler or a ``finally:`` block of its function."""
    import ast

    from lint_rules import syntax

    child, current = node, analysis.index.parents.get(id(node))
    while current is not None and not isinstance(current, syntax.SCOPES):
        if type(current) is ast.ExceptHandler:
            return True
        if isinstance(current, syntax.TRIES) and any(s is child for s in current.finalbody):
            return True
        child, current = current, analysis.index.parents.get(id(current))
    return False

def _window_end(analysis, step_stmt, zero_stmt):
    """Where the moved reset goes: after the step, or after the ``if`` around the step that
    sits beside the reset; when the step sits under a guard of its own inside the counter test
    that closes the window (`if (i + 1) % k == 0:` then
    `if math.isfinite(norm): step()`), after that guard, so that a skipped step still ends the
    window with a reset instead of leaving gradients to pile up forever."""
    import ast

    from lint_rules import syntax

    around_zero = set()
    node = analysis.index.parents.get(id(zero_stmt))
    while node is not None:
        around_zero.add(id(node))
        node = analysis.index.parents.get(id(node))
    anchor = step_stmt
    node = analysis.index.parents.get(id(step_stmt))
    while node is not None and id(node) not in around_zero:
        if isinstance(node, (*syntax.LOOPS, *syntax.WITHS, *syntax.SCOPES)):
            break
        if type(node) is ast.If:
            if analysis.index.is_counter_test(node.test):
                return anchor  # the window's own test: the reset goes last inside it
            anchor = node
        node = analysis.index.parents.get(id(node))
    # `if fp16: scaler.step(opt) else: opt.step()` beside the reset: after the whole `if`,
    # so that every branch still resets, and as often as before
    return anchor
