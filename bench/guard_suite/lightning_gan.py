# A GAN in Lightning's manual optimization, through self.optimizers() (Lightning's optimizer
# wrappers), with no gradcheck callback: run it under `gradcheck run`. --bug zero-between resets
# the discriminator's gradients between manual_backward() and step().
import argparse
import warnings

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn


class Gan(pl.LightningModule):
    def __init__(self, bug):
        super().__init__()
        self.automatic_optimization = False
        self.bug = bug
        self.generator = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
        self.discriminator = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        fake = self.generator(torch.randn(real.shape[0], 4))
        ones, zeros = torch.ones(real.shape[0], 1), torch.zeros(real.shape[0], 1)
        d_loss = (F.binary_cross_entropy_with_logits(self.discriminator(real), ones)
                  + F.binary_cross_entropy_with_logits(self.discriminator(fake.detach()), zeros))
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        if self.bug == "zero-between":
            opt_d.zero_grad()  # gradcheck: wiped_gradients
        opt_d.step()
        opt_g.zero_grad()
        self.manual_backward(F.binary_cross_entropy_with_logits(self.discriminator(fake), ones))
        opt_g.step()

    def configure_optimizers(self):
        return (torch.optim.Adam(self.generator.parameters(), lr=2e-4),
                torch.optim.Adam(self.discriminator.parameters(), lr=2e-4))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bug", default="none", choices=["none", "zero-between"])
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", module="lightning")
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(8 * args.steps, 2) + 2.0)
    trainer = pl.Trainer(max_steps=2 * args.steps, accelerator="cpu", devices=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)
    trainer.fit(Gan(args.bug), torch.utils.data.DataLoader(data, batch_size=8))


if __name__ == "__main__":
    main()
