"""A method judged where the script calls it (`gan = Gan(...); gan.train()`) knows the
models and optimizers its class built under `self`, as when it is judged on its own: a reset
of the generator (`self.netG.zero_grad()`) leaves the discriminator's optimizer alone."""
from __future__ import annotations

import pytest

from lint_rules import EVERY_FORM, check_source

GAN = '''\
import torch
import torch.nn as nn
import torch.optim as optim


class Gan:
    def __init__(self, loader):
        self.loader = loader
        self.netG = nn.Linear(4, 8)
        self.netD = nn.Linear(8, 1)
        self.criterion = nn.BCEWithLogitsLoss()
        self.optimizerD = optim.Adam(self.netD.parameters(), lr=1e-3)
        self.optimizerG = optim.Adam(self.netG.parameters(), lr=1e-3)

    def train(self, epochs):
        for epoch in range(epochs):
            for real in self.loader:
                {reset_d}
                out = self.netD(real)
                self.criterion(out, torch.ones_like(out)).backward()
                fake = self.netG(torch.randn(real.size(0), 4))
                out = self.netD(fake.detach())
                self.criterion(out, torch.zeros_like(out)).backward()
                self.optimizerD.step()
                self.netG.zero_grad()
                out = self.netD(fake)
                self.criterion(out, torch.ones_like(out)).backward()
                self.optimizerG.step()
{main}'''

MAIN = "\n\nif __name__ == '__main__':\n    gan = Gan([])\n    gan.train(3)\n"


def lint(reset_d: str, main: str) -> list[tuple[str, int]]:
    source = GAN.format(reset_d=reset_d, main=main)
    return [(f.code, f.line) for f in check_source(source, "gan.py", strict=True, select=EVERY_FORM)]


@pytest.mark.parametrize("main", ["", MAIN])
def test_the_discriminator_never_reset_is_found_whoever_runs_the_method(main: str) -> None:
    # the generator's loss goes through the discriminator: its gradients reach optimizerD
    assert lint("pass", main) == [("GC002", 24)]


@pytest.mark.parametrize("main", ["", MAIN])
def test_the_correct_loop_is_silent_whoever_runs_the_method(main: str) -> None:
    assert lint("self.netD.zero_grad()", main) == []
