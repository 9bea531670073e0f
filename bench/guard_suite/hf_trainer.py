# The Hugging Face Trainer on a tiny regression model, gradient_accumulation_steps=2, no gradcheck
# callback. --bug zero-every-substep resets the model after every micro-batch.
import argparse
import tempfile

import torch
import transformers


class TinyRegressor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x, labels=None):
        prediction = self.layer(x)
        return {"loss": torch.nn.functional.mse_loss(prediction, labels), "logits": prediction}


class ZeroEverySubstep(transformers.TrainerCallback):
    def on_substep_end(self, args, state, control, model=None, **kwargs):
        model.zero_grad()  # gradcheck: discarded_accumulation


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bug", default="none", choices=["none", "zero-every-substep"])
    args = parser.parse_args()
    torch.manual_seed(0)
    rows = [{"x": torch.randn(4), "labels": torch.randn(1)} for _ in range(32)]
    with tempfile.TemporaryDirectory() as output:
        arguments = transformers.TrainingArguments(
            output_dir=output, max_steps=4, per_device_train_batch_size=2,
            gradient_accumulation_steps=2, use_cpu=True, report_to=[], save_strategy="no",
            logging_strategy="no", disable_tqdm=True, remove_unused_columns=False)
        callbacks = [ZeroEverySubstep()] if args.bug != "none" else []
        transformers.Trainer(model=TinyRegressor(), args=arguments, train_dataset=rows,
                             callbacks=callbacks).train()


if __name__ == "__main__":
    main()
