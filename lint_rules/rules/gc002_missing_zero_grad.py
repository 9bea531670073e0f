"""GC002 missing-zero-grad."""
from __future__ import annotations

from typing import ClassVar

from lint_rules import evidence, fixes
from lint_rules.effects import ALIAS_PREFIX
from lint_rules.rules.base import Invalid, Rule, Valid, crosses_modules, short


class MissingZeroGrad(Rule):
    """## What it does
    Flags an optimizer `step()` that applies gradients an earlier step already applied:

    - **stale**: on some path through the loop, nothing resets the optimizer between one step
      and the next backward, so the next step applies both;
    - **restep**: a second step with no backward and no reset since the last one, on every
      path that reaches it, applies the same gradients again;
    - **foreign**: another network's loss left gradients in this optimizer's parameters (a GAN
      generator's loss goes through the discriminator) and its owner reset only its own share,
      so the next backward adds to them: the resets of a GAN or actor-critic loop are swapped;
    - **alias**: a model's gradients were handed to another by reference
      (`shared_param._grad = local_param.grad`), and the optimizer's `zero_grad()` sets its own
      `.grad` to None (the default since torch 2.0), so the local tensors keep growing.

    The check is per optimizer and per path, so a GAN that never zeroes its generator's
    optimizer, or a loop that zeroes only in its AMP branch, is caught at the step that goes
    wrong.

    ## Why is this bad?
    `backward()` adds into `.grad`. Without a reset, step n applies the sum of the gradients of
    iterations 1..n, so old batches keep pushing the weights long after they were seen; the
    loss oscillates or diverges instead of falling.

    ## Known problems
    A reset done by code the analysis cannot see (a callback, a third-party library, a
    DeepSpeed-style engine whose `step()` clears gradients itself) is invisible; functions and
    classes of other modules of the project are followed. The rule only reports optimizers it
    can name, and stays silent when a step's receiver is unknown, when `step()` is handed an
    unknown closure or a value (`higher`'s `step(loss)`), and on `optimizer_step(...)` of
    anything but torch_xla.
    A function that this file calls is judged where it is called, with what each call passes
    (`optimizer=None` left out is no optimizer; `do_zero_grad=False` decides its `if`). A
    function that this file never calls is judged as if it ran once per batch (as dslinter's
    W5517 does), and so is one it only hands to another call (`Engine(update)`), unless it
    steps an optimizer its caller passes in (a loss scaler's `__call__`): that one is left to
    its callers, so a bug inside it whose callers live in another file goes unreported. Test
    functions (`test_*`, `setUp`) run once. Code inside `with pytest.raises(...)` or
    `self.assertRaises(...)` is expected to fail and is not judged.
    When the steps on several branches (`scaler.step(opt)` under AMP, `opt.step()` otherwise)
    miss the same reset, one finding names them all.
    A name the loop binds anew each iteration (`for model, opt in zip(models, opts):`,
    `opt = optimizers[i]`) is a different optimizer every time, so nothing is carried over for
    it; `for opt in optimizers:` inside a training loop steps each member once, and the
    training loop around it carries the state of all of them. The rule stays silent about a
    rebound optimizer even when its model keeps its gradients between iterations.

    `stale` is reported by default only when nothing else in the file could be the missing
    reset: every reset outside the functions the analysis followed is another optimizer's
    built here, or acts on a parameter or a local of its own function. A reset kept on `self`
    or a global (a method never seen called, a callback), a helper named for zeroing, a write
    to `.grad` through either, or a step inside another module's function, turns the finding
    into `unproven`, reported with `--preview` only; so does a step whose gradients only a
    caller out of sight would carry (a method no loop here calls, judged as if run once per
    batch: that caller may reset before each call), unless a framework runs it once per
    batch (`training_step`). Each of the 17 `stale` false alarms of test6 to test8, re-run
    through their frozen linters with this split, became `unproven`, and each of their 4
    real bugs stayed `stale` (the split was made after reading them).

    ## Precision
    On the twenty-fifth to twenty-seventh held-out parts (`test25` to `test27`, 264
    repositories of course, tutorial and hobby code, scored at f499c73): `stale` 8 real bugs,
    1 false alarm and 1 debatable (the false alarm a course's NumPy `SGD`, re-exported by its
    package, whose module names no gradient or optimizer: such a class is no torch optimizer
    since, so the finding is `unproven`); `alias` 4 false alarms and 1 debatable (A3C workers
    whose module never runs, whose shared Adam cannot step on torch 2, or whose step is on a
    branch that never hands gradients over: which tensors are handed over is not followed per
    path); `unproven` (with `--preview`) 1 real bug and 6 false alarms; `skipped` 1 false
    alarm. Over every held-out part as first scored, `alias` stands at 2 real bugs, 6 false alarms
    and 5 debatable (most A3C code predates torch 2.0, where `zero_grad()` zeroed the handed-over
    tensors in place), so it runs with `--preview` only since.
    On the file-level part `test24` (210 training files of 149 repositories, each linted
    alone, scored at b1f4f59): `stale` 2 real bugs; `foreign` 1 false alarm (a MAML inner
    loop on a `deepcopy` of the network, taken for the network the meta-optimizer holds, by
    the name of its parameter; a parameter stands only for what its caller passed since).
    On the twenty-first to twenty-third held-out parts (`test21` to `test23`, 305
    repositories, scored at 6c88e98): `restep` 1 real bug (a step on every batch, then the
    window's step with no backward between) and 5 false alarms, one shape in five trainers
    of one repository (a step for the leftover batches after the loop, under the window's own
    counter, which the window's step sets back; no re-step since); `stale` 2 false alarms (a
    GAN trainer that keeps each handed-in optimizer under two attribute names, one set by a
    base class in another module; such a reset may be the stepped optimizer's since). With
    `--preview`: `skipped` 1 real bug, 4 false alarms and 1 debatable, `unproven` 1 real bug.
    On the file-level part `test20` (126 training files of 85 repositories, scored at
    16bcb42): `restep` 1 real bug (`scaler.step(opt)` then `opt.step()` on every batch).
    On the small nineteenth held-out part (`test19`, 17 repositories, scored at 17d12a3):
    `foreign` 2 real bugs (a GAN generator stepped on the discriminator's gradients) and
    5 debatable (the same loop in scripts that crash before it); `stale` 2 false alarms (an
    exercise's NumPy `Adam`, handed in as a parameter's default; such a default is no torch
    optimizer since) and 1 debatable (a bug planted for a debugging exercise).
    On the sixteenth to eighteenth held-out parts (`test16` to `test18`, 331 repositories,
    scored once at 78c63a9, and with the same findings at 58a6638): `stale` 3 real bugs,
    3 false alarms and 5 debatable; `alias` 1 false alarm. Two false alarms are a course's
    own NumPy optimizer imported under torch's class name (`from mytorch.optim.adam import
    Adam`), whose backward assigns gradients; such a class, imported from neither torch nor a
    torch-optimizer library, is now the module's own (`unproven`). One is a resume loop that
    fast-forwards the scheduler with bare steps before training starts (`if epoch <
    start_epoch:`), read as following a training epoch; one is an A3C worker's shared-Adam
    alias that only torch 2's `set_to_none` breaks, on an optimizer that cannot step there.
    On the eleventh to thirteenth held-out parts (`test11` to `test13`, 312 repositories,
    scored once at ebb3b47): `stale` 5 real bugs, 3 false alarms and 2 debatable (an
    optimizer's self-test run only as `__main__`, twice). The false alarms are one shape: a
    meta-learning wrapper of another module whose `step(train_loss=..., val_loss=...)` resets
    what it wraps and writes hypergradients before stepping; such a step, and any object of a
    project class that derives from no optimizer, is no longer read with torch's semantics.
    Frozen again at 19aa67b before test11 and test12 were read: the same findings there; on
    the file-level part `test14` (194 training files of 187 repositories, each linted
    alone), `stale` 2 real bugs and no false alarm; on `test15` (28 course notebooks),
    1 false alarm (an optimizer built by a callable handed in, a course's own SGD whose
    `step()` clears the gradients; now `unproven`).
    On the ninth and tenth held-out parts (`test9` and `test10`, 274 repositories, scored once
    at 9d1664e, the first after the `unproven` split): `stale` 2 real bugs and 3 false alarms
    (a weight average named like an optimizer, defined in a module the analysis did not then
    read; a per-batch helper whose caller in another module resets before each call, now
    `unproven`); `skipped` (with `--preview`) 0 real bugs and 1 false alarm.
    On the eighth held-out part (`test8`, 208 repositories, scored once at 8c79788): `stale`
    0 real bugs, 6 false alarms and 1 debatable (agents written for NVIDIA Warp, whose
    `tape.zero()` clears what `tape.backward()` filled; such modules are no longer read).
    Over test5 to test8, `stale` stands at 4 real bugs and 17 false alarms.
    On the seventh held-out part (`test7`, 206 repositories, scored once at 2547af3): `stale` 2
    real bugs and 7 false alarms (optimizers reset through a dict by name or through a
    wrapper built around them, a reset written out over parameter groups in another module);
    `alias` 1 real bug and 1 false alarm; `skipped` (with `--preview`) 1 real bug and 6 false
    alarms.
    On the sixth held-out part (`test6`, 187 repositories, scored once at c9ed61b): `stale` 2
    real bugs and 4 false alarms (resets inside per-objective loss helpers and a model's own
    per-batch method that the analysis did not follow), 1 debatable; `alias` 4 debatable (A3C
    and ACER workers, bugs only where `zero_grad()` sets gradients to None); `skipped` 2 real
    bugs and 2 false alarms.
    On the fifth held-out part (`test5`, 135 repositories, scored once at 72e8f7d after the
    forms were split): the default forms 1 real bug (`alias`, an A3C worker whose local
    gradients are never cleared) and no false alarm; `skipped` 1 real bug and 2 false alarms
    (an accumulation window kept by one counter, and a reset through a model that a
    one-element ModuleList hands the optimizer).
    By form, on the first four held-out parts as first scored: `stale` (the loop never resets
    the optimizer) 3 real bugs and no false alarm, `skipped` (a reset on some paths only) 2
    and 11; `skipped` runs only with `--preview`. Overall, as first reported:
    Low for the `stale` form on held-out repositories: 5 real bugs and 11 false alarms over
    four held-out parts (31%), and most other findings there were unit tests that pile up
    gradients knowingly (debatable). The false alarms: a reset and a step in two helpers
    guarded by the same condition, read as independent; a window whose reset and step come
    from two different tests of one counter, or from a flag the step sets; branches on a
    run-wide constant mixed across calls; a look-ahead or line-search step whose gradient is
    meant to be reused; an optimizer class that inherits its `zero_grad`; a `step()` whose
    argument was named like an optimizer but held a count. The `restep`, `foreign` and
    `alias` forms have too few held-out findings to state a figure.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Fix safety
    The fix inserts `<optimizer>.zero_grad()` right after the step (after each step the
    finding names), at the same indentation; for `opt.step(closure)` it goes first in the
    closure's body, which the optimizer calls before every evaluation; a step that shares its
    line (`opt.step(); scheduler.step()`) gets the reset right after it on that line. No fix is offered for
    an optimizer built with a class that has no `zero_grad()` (`DistributedOptimizer`).
    After a step has applied the gradients, resetting them changes nothing but the next
    step's input, which is exactly what was wrong. The fix is safe when the file shows that
    the receiver has a `zero_grad()`: it builds it with an optimizer class, annotates it as
    an optimizer, or resets it elsewhere. When only its name says so (a parameter called
    `optimizer`), the fix is unsafe and applies only with `--unsafe-fixes`.
    """

    CODE = "GC002"
    NAME = "missing-zero-grad"
    MESSAGE = "step() applies gradients that still hold backward passes an earlier step applied"
    FIX_SAFETY = "mixed"
    PATTERNS: ClassVar[dict[str, str]] = {
        "stale": "the loop never resets this optimizer: each backward pass adds to gradients a step already applied",
        "unproven": "as `stale`, but the file resets gradients somewhere the analysis cannot tie to an optimizer (a helper, a collection, a write to `.grad`), or only a caller out of sight would repeat the step: either may hold the missing reset",
        "skipped": "the loop resets this optimizer on some paths, and a path that skips the reset carries applied gradients into the next step",
        "restep": "a second step with no backward and no reset in between applies the same gradients again",
        "foreign": "another network's loss left gradients in this optimizer's parameters (reset order of a GAN or actor-critic loop)",
        "alias": "gradients handed to another model by reference (`p._grad = q.grad`) are never cleared where they live",
    }

    VALID: ClassVar[list[Valid]] = [
        Valid(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "    optimizer.zero_grad(set_to_none=True)\n"
        ),
        Valid(
            "for x, y in loader:\n"
            "    optimizer.zero_grad()\n"
            "    with torch.autocast('cuda'):\n"
            "        loss = criterion(model(x), y)\n"
            "    scaler.scale(loss).backward()\n"
            "    scaler.step(optimizer)\n"
            "    scaler.update()\n"
            "    scheduler.step()\n"
        ),
        Valid(
            "for x, y in loader:\n"
            "    def closure():\n"
            "        optimizer.zero_grad()\n"
            "        loss = criterion(model(x), y)\n"
            "        loss.backward()\n"
            "        return loss\n"
            "    optimizer.step(closure)\n"
        ),
        Valid(
            "for batch in loader:\n"
            "    loss = model_engine(batch)\n"
            "    model_engine.backward(loss)\n"
            "    model_engine.step()\n"
        ),
        Valid(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    grads = torch.autograd.grad(loss, list(model.parameters()))\n"
            "    for p, g in zip(model.parameters(), grads):\n"
            "        p.grad = g\n"
            "    optimizer.step()\n"
        ),
        Valid(
            "# each iteration binds another optimizer: nothing is carried over\n"
            "for lib, model, opt in ((torch, t_model, t_opt), (ref, r_model, r_opt)):\n"
            "    lib.nn.functional.mse_loss(model(x), y).backward()\n"
            "    opt.step()\n"
        ),
        Valid(
            "for i in range(len(configs)):\n"
            "    optimizer = optimizers[i]\n"
            "    criterion(models[i](x), y).backward()\n"
            "    optimizer.step()\n"
        ),
        Valid(
            "def train(self, loader):\n"
            "    optimizer = self.optimizer\n"
            "    for x, y in loader:\n"
            "        optimizer.zero_grad()\n"
            "        criterion(self.model(x), y).backward()\n"
            "        self.optimizer.step()\n"
        ),
        Valid(
            "class Trainer:\n"
            "    def training_step(self, batch):\n"
            "        self.model(batch).loss.backward()\n"
            "        self.optimizer.step()\n"
            "\n"
            "    def fit(self, loader):\n"
            "        for batch in loader:\n"
            "            self.optimizer.zero_grad()\n"
            "            self.training_step(batch)\n"
        ),
        Valid(
            "# a wrapper (NoamOpt) and the optimizer it wraps share one set of gradients\n"
            "for batch in loader:\n"
            "    compute_loss(model, batch).backward()\n"
            "    model_opt.step()\n"
            "    model_opt.optimizer.zero_grad()\n"
        ),
        Valid(
            "for epoch in range(epochs):\n"
            "    if epoch < start_epoch:  # resuming: catch the schedule up, before any training\n"
            "        for _ in range(len(loader)):\n"
            "            optimizer.step()\n"
            "            scheduler.step()\n"
            "        continue\n"
            "    for x, y in loader:\n"
            "        optimizer.zero_grad()\n"
            "        criterion(model(x), y).backward()\n"
            "        optimizer.step()\n"
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            "for epoch in range(epochs):\n"
            "    if epoch >= frozen_from:  # after epochs that trained: their gradients again\n"
            "        for _ in range(len(loader)):\n"
            "            optimizer.step()\n"
            "        continue\n"
            "    for x, y in loader:\n"
            "        optimizer.zero_grad()\n"
            "        criterion(model(x), y).backward()\n"
            "        optimizer.step()\n",
            (4,),
        ),
        Invalid(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n",
            (4,),
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "    optimizer.zero_grad()\n",
        ),
        Invalid(
            "for real in loader:\n"
            "    opt_d.zero_grad()\n"
            "    d_loss(netD, netG, real).backward()\n"
            "    opt_d.step()\n"
            "    g_loss(netD, netG).backward()\n"
            "    opt_g.step()\n",
            (6,),
            "for real in loader:\n"
            "    opt_d.zero_grad()\n"
            "    d_loss(netD, netG, real).backward()\n"
            "    opt_d.step()\n"
            "    g_loss(netD, netG).backward()\n"
            "    opt_g.step()\n"
            "    opt_g.zero_grad()\n",
        ),
        Invalid(
            "for x, y in loader:\r\n"
            "    if use_amp:\r\n"
            "        optimizer.zero_grad()\r\n"
            "        scaler.scale(criterion(model(x), y)).backward()\r\n"
            "        scaler.step(optimizer)\r\n"
            "        scaler.update()\r\n"
            "    else:\r\n"
            "        criterion(model(x), y).backward()\r\n"
            "        optimizer.step()\r\n",
            (9,),
            "for x, y in loader:\r\n"
            "    if use_amp:\r\n"
            "        optimizer.zero_grad()\r\n"
            "        scaler.scale(criterion(model(x), y)).backward()\r\n"
            "        scaler.step(optimizer)\r\n"
            "        scaler.update()\r\n"
            "    else:\r\n"
            "        criterion(model(x), y).backward()\r\n"
            "        optimizer.step()\r\n"
            "        optimizer.zero_grad()\r\n",
        ),
        Invalid(
            "def train_step(model, opt, x, y):\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "\n"
            "for x, y in loader:\n"
            "    train_step(net, optimizer, x, y)\n",
            (4,),
            "def train_step(model, opt, x, y):\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "    opt.zero_grad()\n"
            "\n"
            "for x, y in loader:\n"
            "    train_step(net, optimizer, x, y)\n",
        ),
        Invalid(
            "for batch in loader:\n"
            "    for opt in optimizers:\n"
            "        loss_of(opt, batch).backward()\n"
            "        opt.step()\n",
            (4,),
            "for batch in loader:\n"
            "    for opt in optimizers:\n"
            "        loss_of(opt, batch).backward()\n"
            "        opt.step()\n"
            "        opt.zero_grad()\n",
        ),
        Invalid(
            "for x, y in loader:\n"
            "    criterion(model(x), y).backward()\n"
            "    optimizer.step(); scheduler.step()\n",
            (3,),
            "for x, y in loader:\n"
            "    criterion(model(x), y).backward()\n"
            "    optimizer.step(); optimizer.zero_grad(); scheduler.step()\n",
        ),
    ]

    PREVIEW: ClassVar[frozenset[str]] = frozenset({"skipped", "unproven", "alias"})

    @classmethod
    def check(cls, analysis) -> list:
        findings = []
        for issue in analysis.gc002:
            step = issue.step
            name = analysis.optimizer_text(step)
            if issue.optimizer.startswith(ALIAS_PREFIX):
                if issue.restep:
                    continue  # which step holds which handed-over tensors: not followed that far
                pattern, message = "alias", _alias_message(analysis, issue, name)
            elif issue.restep:
                pattern, message = "restep", _restep_message(issue, name)
            elif issue.foreign:
                pattern, message = "foreign", _foreign_message(issue, name)
            else:
                pattern = "skipped" if issue.reset_elsewhere else \
                    "stale" if evidence.nothing_else_resets(analysis, issue) else "unproven"
                message = _stale_message(issue, name)
            if issue.also:
                lines = " and ".join(str(other.line) for other in issue.also)
                plural = "s" * (len(issue.also) > 1)
                verb = "apply" if plural else "applies"
                message += f" The step{plural} on line{plural} {lines} {verb} the same stale gradients."
            if issue.restep:
                findings.append(cls.finding(analysis, step.node, message, pattern=pattern))
                continue
            if crosses_modules(issue):
                edits, safe = None, True
            elif issue.foreign:
                edits, safe = _foreign_fix(analysis, issue, name)
            else:
                edits, safe = _fix(analysis, issue)
            findings.append(cls.finding(analysis, step.node, message, edits, safe=safe,
                                        description=f"insert `{name}.zero_grad()` after the step",
                                        pattern=pattern))
        return findings


def _stale_message(issue, name: str) -> str:
    step, bw = issue.step, issue.backwards[0]
    where = "at the top of the closure" if _closure_step(step) else "after the step"
    return (f"`{short(step.text)}` (line {step.line}) applies stale gradients: `{short(bw.text)}` "
            f"(line {bw.line}) adds to gradients that an earlier step already applied, and "
            f"nothing resets `{name}` in between; call `{name}.zero_grad()` {where}.")


def _alias_message(analysis, issue, name: str) -> str:
    step, bw = issue.step, issue.backwards[0]
    model = issue.optimizer[len(ALIAS_PREFIX):]
    site = analysis.alias_sites[issue.optimizer]
    line = analysis.text.start(site)[0]
    return (f"`{short(step.text)}` (line {step.line}) applies stale gradients of `{model}`: "
            f"`{short(analysis.text.segment(site))}` (line {line}) hands `{name}` the very "
            f"tensors that hold them, and resetting `{name}` to None leaves them as they are, so "
            f"`{short(bw.text)}` (line {bw.line}) keeps adding to them; call `{model}.zero_grad()` "
            f"after the step.")


def _foreign_message(issue, name: str) -> str:
    step, own, other = issue.step, issue.backwards[0], issue.foreign[0]
    return (f"`{short(step.text)}` (line {step.line}) applies another network's gradients too: "
            f"`{short(other.text)}` (line {other.line}) backpropagates through the parameters "
            f"`{name}` holds, and nothing resets `{name}` before `{short(own.text)}` (line "
            f"{own.line}) adds to them; call `{name}.zero_grad()` before that backward.")


def _foreign_fix(analysis, issue, name: str) -> tuple[tuple | None, bool]:
    """A reset just before the optimizer's own first backward pass."""
    own = min(issue.backwards, key=lambda bw: bw.order)
    return _reset_before(analysis, analysis.statement_of(own.node), name)


def _reset_before(analysis, stmt, receiver: str) -> tuple[tuple | None, bool]:
    """``receiver.zero_grad()`` inserted before ``stmt``, and whether that is safe: the
    file shows the receiver has one (else only its name says so)."""
    key = "".join(receiver.split())
    if stmt is None or not analysis.index.can_zero(key):
        return None, True
    edits = fixes.insert_before(stmt, f"{receiver}.zero_grad()", analysis.text)
    return edits, analysis.index.zero_grad_evidence(key)


def _restep_message(issue, name: str) -> str:
    step = issue.step
    first = min(issue.applied_by, key=lambda a: a.order)
    where = "this step" if first.node_id == step.node_id else f"`{short(first.text)}` (line {first.line})"
    return (f"`{short(step.text)}` (line {step.line}) applies the same gradients again: no "
            f"backward ran and nothing reset `{name}` since {where} applied them; remove one of "
            f"the steps, or run a backward pass before each.")


def _fix(analysis, issue) -> tuple[tuple | None, bool]:
    """A reset after every step of the cause (none at all when one of them cannot take it),
    and whether the file shows every receiver has a ``zero_grad()`` (else only its name says
    so, and the fix is unsafe)."""
    edits = []
    # The reset belongs after the step that applied the old gradients (usually this one).
    if _closure_step(issue.step):
        return _closure_fix(analysis, issue)
    anchors = {a.node_id: a for a in sorted((*(issue.applied_by or (issue.step,)), *issue.also),
                                            key=lambda a: a.order)}
    safe = True
    for anchor in anchors.values():
        stmt = analysis.statement_of(anchor.node)
        receiver = analysis.optimizer_text(anchor)
        if issue.optimizer.startswith(ALIAS_PREFIX):  # the model whose tensors were handed over
            receiver = issue.optimizer[len(ALIAS_PREFIX):]
        key = "".join(receiver.split())
        if not analysis.index.can_zero(key):
            return None, True  # the file built it with a class that has no zero_grad()
        safe &= analysis.index.zero_grad_evidence(key)
        zero = f"{receiver}.zero_grad()"
        inserted = fixes.insert_after(stmt, zero, analysis.text) if stmt else None
        if inserted is None:
            return None, True
        edits.extend(e for e in inserted if e not in edits)  # one reset per place
    return tuple(edits), safe


def _closure_step(step) -> bool:
    """``opt.step(closure)``: LBFGS and friends call the closure, and its backward, inside.
    Only a callable is a closure: ``step(do_adam=True)`` and ``step(loss)`` are not."""
    import ast

    from lint_rules import syntax
    from lint_rules.events import dotted

    call = step.node
    closure = call.args[0] if call.args else syntax.keyword(call, "closure")
    return type(closure) in (ast.Name, ast.Lambda) and hasattr(call.func, "value") and \
        dotted(call.func.value) == step.target


def _closure_fix(analysis, issue):
    """``opt.step(closure)`` calls the closure (LBFGS: several times per step), so the reset
    goes first in the closure's body, as in torch's documentation; none for a lambda."""
    import ast

    from lint_rules import syntax

    call = issue.step.node
    closure = call.args[0] if call.args else syntax.keyword(call, "closure")
    if type(closure) is not ast.Name:
        return None, True
    scope = analysis.function_of(call)
    defs = [n for n in syntax.walk(scope if scope is not None else analysis.tree)
            if isinstance(n, syntax.FUNCTIONS) and n.name == closure.id]
    if len(defs) != 1:
        return None, True
    body = syntax.body_of(defs[0])
    first = body[0] if body else None
    if _is_docstring(first) and len(body) > 1:
        first = body[1]
    return _reset_before(analysis, first, analysis.optimizer_text(issue.step))


def _is_docstring(stmt) -> bool:
    import ast

    return type(stmt) is ast.Expr and type(stmt.value) is ast.Constant and \
        isinstance(stmt.value.value, (str, bytes))
