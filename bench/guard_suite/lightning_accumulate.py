# Lightning's automatic optimization with accumulate_grad_batches=4, no gradcheck callback: the
# trainer's own accumulation must be silent. --bug zero-every-batch resets in a callback before
# every backward, which throws away the window's first micro-batches.
import argparse
import warnings

import lightning.pytorch as pl
import torch
import torch.nn.functional as F


class Regression(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


class ZeroEveryBatch(pl.Callback):
    def on_before_backward(self, trainer, pl_module, loss):
        trainer.optimizers[0].zero_grad()  # gradcheck: discarded_accumulation


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bug", default="none", choices=["none", "zero-every-batch"])
    args = parser.parse_args()
    warnings.filterwarnings("ignore", module="lightning")
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    trainer = pl.Trainer(max_steps=4, accumulate_grad_batches=4, accelerator="cpu", devices=1,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False,
                         callbacks=[ZeroEveryBatch()] if args.bug != "none" else [])
    trainer.fit(Regression(), torch.utils.data.DataLoader(data, batch_size=2))


if __name__ == "__main__":
    main()
