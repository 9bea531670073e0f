"""Realistic correct trainer code (HF, Lightning, Ignite, Fabric, timm, detectron2 styles): each
must lint clean. Written while hunting false positives; several were reported before.
"""
from __future__ import annotations

import pytest

from lint_rules.testing import program_findings

SILENT = {
    "hf-trainer": """
        class Trainer:
            def training_step(self, model, inputs):
                model.train()
                loss = self.compute_loss(model, inputs)
                if self.args.n_gpu > 1:
                    loss = loss.mean()
                self.accelerator.backward(loss)
                return loss.detach()

            def _inner_training_loop(self, train_dataloader):
                model = self.model
                self.optimizer.zero_grad()
                for step, inputs in enumerate(train_dataloader):
                    tr_loss_step = self.training_step(model, inputs)
                    self.optimizer.step()
                    self.lr_scheduler.step()
                    model.zero_grad()
    """,
    "accelerate-clip": """
        model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
        for batch in loader:
            with accelerator.accumulate(model):
                outputs = model(**batch)
                loss = outputs.loss
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
    """,
    "epoch-fn-called": """
        def train_one_epoch(model, optimizer, loader, scaler):
            model.train()
            for x, y in loader:
                with torch.autocast("cuda"):
                    loss = criterion(model(x), y)
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()

        def main():
            model = Net()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.cuda.amp.GradScaler()
            for epoch in range(90):
                train_one_epoch(model, optimizer, loader, scaler)
                evaluate(model, val_loader)
    """,
    "hf-inner-loop-accum": """
        class Trainer:
            def training_step(self, model, inputs):
                model.train()
                loss = self.compute_loss(model, inputs)
                loss = loss / self.args.gradient_accumulation_steps
                self.accelerator.backward(loss)
                return loss.detach()

            def _inner_training_loop(self, model, epoch_iterator, args):
                self.optimizer.zero_grad()
                for step, inputs in enumerate(epoch_iterator):
                    is_last_step = step + 1 == len(epoch_iterator)
                    tr_loss_step = self.training_step(model, inputs)
                    if (step + 1) % args.gradient_accumulation_steps == 0 or is_last_step:
                        self.accelerator.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                        self.optimizer.step()
                        self.lr_scheduler.step()
                        model.zero_grad()
    """,
    "lightning-optimizer-step-hook": """
        class Lit(pl.LightningModule):
            def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):
                optimizer.step(closure=optimizer_closure)
                for pg in optimizer.param_groups:
                    pg["lr"] = self.lr_at(self.trainer.global_step)

            def optimizer_zero_grad(self, epoch, batch_idx, optimizer):
                optimizer.zero_grad(set_to_none=True)
    """,
    "lightning-manual-accum": """
        class Lit(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.automatic_optimization = False

            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                loss = self.compute_loss(batch) / N
                self.manual_backward(loss)
                if (batch_idx + 1) % N == 0:
                    self.clip_gradients(opt, gradient_clip_val=0.5)
                    opt.step()
                    opt.zero_grad()
    """,
    "fabric-loop": """
        fabric = L.Fabric(accelerator="cuda", devices=2)
        model, optimizer = fabric.setup(model, optimizer)
        for batch in loader:
            optimizer.zero_grad()
            loss = model(batch).loss
            fabric.backward(loss)
            fabric.clip_gradients(model, optimizer, max_norm=1.0)
            optimizer.step()
    """,
    "ignite-engine": """
        def train_step(engine, batch):
            model.train()
            optimizer.zero_grad()
            x, y = batch
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.item()

        trainer = Engine(train_step)
        trainer.run(loader, max_epochs=5)
    """,
    "cyclegan-set-requires-grad": """
        class CycleGAN:
            def __init__(self):
                self.optimizer_G = torch.optim.Adam(itertools.chain(self.netG_A.parameters(), self.netG_B.parameters()))
                self.optimizer_D = torch.optim.Adam(itertools.chain(self.netD_A.parameters(), self.netD_B.parameters()))

            def backward_G(self):
                self.loss_G = self.loss_G_A + self.loss_G_B + self.loss_cycle
                self.loss_G.backward()

            def backward_D(self):
                self.loss_D_A.backward()
                self.loss_D_B.backward()

            def optimize_parameters(self):
                self.forward()
                self.set_requires_grad([self.netD_A, self.netD_B], False)
                self.optimizer_G.zero_grad()
                self.backward_G()
                self.optimizer_G.step()
                self.set_requires_grad([self.netD_A, self.netD_B], True)
                self.optimizer_D.zero_grad()
                self.backward_D()
                self.optimizer_D.step()
    """,
    "torchvision-train-one-epoch": """
        def train_one_epoch(model, criterion, optimizer, data_loader, epoch, args, model_ema=None, scaler=None):
            model.train()
            for i, (image, target) in enumerate(data_loader):
                with torch.cuda.amp.autocast(enabled=scaler is not None):
                    output = model(image)
                    loss = criterion(output, target)
                optimizer.zero_grad()
                if scaler is not None:
                    scaler.scale(loss).backward()
                    if args.clip_grad_norm is not None:
                        scaler.unscale_(optimizer)
                        nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad_norm)
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    loss.backward()
                    if args.clip_grad_norm is not None:
                        nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad_norm)
                    optimizer.step()
                if model_ema and i % args.model_ema_steps == 0:
                    model_ema.update_parameters(model)
    """,
    "detectron2-run-step": """
        class SimpleTrainer:
            def __init__(self, model, data_loader, optimizer):
                self.model = model
                self.data_loader = data_loader
                self._data_loader_iter = iter(data_loader)
                self.optimizer = optimizer

            def run_step(self):
                data = next(self._data_loader_iter)
                loss_dict = self.model(data)
                losses = sum(loss_dict.values())
                self.optimizer.zero_grad()
                losses.backward()
                self.after_backward()
                self.optimizer.step()

            def after_backward(self):
                for h in self._hooks:
                    h.after_backward()

            def train(self, start_iter, max_iter):
                for self.iter in range(start_iter, max_iter):
                    self.before_step()
                    self.run_step()
                    self.after_step()
    """,
    "detectron2-amp": """
        class AMPTrainer(SimpleTrainer):
            def run_step(self):
                data = next(self._data_loader_iter)
                with autocast(dtype=self.precision):
                    loss_dict = self.model(data)
                    losses = sum(loss_dict.values())
                self.optimizer.zero_grad()
                self.grad_scaler.scale(losses).backward()
                self.grad_scaler.step(self.optimizer)
                self.grad_scaler.update()
    """,
    "timm-need-update": """
        def train_one_epoch(epoch, model, loader, optimizer, loss_fn, args, loss_scaler=None, accum_steps=1):
            model.train()
            last_idx = len(loader) - 1
            optimizer.zero_grad()
            for batch_idx, (input, target) in enumerate(loader):
                last_batch = batch_idx == last_idx
                need_update = last_batch or (batch_idx + 1) % accum_steps == 0

                def _backward(_loss):
                    if loss_scaler is not None:
                        loss_scaler(_loss, optimizer, clip_grad=args.clip_grad, need_update=need_update)
                    else:
                        _loss.backward()
                        if need_update:
                            optimizer.step()

                loss = loss_fn(model(input), target) / accum_steps
                _backward(loss)
                if not need_update:
                    continue
                optimizer.zero_grad()
    """,
    "fairseq-optimizer-backward": """
        for samples in progress:
            optimizer.zero_grad()
            loss = criterion(model, samples)
            optimizer.backward(loss)
            optimizer.clip_grad_norm(max_norm)
            optimizer.step()
    """,
    "optional-optimizer": """
        def run_epoch(model, loader, optimizer=None):
            training = optimizer is not None
            model.train(training)
            total = 0.0
            for x, y in loader:
                with torch.set_grad_enabled(training):
                    loss = criterion(model(x), y)
                if training:
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                total += loss.item()
            return total / len(loader)
    """,
    "vae-with-kl-anneal": """
        class VAETrainer:
            def __init__(self, vae):
                self.vae = vae
                self.opt = torch.optim.Adam(vae.parameters(), lr=1e-3)

            def step(self, x, beta):
                recon, mu, logvar = self.vae(x)
                loss = recon_loss(recon, x) + beta * kl(mu, logvar)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                return loss.item()

            def fit(self, loader, epochs):
                for epoch in range(epochs):
                    for x, _ in loader:
                        self.step(x, min(1.0, epoch / 10))
    """,
    "diffusion-ema-accelerate": """
        model, optimizer, loader, lr_scheduler = accelerator.prepare(model, optimizer, loader, lr_scheduler)
        for epoch in range(num_epochs):
            for step, batch in enumerate(loader):
                noise = torch.randn(batch.shape, device=batch.device)
                timesteps = torch.randint(0, 1000, (batch.shape[0],), device=batch.device)
                noisy = noise_scheduler.add_noise(batch, noise, timesteps)
                with accelerator.accumulate(model):
                    noise_pred = model(noisy, timesteps, return_dict=False)[0]
                    loss = F.mse_loss(noise_pred, noise)
                    accelerator.backward(loss)
                    if accelerator.sync_gradients:
                        accelerator.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
                    lr_scheduler.step()
                    optimizer.zero_grad()
                if accelerator.sync_gradients:
                    ema_model.step(model.parameters())
                    global_step += 1
    """,
    "returns-early-in-step": """
        class Learner:
            def __init__(self, model):
                self.model = model
                self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

            def one_batch(self, x, y):
                self.opt.zero_grad()
                loss = self.loss_fn(self.model(x), y)
                if not self.training:
                    return loss
                loss.backward()
                self.opt.step()
                return loss

            def loop(self, loader):
                for x, y in loader:
                    self.one_batch(x, y)
    """,
    "training-step-called-by-fit": """
        class Trainer:
            def __init__(self, model):
                self.model = model
                self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

            def training_step(self, batch):
                loss = self.model(batch).loss
                loss.backward()
                self.optimizer.step()
                return loss.item()

            def fit(self, loader, epochs):
                for epoch in range(epochs):
                    for batch in loader:
                        self.optimizer.zero_grad()
                        self.training_step(batch)
    """,
    "compiled-step": """
        model = Net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        @torch.compile
        def train_step(x, y):
            optimizer.zero_grad(set_to_none=True)
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            return loss

        for x, y in loader:
            train_step(x, y)
    """,
    "annotated-transformer-loss-compute": """
        class SimpleLossCompute:
            def __init__(self, generator, criterion, opt=None):
                self.generator = generator
                self.criterion = criterion
                self.opt = opt

            def __call__(self, x, y, norm):
                x = self.generator(x)
                loss = self.criterion(x.contiguous().view(-1, x.size(-1)), y.contiguous().view(-1)) / norm
                loss.backward()
                if self.opt is not None:
                    self.opt.step()
                    self.opt.optimizer.zero_grad()
                return loss.item() * norm
    """,
    "annotated-transformer-run-epoch": """
        def run_epoch(data_iter, model, loss_compute, optimizer, scheduler, mode="train", accum_iter=1):
            n_accum = 0
            for i, batch in enumerate(data_iter):
                out = model.forward(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
                loss, loss_node = loss_compute(out, batch.tgt_y, batch.ntokens)
                if mode == "train" or mode == "train+log":
                    loss_node.backward()
                    if i % accum_iter == 0:
                        optimizer.step()
                        optimizer.zero_grad(set_to_none=True)
                        n_accum += 1
                    scheduler.step()
    """,
    "keras-torch-train-step": """
        class CustomModel(keras.Model):
            def train_step(self, data):
                x, y = data
                self.zero_grad()
                y_pred = self(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred)
                loss.backward()
                trainable_weights = [v for v in self.trainable_weights]
                gradients = [v.value.grad for v in trainable_weights]
                with torch.no_grad():
                    self.optimizer.apply(gradients, trainable_weights)
                return {m.name: m.result() for m in self.metrics}
    """,
    "noam-wrapper": """
        class NoamOpt:
            def __init__(self, model_size, factor, warmup, optimizer):
                self.optimizer = optimizer
                self._step = 0

            def step(self):
                self._step += 1
                for p in self.optimizer.param_groups:
                    p["lr"] = self.rate()
                self.optimizer.step()

        model_opt = NoamOpt(512, 1, 400, torch.optim.Adam(model.parameters(), lr=0))
        for batch in loader:
            loss = compute(model, batch)
            loss.backward()
            model_opt.step()
            model_opt.optimizer.zero_grad()
    """,
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_correct_program_is_silent(name: str) -> None:
    assert program_findings(SILENT[name], name) == []
