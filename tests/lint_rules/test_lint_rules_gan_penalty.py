"""Two GAN idioms that hid real bugs: an optimizer named like a learning-rate object
(`optimizer_D_LR`, a discriminator of the "latent regression" branch) and a WGAN-GP gradient
penalty, whose `interpolates.requires_grad_(True)` was read as the loop freezing and
unfreezing networks, so no loss was traced to any network at all."""
from __future__ import annotations

from lint_rules import EVERY_FORM, check_source

TWO_DISCRIMINATORS = '''\
import torch
from torch import nn

encoder, D_VAE, D_LR = nn.Linear(4, 2), nn.Linear(4, 1), nn.Linear(4, 1)
optimizer_E = torch.optim.Adam(encoder.parameters(), lr=2e-4)
optimizer_D_VAE = torch.optim.Adam(D_VAE.parameters(), lr=2e-4)
optimizer_D_LR = torch.optim.Adam(D_LR.parameters(), lr=2e-4)
lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer_E, 10)

for epoch in range(10):
    for real in loader:
        optimizer_D_VAE.zero_grad()
        loss_vae = D_VAE(real).mean()
        loss_vae.backward()
        optimizer_D_VAE.step()
{reset}
        loss_lr = D_LR(real).mean()
        loss_lr.backward()
        optimizer_D_LR.step()
    lr_scheduler.step()
'''

WGAN_GP = '''\
import torch
from torch import nn

generator = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
discriminator = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer_G = torch.optim.Adam(generator.parameters(), lr=1e-4)
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=1e-4)


def gradient_penalty(D, real, fake):
    alpha = torch.rand(real.size(0), 1)
    interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    scores = D(interpolates)
    grads = torch.autograd.grad(scores.sum(), interpolates, create_graph=True)[0]
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


for epoch in range(10):
    for i, real in enumerate(loader):
        fake = generator(torch.randn(real.size(0), 8))
        {first}.zero_grad()
        penalty = gradient_penalty(discriminator, real.data, fake.data)
        loss_D = discriminator(fake.detach()).mean() - discriminator(real).mean() + 10 * penalty
        loss_D.backward()
        optimizer_D.step()

        {second}.zero_grad()
        if i % 5 == 0:
            loss_G = -discriminator(generator(torch.randn(real.size(0), 8))).mean()
            loss_G.backward()
            optimizer_G.step()
'''


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def findings(source: str, preview: bool = False) -> list[tuple[int, str, str]]:
    select = EVERY_FORM if preview else None
    return [(f.line, f.code, f.pattern)
            for f in check_source(source, "train.py", strict=True, select=select)]


def test_an_optimizer_built_by_an_optimizer_class_steps_whatever_its_name_says() -> None:
    correct = TWO_DISCRIMINATORS.format(reset="        optimizer_D_LR.zero_grad()")
    assert findings(correct, preview=True) == []
    missing = TWO_DISCRIMINATORS.format(reset="")
    assert findings(missing) == [(line_of(missing, "optimizer_D_LR.step()"), "GC002", "stale")]


def test_a_scheduler_named_like_one_still_takes_no_reset() -> None:
    # the name rule stays for what the file does not build: `lr_scheduler.step()` is no step
    source = TWO_DISCRIMINATORS.format(reset="        optimizer_D_LR.zero_grad()")
    assert "lr_scheduler.step()" in source and findings(source, preview=True) == []


def test_a_correct_wgan_gp_loop_is_silent() -> None:
    source = WGAN_GP.format(first="optimizer_D", second="optimizer_G")
    assert findings(source, preview=True) == []


def test_swapped_resets_around_a_gradient_penalty_are_found_on_the_discriminator_only() -> None:
    # the generator's loss backpropagates into the discriminator, whose reset now runs
    # before it, so the next discriminator step applies it; the penalty's `.data` inputs
    # carry no history, so the discriminator's loss never reaches the generator
    source = WGAN_GP.format(first="optimizer_G", second="optimizer_D")
    assert findings(source) == [(line_of(source, "optimizer_D.step()"), "GC002", "foreign")]
