"""The mutation operators of bench/mutants on small hand-written training loops.

Each operator must produce exactly the intended edit (the whole mutant text is compared, so
nothing else may change), the mutant must compile, and the operator must stay away from
loops where its edit would not be a bug.
"""
from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest

MUTANTS = Path(__file__).resolve().parents[2] / "bench" / "mutants"
sys.path.insert(0, str(MUTANTS))

import loop_selection
import source_edits
from mutation import EXPECTED, OPERATORS


def planted(source: str, operator: str, function: str | None = None) -> list:
    """The mutants of one operator over every scope (or one) of a dedented program."""
    found = []
    for qualname, _, mutants in loop_selection.scope_mutants(textwrap.dedent(source)):
        if function in (None, qualname):
            found.extend(m for m in mutants if m.operator == operator)
    return found


def only(source: str, operator: str) -> object:
    mutants = planted(source, operator)
    assert len(mutants) == 1, [m.where for m in mutants]
    compile(mutants[0].source, "<mutant>", "exec")
    return mutants[0]


PLAIN = """\
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
"""

ACCUMULATING = """\
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
        print(i)
"""

GAN = """\
    optimizer_d = torch.optim.Adam(netD.parameters())
    optimizer_g = torch.optim.Adam(netG.parameters())
    for real in loader:
        optimizer_d.zero_grad()
        fake = netG(noise())
        loss_d = bce(netD(real), ones) + bce(netD(fake.detach()), zeros)
        loss_d.backward()
        optimizer_d.step()
        optimizer_g.zero_grad()
        loss_g = bce(netD(fake), ones)
        loss_g.backward()
        optimizer_g.step()
"""


def test_every_operator_has_an_expected_code():
    assert set(OPERATORS) == set(EXPECTED)
    assert all(code.startswith("GC") for codes in EXPECTED.values() for code in codes)


def test_delete_reset_removes_only_the_reset_and_anchors_at_the_step():
    mutant = only(PLAIN, "delete-reset")
    assert mutant.source == textwrap.dedent(PLAIN).replace("    optimizer.zero_grad()\n", "")
    assert 4 in mutant.anchors  # optimizer.step() is line 4 of the mutant


def test_delete_reset_leaves_pass_where_the_block_would_be_empty():
    source = """\
        for i, (x, y) in enumerate(loader):
            if i % k == 0:
                optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    """
    mutant = only(source, "delete-reset")
    expected = textwrap.dedent(source).replace("optimizer.zero_grad()", "pass")
    assert mutant.source == expected


@pytest.mark.parametrize("extra", [
    "model.zero_grad()\n",  # a second reset of the same parameters
    "for p in model.parameters():\n    p.grad = None\n",
])
def test_delete_reset_skips_loops_with_another_reset_in_sight(extra):
    body = textwrap.dedent(PLAIN)
    before_loop = extra + body  # deleting the loop's reset would give GC003, not GC002
    inside = body.replace("    optimizer.zero_grad()\n",
                          "    optimizer.zero_grad()\n" + textwrap.indent(extra, "    "))
    assert inside != body
    assert planted(before_loop, "delete-reset") == []
    assert planted(inside, "delete-reset") == []


def test_reset_before_step_moves_the_reset_after_the_last_backward():
    mutant = only(PLAIN, "reset-before-step")
    assert mutant.source == textwrap.dedent("""\
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.zero_grad()
            optimizer.step()
            total += loss.item()
    """)
    assert mutant.anchors == (4,)


def test_reset_before_step_reaches_a_step_under_an_accumulation_guard():
    mutant = only(ACCUMULATING, "reset-before-step")
    assert mutant.source == textwrap.dedent("""\
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum
            loss.backward()
            optimizer.zero_grad()
            if (i + 1) % accum == 0:
                optimizer.step()
            print(i)
    """)


def test_moves_skip_a_reset_whose_names_the_loop_rebinds():
    source = """\
        for opt, (x, y) in zip(optimizers, loader):
            opt.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            opt.step()
    """
    assert planted(source, "reset-before-step") == []
    assert planted(source, "reset-before-loop") == []
    assert len(planted(source, "delete-reset")) == 1  # deleting needs no name


def test_reset_before_loop_puts_the_reset_at_the_loops_indentation():
    source = """\
        def train(model, loader, optimizer):
            for epoch in range(10):
                for x, y in loader:
                    optimizer.zero_grad()
                    model(x).sum().backward()
                    optimizer.step()
    """
    mutant = only(source, "reset-before-loop")
    assert mutant.source == textwrap.dedent("""\
        def train(model, loader, optimizer):
            for epoch in range(10):
                optimizer.zero_grad()
                for x, y in loader:
                    model(x).sum().backward()
                    optimizer.step()
    """)
    assert mutant.anchors == (3, 6)


def test_reset_before_loop_skips_a_per_batch_helper_without_a_loop():
    source = """\
        def train_step(batch):
            optimizer.zero_grad()
            model(batch).sum().backward()
            optimizer.step()

        for batch in loader:
            train_step(batch)
    """
    assert planted(source, "reset-before-loop") == []
    assert len(planted(source, "delete-reset", "train_step")) == 1


def test_reset_out_of_guard_moves_the_reset_after_the_if():
    mutant = only(ACCUMULATING, "reset-out-of-guard")
    assert mutant.source == textwrap.dedent("""\
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum
            loss.backward()
            if (i + 1) % accum == 0:
                optimizer.step()
            optimizer.zero_grad()
            print(i)
    """)
    assert mutant.anchors == (6,)


def test_reset_out_of_guard_skips_guards_that_are_not_accumulation_windows():
    # skipping the step drops the batch on purpose: not a window
    source = textwrap.dedent(ACCUMULATING).replace("(i + 1) % accum == 0", "math.isfinite(norm)")
    assert planted(source, "reset-out-of-guard") == []


def test_reset_out_of_guard_skips_a_guard_with_an_else_branch():
    source = textwrap.dedent(ACCUMULATING).replace(
        "    print(i)\n", "    else:\n        skipped += 1\n    print(i)\n")
    ast.parse(source)
    assert planted(source, "reset-out-of-guard") == []


def test_reset_out_of_guard_skips_a_window_that_holds_its_own_backward():
    source = """\
        for i, (x, y) in enumerate(loader):
            if i % 5 == 0:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
    """
    assert planted(source, "reset-out-of-guard") == []


@pytest.mark.parametrize("detached, plain", [
    ("loss.item()", "loss"),
    ("float(loss)", "loss"),
    ("loss.detach()", "loss"),
    ("loss.detach().item() * x.size(0)", "loss * x.size(0)"),
])
def test_drop_item_removes_only_the_detaching_call(detached, plain):
    source = textwrap.dedent(PLAIN).replace("loss.item()", detached)
    mutant = only(source, "drop-item")
    assert mutant.source == source.replace(f"total += {detached}", f"total += {plain}")
    assert mutant.anchors == (6,)


@pytest.mark.parametrize("change", [
    ("total += loss.item()", "total += acc.item()"),  # not the loss that back-propagates
    ("total += loss.item()", "total += loss.item()\n    total = 0"),  # reset every iteration
    ("total += loss.item()", "with torch.no_grad():\n        total += loss.item()"),
])
def test_drop_item_skips_totals_that_would_not_keep_a_graph(change):
    source = textwrap.dedent(PLAIN).replace(*change)
    ast.parse(source)
    assert planted(source, "drop-item") == []


def test_swap_resets_swaps_the_receivers_of_a_gan_update():
    mutant = only(GAN, "swap-resets")
    expected = (textwrap.dedent(GAN)
                .replace("    optimizer_d.zero_grad()", "    optimizer_X.zero_grad()")
                .replace("    optimizer_g.zero_grad()", "    optimizer_d.zero_grad()")
                .replace("optimizer_X", "optimizer_g"))
    assert mutant.source == expected
    assert mutant.anchors == (4, 8, 9, 12)


@pytest.mark.parametrize("change", [
    # the generator's loss no longer runs through the discriminator: two independent updates
    ("loss_g = bce(netD(fake), ones)", "loss_g = bce(fake, ones)"),
    # the discriminator is frozen while the generator learns
    ("    optimizer_g.zero_grad()\n",
     "    optimizer_g.zero_grad()\n    netD.requires_grad_(False)\n"),
    # no constructor tells which network each optimizer owns
    ("optimizer_d = torch.optim.Adam(netD.parameters())", "optimizer_d = make()"),
])
def test_swap_resets_skips_updates_where_the_swap_is_harmless(change):
    source = textwrap.dedent(GAN).replace(*change)
    assert planted(source, "swap-resets") == []


def test_swap_resets_skips_resets_that_follow_their_steps():
    source = textwrap.dedent("""\
        optimizer_d = torch.optim.Adam(netD.parameters())
        optimizer_g = torch.optim.Adam(netG.parameters())
        for real in loader:
            fake = netG(noise())
            loss_d = bce(netD(real), ones) + bce(netD(fake.detach()), zeros)
            loss_d.backward()
            optimizer_d.step()
            optimizer_d.zero_grad()
            loss_g = bce(netD(fake), ones)
            loss_g.backward()
            optimizer_g.step()
            optimizer_g.zero_grad()
    """)
    assert planted(source, "swap-resets") == []


def test_scheduler_steps_are_not_optimizer_steps():
    source = textwrap.dedent(PLAIN).replace("optimizer.step()\n",
                                            "optimizer.step()\n    scheduler.step()\n")
    mutant = only(source, "delete-reset")
    assert mutant.source == source.replace("    optimizer.zero_grad()\n", "")


def test_a_reset_paired_by_the_optimizer_constructor():
    source = """\
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        for x, y in loader:
            net.zero_grad()
            criterion(net(x), y).backward()
            optimizer.step()
            other.step()
    """
    assert len(planted(source, "delete-reset")) == 1


def test_line_edit_keeps_other_lines_and_maps_them():
    edit = source_edits.LineEdit("a = 1\nb = 2\nc = 3\n")
    edit.remove(2, 2)
    edit.insert_after(3, ["d = 4\n"], tag="new")
    edit.replace_span(1, 4, 5, "9")
    assert edit.text() == "a = 9\nc = 3\nd = 4\n"
    assert (edit.new_line(3), edit.tagged_line("new")) == (2, 3)


def test_spans_count_characters_not_utf8_bytes():
    source = "s = 'é'; total += loss.item()\n"
    node = ast.parse(source).body[1].value
    _, start, end = source_edits.span(source.splitlines(True), node)
    assert source[start:end] == "loss.item()"


def test_a_reset_and_a_step_in_different_branches_are_not_paired_by_position():
    source = """\
        for i, x in enumerate(loader):
            loss = model(x)
            if engine is not None:
                engine.backward(loss)
                engine.step()
            else:
                loss.backward()
                if i % k == 0:
                    optimizer.zero_grad()
    """
    assert all(planted(source, operator) == [] for operator in OPERATORS)


def test_distributed_autograd_loops_are_not_mutated():
    source = """\
        for x in loader:
            with dist_autograd.context() as context_id:
                optimizer.zero_grad()
                dist_autograd.backward(context_id, [model(x).sum()])
                optimizer.step()
    """
    assert all(planted(source, operator) == [] for operator in OPERATORS)
