"""GC004 loss-accumulated-with-graph."""
from __future__ import annotations

from typing import ClassVar

from lint_rules.finding import Edit
from lint_rules.rules.base import Invalid, Rule, Valid


class LossAccumulatedWithGraph(Rule):
    """## What it does
    Flags a loop that keeps the tensor it backpropagates from one iteration to the next:
    `total += loss` (or `total = total + loss`, or a running average such as
    `smooth = smooth * 0.99 + loss * 0.01`), `outputs.append(loss)` (alone or inside a
    dict or tuple), or `meter.update(loss)` where the meter's class (in the file or the
    project) adds its argument to an attribute. The loss is the value the backward call
    backpropagates, followed back through the bindings it was computed from (`loss = loss / k`
    before `loss.backward()`); what `.item()`, `.detach()` or `float()` returns is not it.

    ## Why is this bad?
    The total becomes a tensor that references `loss`, and through it the nodes of every
    iteration's autograd graph (with `retain_graph=True`, their saved tensors too). None of
    them can be freed, so memory grows with every step until the run fails with an
    out-of-memory error, usually hours in.

    ## Known problems
    Nothing is kept under `torch.no_grad()` or `inference_mode()`, and a name bound twice is
    two values: a validation loop's `loss` is not the training loop's. A total or list that the
    loop starts again (`total = 0` after each logging step, a list made anew per step) holds a
    bounded window and is not flagged; the carrying loop is the one that steps an optimizer,
    and loops over a fixed handful (`for opt in optimizers:`, `range(2)`, a `range(len(nets))`
    whose variable picks the optimizer that steps, `optimizers[i].step()`) carry nothing. A total
    that is itself backpropagated later (summing losses on purpose) is not flagged. A loss
    returned by a helper that backpropagated it counts as the loss at its call. `append`
    needs the receiver shown to be a list: every assignment of it in the file builds one
    (`[]`, `list()`, a `deque`, an entry of `{"train": []}` or `defaultdict(list)`); a
    parameter, an attribute the file never assigns, or an object of a class it cannot read
    (a metric library's running average may detach what it is handed) is unknown and stays
    silent.

    ## Precision
    On the file-level part `test24` (210 training files of 149 repositories, each linted
    alone, scored at b1f4f59): `sum` 8 real bugs and no false alarm; `append` (with
    `--preview`) 1 debatable (a list appended once per epoch).
    On the twenty-first to twenty-third held-out parts (`test21` to `test23`, 305
    repositories, scored at 6c88e98): `sum` 1 real bug and no false alarm; `append` (with
    `--preview`) 4 real bugs and 2 false alarms (MONAI's `CumulativeAverage.append`, which
    detaches what it is given).
    On the file-level part `test20` (126 training files of 85 repositories, scored at
    16bcb42): `sum` 1 real bug; `append` (with `--preview`) 2 real bugs; no false alarm.
    On the sixteenth to eighteenth held-out parts (`test16` to `test18`, 331 repositories,
    scored once at 78c63a9): `sum` and `method` 81 real bugs and no false alarm (58 of them
    one line repeated across the scripts of three repositories).
    On the eleventh to thirteenth held-out parts (`test11` to `test13`, 312 repositories,
    scored once at ebb3b47): `sum` and `method` 23 real bugs, no false alarm and 4 debatable
    (totals that keep a graph only under a non-default option, a loop that runs once); 16 of
    the bugs are four totals copied into four trainers of one repository. `append` (with
    `--preview`) 2 real bugs and no false alarm. On the file-level part `test14` (194
    training files, scored at 19aa67b): `sum` 2 real bugs and no false alarm; one smoothed
    total (`s = s * 0.99 + loss * 0.01`) was missed, and is reported since (a running
    average of the total reads as a sum). On `test15` (28 course notebooks): `sum` 1 real
    bug and no false alarm.
    On the ninth and tenth held-out parts (`test9` and `test10`, 274 repositories, scored once
    at 9d1664e): `sum` 4 real bugs, no false alarm and 3 debatable (totals that keep a graph
    only under a non-default option); 50 real bugs and no false alarm over test5 to test10.
    `append` (with `--preview`) 9 real bugs and 2 false alarms (metric lists filled from the
    same results dictionary as the loss, holding numpy arrays and floats).
    On the eighth held-out part (`test8`, 208 repositories, scored once at 8c79788): `sum` 3
    real bugs and no false alarm (46 and none over test5 to test8).
    On the seventh held-out part (`test7`, 206 repositories, scored once at 2547af3): `sum` 17
    real bugs, no false alarm and 1 debatable; `append` (with `--preview`) 1 false alarm.
    On the sixth held-out part (`test6`, 187 repositories, scored once at c9ed61b): `sum` 21
    real bugs and no false alarm; `append` (with `--preview`) 6 real bugs and no false alarm.
    On the fifth held-out part (`test5`, 135 repositories, scored once at 72e8f7d after the
    forms were split): `sum` 5 real bugs and no false alarm; no `append` or `method` finding.
    `append` runs only with `--preview`.
    High for `sum`: 56 real bugs and 2 false alarms over four held-out parts (96.6%) and for
    `method` (8 and 0). Low for `append`: 10 and 10. Its false alarms were lists bounded by a
    first-step guard, backpropagated later, or living for one step (first part), and values
    that reach the loss only as a factor of a product, a reward, a mask or a config weight
    (fourth part); neither shape is reported any more. What a total keeps
    after a plain `backward()` is the chain of graph nodes, not the saved activations, so the
    leak is real but grows by kilobytes a step, not by the activations' size.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        running_loss += loss
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        running_loss += loss.item()
    ```

    ## Fix safety
    The fix appends `.detach()` to the loss in the sum, so the total keeps its type, dtype
    and device (code that later calls `total.item()` or all-reduces it still works) and only
    the graph is dropped. `.item()` would turn the total into a Python float and break such
    code. It is unsafe all the same: a total that is itself backpropagated later loses its
    gradient.
    """

    CODE = "GC004"
    NAME = "loss-accumulated-with-graph"
    MESSAGE = "a running total keeps every iteration's autograd graph alive"
    SEVERITY = "warning"
    FIX_SAFETY = "unsafe"
    PATTERNS: ClassVar[dict[str, str]] = {
        "sum": "`total += loss` (or `total = total + loss`) on the backpropagated tensor",
        "append": "the backpropagated tensor appended to a list, alone or in a dict or tuple",
        "method": "the backpropagated tensor handed to a meter whose method adds it to an attribute",
    }

    VALID: ClassVar[list[Valid]] = [
        Valid(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    total += loss.item()\n"
        ),
        Valid(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    total += loss.detach() * x.size(0)\n"
        ),
        Valid(
            "for head in heads:\n"
            "    loss += head(x)\n"
            "loss.backward()\n"
        ),
        Valid(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    total_loss += loss\n"
            "total_loss.backward()\n"
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    running_loss += loss\n",
            (4,),
            "for x, y in loader:\n"
            "    loss = criterion(model(x), y)\n"
            "    loss.backward()\n"
            "    running_loss += loss.detach()\n",
        ),
        Invalid(
            "def train(model, loader, scaler):\n"
            "    total = 0.0\n"
            "    for x, y in loader:\n"
            "        loss = model(x, y)\n"
            "        scaler.scale(loss).backward()\n"
            "        scaler.step(optimizer)\n"
            "        optimizer.zero_grad()\n"
            "        total = total + loss * x.shape[0]   \n",
            (8,),
            "def train(model, loader, scaler):\n"
            "    total = 0.0\n"
            "    for x, y in loader:\n"
            "        loss = model(x, y)\n"
            "        scaler.scale(loss).backward()\n"
            "        scaler.step(optimizer)\n"
            "        optimizer.zero_grad()\n"
            "        total = total + loss.detach() * x.shape[0]   \n",
        ),
    ]

    PREVIEW: ClassVar[frozenset[str]] = frozenset({"append"})

    @classmethod
    def check(cls, analysis) -> list:
        from lint_rules.accumulation import running_totals

        findings = []
        for total in running_totals(analysis):
            name, bw = total.name, total.backward
            bw_text = " ".join(analysis.text.segment(bw).split())
            bw_line = analysis.text.start(bw)[0]
            kept = analysis.text.segment(total.target)
            source = f"`{name}`, the tensor that `{bw_text}` (line {bw_line}) backpropagates"
            if total.how == "append":
                what = f"`{kept}` keeps {source}, in an entry per iteration"
            elif total.how == "method":
                what = f"`{kept}` adds {source}, into one of its attributes on every iteration"
            else:
                what = f"`{kept}` accumulates {source}"
            message = (
                f"{what}: every iteration's autograd graph stays referenced, so memory grows "
                f"with every step; use `{name}.item()` (or `{name}.detach()`) instead."
            )
            edits = tuple(Edit(end, end, ".detach()") for end in map(analysis.text.end_offset, total.hits))
            findings.append(cls.finding(analysis, total.statement, message, edits, safe=False,
                                        description=f"use `{name}.detach()` instead of `{name}`",
                                        pattern=total.how))
        return findings
