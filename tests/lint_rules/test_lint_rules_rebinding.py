"""Names that are rebound (loop targets, reassignments, aliases) do not carry gradient state.

A loop over optimizers, or over (model, optimizer) pairs, steps a different optimizer on every
iteration; the loop around it still carries state for all of them. These whole programs pin
both halves: the correct ones stay silent, the buggy ones keep their exact finding.
"""
from __future__ import annotations

import pytest

from lint_rules.testing import program_findings

SILENT = {
    "tuple-target-rebinds-opt": """
        t_opt = torch.optim.Adam(t_model.parameters(), lr=0.01)
        r_opt = ref.optim.Adam(r_model.parameters(), lr=0.01)
        for lib, model, opt in ((torch, t_model, t_opt), (ref, r_model, r_opt)):
            lib.nn.functional.mse_loss(model(lib.tensor(x)), lib.tensor(y)).backward()
            opt.step()
    """,
    "zip-models-opts": """
        for model, opt in zip(models, opts):
            model(x).sum().backward()
            opt.step()
    """,
    "reassigned-from-list": """
        for i in range(len(configs)):
            optimizer = optimizers[i]
            model = models[i]
            model(x).sum().backward()
            optimizer.step()
    """,
    "reassigned-factory": """
        for cfg in sweep:
            model = build(cfg)
            opt = make_opt()
            model(x).sum().backward()
            opt.step()
    """,
    "per-opt-loop-no-outer": """
        for opt in [opt_g, opt_d]:
            model(x).sum().backward()
            opt.step()
    """,
    "gan-inner-opt-loop": """
        for real in loader:
            for opt, loss_fn in ((opt_d, d_loss), (opt_g, g_loss)):
                opt.zero_grad()
                loss_fn(real).backward()
                opt.step()
    """,
    "rl-opt-group-loop": """
        optimizers = [torch.optim.Adam(m.parameters()) for m in nets]
        for batch in loader:
            for i, opt in enumerate(optimizers):
                loss = nets[i](batch).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """,
    "rl-opt-group-loop-zero-after": """
        for batch in loader:
            losses = compute_losses(batch)
            for opt in optimizers:
                opt.zero_grad()
            sum(losses).backward()
            for opt in optimizers:
                opt.step()
    """,
    "optimizers-dict-items": """
        for batch in loader:
            for name, opt in optimizers.items():
                opt.zero_grad()
                losses[name](batch).backward()
                opt.step()
    """,
    "two-opts-zero-loop-top": """
        opt_a = torch.optim.Adam(enc.parameters())
        opt_b = torch.optim.Adam(dec.parameters())
        for x in loader:
            for opt in (opt_a, opt_b):
                opt.zero_grad()
            loss = dec(enc(x)).mean()
            loss.backward()
            opt_a.step()
            opt_b.step()
    """,
    "sparse-dense-two-opts": """
        sparse_opt = torch.optim.SparseAdam(list(model.embedding.parameters()))
        dense_opt = torch.optim.Adam(list(model.mlp.parameters()))
        for users, items, y in loader:
            for opt in (sparse_opt, dense_opt):
                opt.zero_grad()
            loss_fn(model(users, items), y).backward()
            for opt in (sparse_opt, dense_opt):
                opt.step()
    """,
    "opts-step-model-zero": """
        opt_body = torch.optim.SGD(model.body.parameters(), lr=0.1)
        opt_head = torch.optim.SGD(model.head.parameters(), lr=1.0)
        for x, y in loader:
            loss_fn(model(x), y).backward()
            for opt in [opt_body, opt_head]:
                opt.step()
            model.zero_grad()
    """,
    "optimizer-swap-phase": """
        for phase, optimizer in [("warmup", warm_opt), ("main", main_opt)]:
            for x, y in loaders[phase]:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
    """,
    "optimizer-swap-phase-fresh-model": """
        for name, (model, opt) in runs.items():
            for x, y in loader:
                criterion(model(x), y).backward()
                opt.step()
                opt.zero_grad()
    """,
    "opt-reset-each-epoch-list": """
        for epoch in range(E):
            opt = optimizers[epoch % 2]
            for x, y in loader:
                opt.zero_grad()
                criterion(model(x), y).backward()
                opt.step()
    """,
    "kfold": """
        for fold, (tr, va) in enumerate(kfold.split(data)):
            model = Net()
            optimizer = torch.optim.Adam(model.parameters())
            for epoch in range(epochs):
                for x, y in DataLoader(Subset(data, tr)):
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()
    """,
    "alias-local-optimizer": """
        class Trainer:
            def train(self, loader):
                optimizer = self.optimizer
                for batch in loader:
                    optimizer.zero_grad()
                    self.model(batch).loss.backward()
                    self.optimizer.step()
    """,
    "lightning-manual": """
        class GAN(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.automatic_optimization = False

            def training_step(self, batch, batch_idx):
                opt_g, opt_d = self.optimizers()
                g_loss = self.generator_loss(batch)
                opt_g.zero_grad()
                self.manual_backward(g_loss)
                opt_g.step()
                d_loss = self.discriminator_loss(batch)
                opt_d.zero_grad()
                self.manual_backward(d_loss)
                opt_d.step()
    """,
    "lightning-manual-single": """
        class Model(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                opt.zero_grad()
                loss = self.compute_loss(batch)
                self.manual_backward(loss)
                opt.step()
    """,
    "group-getter-zero": """
        class LitModel(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                for opt in self.optimizers():
                    opt.zero_grad()
                loss = self.loss(batch)
                self.manual_backward(loss)
                for opt in self.optimizers():
                    opt.step()
    """,
    "comprehension-zero-loop-step": """
        for batch in loader:
            [opt.zero_grad() for opt in optimizers]
            model(batch).loss.backward()
            for opt in optimizers:
                opt.step()
    """,
    "comprehension-both": """
        for batch in loader:
            [opt.zero_grad() for opt in optimizers]
            model(batch).loss.backward()
            [opt.step() for opt in optimizers]
    """,
    "zero-both-named-step-in-loop": """
        for batch in loader:
            opt_a.zero_grad()
            opt_b.zero_grad()
            model(batch).loss.backward()
            for opt in (opt_a, opt_b):
                opt.step()
    """,
    "dict-values-loop": """
        for batch in loader:
            for opt in optimizers.values():
                opt.zero_grad()
            model(batch).loss.backward()
            for opt in optimizers.values():
                opt.step()
    """,
}

BUGGY = {
    # a getter called with arguments still hands back the same optimizer
    "lightning-getter-with-arguments-no-zero": ("""
        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                opt = self.optimizers(use_pl_optimizer=True)
                self.manual_backward(self.loss(batch))
                opt.step()
    """, [(7, "GC002")]),
    # the inner loop visits each optimizer once; the outer loop carries all of them
    "outer-carries-group": ("""
        for batch in loader:
            for opt in optimizers:
                model(batch).sum().backward()
                opt.step()
    """, [(6, "GC002")]),
    # the same through enumerate(): the member name still stands for the group
    "outer-carries-enumerate": ("""
        for batch in loader:
            for i, opt in enumerate(optimizers):
                model(batch).sum().backward()
                opt.step()
    """, [(6, "GC002")]),
    # rebinding on one path only: the other path keeps the old optimizer's state
    "conditional-rebind": ("""
        for epoch in range(E):
            if epoch == 10:
                optimizer = optimizers[1]
            model(x).sum().backward()
            optimizer.step()
    """, [(7, "GC002")]),
    # self.optimizers() hands back the same optimizer on every call
    "lightning-manual-no-zero": ("""
        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                self.manual_backward(self.loss(batch))
                opt.step()
    """, [(7, "GC002")]),
    # a literal list of optimizers stepped every batch and never reset
    "opts-group-no-zero": ("""
        for x, y in loader:
            loss_fn(model(x), y).backward()
            for opt in [opt_body, opt_head]:
                opt.step()
    """, [(6, "GC002")]),
    # the first loop left both optimizers applied; the second re-applies them
    "second-loop-reapplies": ("""
        t_opt = torch.optim.Adam(t_model.parameters(), lr=0.01)
        r_opt = ref.optim.Adam(r_model.parameters(), lr=0.01)
        for lib, model, opt in ((torch, t_model, t_opt), (ref, r_model, r_opt)):
            lib.nn.functional.mse_loss(model(lib.tensor(x)), lib.tensor(y)).backward()
            opt.step()
        for lib, model, opt in ((torch, t_model, t_opt), (ref, r_model, r_opt)):
            lib.nn.functional.mse_loss(model(lib.tensor(x)), lib.tensor(y)).backward()
            opt.step()
    """, [(10, "GC002")]),
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_correct_program_is_silent(name: str) -> None:
    assert program_findings(SILENT[name], name) == []


@pytest.mark.parametrize("name", sorted(BUGGY))
def test_buggy_program_gives_exactly_its_findings(name: str) -> None:
    body, expected = BUGGY[name]
    assert program_findings(body, name) == expected
