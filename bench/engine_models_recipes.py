"""How each benchmarked model is configured and trained: what the repository's own training
script would do, at a size a numpy engine trains in milliseconds, with dropout off so both
libraries draw nothing at random after initialisation.

A recipe is ``recipe(lib, module, rng) -> Run``: ``lib`` is ``torch`` or ``gradcheck.ref``,
``module`` the repository's file imported with that library, and ``rng`` a numpy generator
seeded the same for both, so the batches agree. ``Run.step(k)`` performs training step ``k``
and returns the loss. Where a repository ships its optimizer set-up or training function,
the recipe calls it.
"""
from __future__ import annotations

import argparse
import dataclasses
import types
from collections.abc import Callable
from typing import Any

import numpy as np


@dataclasses.dataclass
class Run:
    model: Any
    step: Callable[[int], float]


def _batches(rng: np.random.Generator, count: int, make: Callable) -> list:
    return [make(rng) for _ in range(count)]


def _supervised(lib, model, optimizer, batches, loss_fn, clip: float | None = None) -> Run:
    """zero_grad, forward, loss, backward, (clip), step: the loop of most scripts."""
    def step(k: int) -> float:
        x, y = batches[k % len(batches)]
        optimizer.zero_grad()
        loss = loss_fn(model(*(lib.tensor(v) for v in x)), lib.tensor(y))
        loss.backward()
        if clip is not None:
            lib.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        return loss.item()

    return Run(model, step)


def _tokens(vocab: int, batch: int, length: int):
    def make(rng):
        x = rng.integers(0, vocab, size=(batch, length))
        return (x,), rng.integers(0, vocab, size=(batch, length))

    return make


def _images(batch: int, channels: int, size: int, classes: int):
    def make(rng):
        return (rng.normal(size=(batch, channels, size, size)),), rng.integers(0, classes, batch)

    return make


# ----- karpathy/nanoGPT ---------------------------------------------------------------------
def nanogpt_gpt(lib, module, rng) -> Run:
    config = module.GPTConfig(block_size=16, vocab_size=64, n_layer=2, n_head=2, n_embd=32,
                              dropout=0.0, bias=True)
    model = module.GPT(config)
    optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cpu")  # the repo's own
    batches = _batches(rng, 4, _tokens(64, 4, 16))

    def step(k: int) -> float:
        (x,), y = batches[k % len(batches)]
        _, loss = model(lib.tensor(x), lib.tensor(y))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.item()

    return Run(model, step)


# ----- karpathy/minGPT: the model and the repository's Trainer -------------------------------
class _CountingDataset:
    """Item i of the k-th request, whatever index the sampler drew: torch's and the engine's
    random samplers draw different indices, and this keeps the batches identical."""

    def __init__(self, lib, rng, vocab: int, length: int, size: int = 64) -> None:
        self.lib, self.calls = lib, 0
        self.items = [rng.integers(0, vocab, size=length + 1) for _ in range(size)]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        item = self.items[self.calls % len(self.items)]
        self.calls += 1
        return self.lib.tensor(item[:-1]), self.lib.tensor(item[1:])


def mingpt_gpt_trainer(lib, module, rng) -> Run:
    config = module.GPT.get_default_config()
    config.model_type = None
    config.n_layer, config.n_head, config.n_embd = 2, 2, 32
    config.vocab_size, config.block_size = 48, 12
    config.embd_pdrop = config.resid_pdrop = config.attn_pdrop = 0.0
    model = module.GPT(config)
    trainer_module = __import__("mingpt.trainer", fromlist=["Trainer"])
    train_config = trainer_module.Trainer.get_default_config()
    train_config.num_workers, train_config.batch_size, train_config.device = 0, 4, "cpu"
    trainer = trainer_module.Trainer(train_config, model, _CountingDataset(lib, rng, 48, 12))
    losses = []
    trainer.add_callback("on_batch_end", lambda t: losses.append(t.loss.item()))

    def step(k: int) -> float:
        # the repository's own loop, one iteration per call (it stops at max_iters)
        train_config.max_iters = 1
        trainer.run()
        return losses[-1]

    return Run(model, step)


# ----- karpathy/makemore: six models of one file --------------------------------------------
def _makemore(kind: str, **extra) -> Callable:
    def recipe(lib, module, rng) -> Run:
        config = module.ModelConfig(vocab_size=27, block_size=12, n_layer=2, n_embd=16,
                                    n_embd2=24, n_head=2)
        model = getattr(module, kind)(config, **extra)
        optimizer = lib.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01,
                                    betas=(0.9, 0.99), eps=1e-8)  # makemore's own settings
        batches = _batches(rng, 4, _tokens(27, 4, 12))

        def step(k: int) -> float:
            (x,), y = batches[k % len(batches)]
            _, loss = model(lib.tensor(x), lib.tensor(y))
            model.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            return loss.item()

        return Run(model, step)

    return recipe


makemore_transformer = _makemore("Transformer")
makemore_bow = _makemore("BoW")
makemore_rnn = _makemore("RNN", cell_type="rnn")
makemore_gru = _makemore("RNN", cell_type="gru")
makemore_mlp = _makemore("MLP")
makemore_bigram = _makemore("Bigram")


# ----- pytorch/examples -------------------------------------------------------------------------
def _word_language_model(rnn_type: str) -> Callable:
    def recipe(lib, module, rng) -> Run:
        ntokens, bptt, batch = 50, 8, 4
        if rnn_type == "Transformer":
            model = module.TransformerModel(ntokens, 16, 2, 32, 2, dropout=0.0)
            # NOTE: the model leaves nn.Transformer's own dropout at 0.1. Its nn.Dropout layers
            # draw shared masks (the harness), but torch's attention dropout runs inside its
            # fused kernel, where no mask can be shared: that one is switched off.
            for layer in model.modules():
                if isinstance(layer, lib.nn.MultiheadAttention):
                    layer.dropout = 0.0
        else:
            model = module.RNNModel(rnn_type, ntokens, 16, 16, 2, dropout=0.0,
                                    tie_weights=True)
        criterion = lib.nn.NLLLoss()
        data = rng.integers(0, ntokens, size=(bptt * 6 + 1, batch))
        hidden = [None]

        def step(k: int) -> float:  # word_language_model/main.py train(), one batch
            i = (k % 6) * bptt
            x, y = lib.tensor(data[i:i + bptt]), lib.tensor(data[i + 1:i + 1 + bptt]).reshape(-1)
            model.zero_grad()
            if rnn_type == "Transformer":
                output = model(x).view(-1, ntokens)
            else:
                if hidden[0] is None:
                    hidden[0] = model.init_hidden(batch)
                h = hidden[0]
                h = tuple(v.detach() for v in h) if isinstance(h, tuple) else h.detach()
                output, hidden[0] = model(x, h)
            loss = criterion(output, y)
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-0.5)
            return loss.item()

        return Run(model, step)

    return recipe


wlm_lstm = _word_language_model("LSTM")
wlm_gru = _word_language_model("GRU")
wlm_transformer = _word_language_model("Transformer")


def examples_super_resolution(lib, module, rng) -> Run:
    model = module.Net(upscale_factor=2)  # PixelShuffle and init.orthogonal_
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)

    def make(r):
        return (r.uniform(size=(2, 1, 8, 8)),), r.uniform(size=(2, 1, 16, 16))

    return _supervised(lib, model, optimizer, _batches(rng, 3, make), lib.nn.MSELoss())


def examples_mnist(lib, module, rng) -> Run:
    """mnist/main.py: its Net and its own train() function, one batch per call (the
    harness gives both libraries the same dropout masks)."""
    model = module.Net()
    optimizer = lib.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = lib.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    batches = _batches(rng, 3, lambda r: (lib.tensor(r.normal(size=(4, 1, 28, 28))),
                                          lib.tensor(r.integers(0, 10, 4))))
    args = argparse.Namespace(log_interval=10 ** 9, dry_run=False)
    losses = []
    original = lib.nn.functional.nll_loss

    def recording_nll(*a, **k):
        loss = original(*a, **k)
        losses.append(loss.item())
        return loss

    class Loader(list):
        dataset = range(4)

    def step(k: int) -> float:
        module.F.nll_loss = recording_nll  # observe the loss the repository's train() computes
        module.train(args, model, "cpu", Loader([batches[k % len(batches)]]), optimizer, k + 1)
        scheduler.step()
        return losses[-1]

    return Run(model, step)


def examples_fast_neural_style(lib, module, rng) -> Run:
    model = module.TransformerNet()  # InstanceNorm2d, ReflectionPad2d, upsampling
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)

    def make(r):
        x = r.uniform(size=(1, 3, 16, 16))
        return (x,), x

    return _supervised(lib, model, optimizer, _batches(rng, 2, make), lib.nn.MSELoss())


# ----- lucidrains/vit-pytorch and omihub777/ViT-CIFAR -------------------------------------------
def _register_einops(lib) -> None:
    """einops picks a backend per tensor type; register the engine's Tensor with a torch
    backend bound to the engine (the harness's job, not the model's)."""
    import einops._backends as backends

    if lib.Tensor in backends._type2backend:
        return
    backend = backends.TorchBackend()
    backend.torch = lib
    backends._type2backend[lib.Tensor] = backend
    backends._type2backend[lib.nn.Parameter] = backend


def _vit(kind: str, **kwargs) -> Callable:
    def recipe(lib, module, rng) -> Run:
        _register_einops(lib)
        model = getattr(module, kind)(**kwargs)
        optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
        return _supervised(lib, model, optimizer, _batches(rng, 3, _images(2, 3, 16, 10)),
                           lib.nn.CrossEntropyLoss())

    return recipe


vitpytorch_vit = _vit("ViT", image_size=16, patch_size=4, num_classes=10, dim=32, depth=2,
                      heads=2, mlp_dim=64, dim_head=16)
vitpytorch_simple_vit = _vit("SimpleViT", image_size=16, patch_size=4, num_classes=10, dim=32,
                             depth=2, heads=2, mlp_dim=64, dim_head=16)
vitpytorch_cait = _vit("CaiT", image_size=16, patch_size=4, num_classes=10, dim=32, depth=2,
                       cls_depth=1, heads=2, mlp_dim=64, dim_head=16, dropout=0.0,
                       emb_dropout=0.0, layer_dropout=0.0)


def vitcifar_vit(lib, module, rng) -> Run:
    model = module.ViT(in_c=3, num_classes=10, img_size=16, patch=4, dropout=0.0,
                       num_layers=2, hidden=32, mlp_hidden=64, head=2, is_cls_token=True)
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999),
                               weight_decay=5e-5)
    return _supervised(lib, model, optimizer, _batches(rng, 3, _images(2, 3, 16, 10)),
                       lib.nn.CrossEntropyLoss(label_smoothing=0.1))


# ----- kuangliu/pytorch-cifar ---------------------------------------------------------------------
def _cifar(kind: str, *args, batch: int = 2, lr: float = 0.01) -> Callable:
    def recipe(lib, module, rng) -> Run:
        model = getattr(module, kind)(*args)
        optimizer = lib.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
        return _supervised(lib, model, optimizer, _batches(rng, 3, _images(batch, 3, 32, 10)),
                           lib.nn.CrossEntropyLoss())

    return recipe


cifar_lenet = _cifar("LeNet")
cifar_resnet18 = _cifar("ResNet18")
# NOTE: with batch norm over 2 images at 2x2 pixels, rounding differences grow ~100x per
# step at lr 0.01 (both libraries' runs are chaotic, not wrong); over 8 images at lr 0.001
# they grow ~3x per step, so the comparison measures the engine, not that sensitivity.
cifar_mobilenet = _cifar("MobileNet", batch=8, lr=0.001)


# ----- jvanvugt/pytorch-unet ----------------------------------------------------------------------
def unet(lib, module, rng) -> Run:
    model = module.UNet(in_channels=1, n_classes=2, depth=3, wf=2, padding=True,
                        batch_norm=True, up_mode="upconv")
    optimizer = lib.optim.Adam(model.parameters())

    def make(r):
        return (r.normal(size=(2, 1, 16, 16)),), r.integers(0, 2, size=(2, 16, 16))

    return _supervised(lib, model, optimizer, _batches(rng, 3, make),
                       lib.nn.CrossEntropyLoss())


# ----- jadore801120/attention-is-all-you-need-pytorch ---------------------------------------------
def aiayn_transformer(lib, module, rng) -> Run:
    model = module.Transformer(30, 32, src_pad_idx=0, trg_pad_idx=0, d_word_vec=16, d_model=16,
                               d_inner=32, n_layers=2, n_head=2, d_k=8, d_v=8, dropout=0.0,
                               n_position=20)
    optimizer = lib.optim.Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-09, lr=1e-3)

    def make(r):
        src = r.integers(1, 30, size=(3, 7))
        trg = r.integers(1, 32, size=(3, 6))
        src[0, -2:] = 0  # padding, masked by the model
        return (src, trg[:, :-1]), trg[:, 1:].reshape(-1)

    def loss_fn(pred, gold):
        return lib.nn.functional.cross_entropy(pred, gold, ignore_index=0)

    return _supervised(lib, model, optimizer, _batches(rng, 3, make), loss_fn)


# ----- graykode/nlp-tutorial: the BERT of 5-2.BERT/BERT.py ---------------------------------------
BERT_GLOBALS = dict(maxlen=12, batch_size=4, max_pred=3, n_layers=2, n_heads=2, d_model=16,
                    d_ff=32, d_k=8, d_v=8, n_segments=2, vocab_size=20)


def nlptutorial_bert(lib, module, rng) -> Run:
    for name, value in BERT_GLOBALS.items():  # the script sets these in its __main__ block
        setattr(module, name, value)
    model = module.BERT()
    criterion = lib.nn.CrossEntropyLoss()
    optimizer = lib.optim.Adam(model.parameters(), lr=0.001)

    def make(r):
        ids = r.integers(4, 20, size=(4, 12))
        segments = (np.arange(12) >= 6).astype(np.int64)[None].repeat(4, 0)
        masked_pos = r.integers(0, 12, size=(4, 3))
        return ids, segments, masked_pos, r.integers(0, 20, size=(4, 3)), r.integers(0, 2, 4)

    batches = _batches(rng, 3, make)

    def step(k: int) -> float:  # the script's loop
        ids, segments, masked_pos, masked_tokens, is_next = (lib.tensor(v) for v in
                                                             batches[k % len(batches)])
        optimizer.zero_grad()
        logits_lm, logits_clsf = model(ids, segments, masked_pos)
        loss = criterion(logits_lm.transpose(1, 2), masked_tokens).float().mean() + \
            criterion(logits_clsf, is_next)
        loss.backward()
        optimizer.step()
        return loss.item()

    return Run(model, step)


# ----- eriklindernoren/PyTorch-GAN: WGAN-GP with its gradient penalty -----------------------------
def pytorchgan_wgan_gp(lib, module, rng) -> Run:
    generator, discriminator = module.Generator(), module.Discriminator()
    opt_g = lib.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = lib.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    model = lib.nn.ModuleDict({"generator": generator, "discriminator": discriminator})
    shape = module.img_shape
    batches = _batches(rng, 3, lambda r: (r.normal(size=(4, *shape)),
                                          r.normal(size=(4, module.opt.latent_dim))))

    def step(k: int) -> float:  # wgan_gp.py's loop, with its compute_gradient_penalty
        real, z = (lib.tensor(v) for v in batches[k % len(batches)])
        opt_d.zero_grad()
        fake = generator(z)
        penalty = module.compute_gradient_penalty(discriminator, real.data, fake.data)
        d_loss = -lib.mean(discriminator(real)) + lib.mean(discriminator(fake)) + 10 * penalty
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = -lib.mean(discriminator(generator(z)))
        g_loss.backward()
        opt_g.step()
        return d_loss.item() + g_loss.item()

    return Run(model, step)


WGAN_OPT = types.SimpleNamespace(latent_dim=8, img_size=8, channels=1, lr=2e-4, b1=0.5,
                                 b2=0.999, n_critic=5, clip_value=0.01, sample_interval=400,
                                 n_epochs=1, batch_size=4, n_cpu=1)
DCGAN_GLOBALS = dict(ngpu=1, nz=8, ngf=4, ndf=4, nc=1, device="cpu")


def examples_dcgan(lib, module, rng) -> Run:
    """dcgan/main.py: its Generator, Discriminator and weights_init, and its loss."""
    net_g, net_d = module.Generator(1), module.Discriminator(1)
    net_g.apply(module.weights_init)
    net_d.apply(module.weights_init)
    criterion = lib.nn.BCELoss()
    opt_d = lib.optim.Adam(net_d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_g = lib.optim.Adam(net_g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    model = lib.nn.ModuleDict({"netG": net_g, "netD": net_d})
    batches = _batches(rng, 3, lambda r: (r.uniform(-1, 1, size=(2, 1, 64, 64)),
                                          r.normal(size=(2, 8, 1, 1))))

    def step(k: int) -> float:  # the script's update of D, then of G
        real, noise = (lib.tensor(v) for v in batches[k % len(batches)])
        net_d.zero_grad()
        output = net_d(real)
        err_real = criterion(output, lib.full((2,), 1.0, dtype=real.dtype))
        err_real.backward()
        fake = net_g(noise)
        err_fake = criterion(net_d(fake.detach()), lib.full((2,), 0.0, dtype=real.dtype))
        err_fake.backward()
        opt_d.step()
        net_g.zero_grad()
        err_g = criterion(net_d(fake), lib.full((2,), 1.0, dtype=real.dtype))
        err_g.backward()
        opt_g.step()
        return err_real.item() + err_fake.item() + err_g.item()

    return Run(model, step)


# scripts loaded as their definitions: the globals their argument parsing would have made
DEFINITIONS = {
    "pytorchgan_wgan_gp": dict(globals={"opt": WGAN_OPT},
                               keep=("img_shape", "cuda", "Tensor", "lambda_gp")),
    "examples_dcgan": dict(globals=DCGAN_GLOBALS, keep=()),
    "examples_mnist": dict(globals={}, keep=()),     # imports torchvision for its data only
}


# ----- timm (pypi): its ViT, created as timm's users do -----------------------------------------
def timm_vit(lib, module, rng) -> Run:
    model = module.create_model("vit_tiny_patch16_224", img_size=16, patch_size=4,
                                num_classes=10, embed_dim=32, depth=2, num_heads=2,
                                drop_rate=0.0)
    optimizer = lib.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    return _supervised(lib, model, optimizer, _batches(rng, 3, _images(2, 3, 16, 10)),
                       lib.nn.CrossEntropyLoss(label_smoothing=0.1))


def timm_resnet(lib, module, rng) -> Run:
    model = module.create_model("resnet10t", num_classes=10)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.001, momentum=0.9, nesterov=True)
    return _supervised(lib, model, optimizer, _batches(rng, 3, _images(4, 3, 32, 10)),
                       lib.nn.CrossEntropyLoss())
