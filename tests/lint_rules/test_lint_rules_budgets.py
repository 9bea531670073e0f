"""Ordinary trainers are analysed in full: no GC000 from the analysis's own limits.

Each flag that guards both a backward pass and a step is a branch condition the analysis keeps
apart from the others (``if amp: scaler.step(opt)`` ... ``if amp: scaler.update()``). Trainers
with many such flags used to exceed the 32 combinations the analysis kept, and got GC000.
"""
from __future__ import annotations

import pytest

from lint_rules import check_source

TRAINER = '''\
import torch


class Trainer:
    def __init__(self, model, args):
        self.model, self.args = model, args
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
        self.scaler = torch.cuda.amp.GradScaler(enabled=args.amp)

    def train_step(self, batch):
        loss = self.model(batch).loss
        if self.args.distributed:
            loss = loss.mean()
        if self.args.amp:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()
        if self.args.clip:
            if self.args.amp:
                self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        if self.args.amp:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        if self.args.ema:
            self.ema.update()
        if self.args.log:
            print(loss.item())
        if self.args.distributed:
            torch.distributed.barrier()
        if self.args.clip:
            self.clipped += 1
        if self.args.ema:
            self.ema_steps += 1
        RESET

    def fit(self, loader):
        for batch in loader:
            self.train_step(batch)
'''


def test_a_trainer_with_many_flags_is_analysed_in_full() -> None:
    assert check_source(TRAINER.replace("RESET", "self.optimizer.zero_grad()"), strict=True) == []
    missing = check_source(TRAINER.replace("RESET", "pass"), strict=True)
    assert [(f.line, f.code) for f in missing] == [(23, "GC002")]


def flagged_loop(flags: int, reset: bool) -> str:
    """A loop where each flag guards its own backward pass and, later, its own step."""
    lines = ["def train(model, loader, args, opt):", "    for batch in loader:"]
    for k in range(flags):
        lines += [f"        if args.f{k}:", f"            (model(batch) * {k}).sum().backward()"]
    for k in range(flags):
        lines += [f"        if args.f{k}:", "            opt.step()"]
    lines.append("        opt.zero_grad()" if reset else "        pass")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("flags", [5, 8])
def test_eight_correlated_flags_are_kept_apart(flags: int) -> None:
    # Analysed in full either way: clean with the reset, one stale-gradient cause without.
    assert check_source(flagged_loop(flags, reset=True), strict=True) == []
    found = check_source(flagged_loop(flags, reset=False), strict=True)
    assert [f.code for f in found] == ["GC002"]
    assert "applies stale gradients" in found[0].message
