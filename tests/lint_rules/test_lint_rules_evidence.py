"""GC001 `straight` and GC002 `stale` are reported by default only where the file shows the
bug; where the answer rests on what the analysis could not see, the finding is the
`unproven` form, reported with `--preview` only (lint_rules/evidence.py)."""
from __future__ import annotations

from lint_rules import EVERY_FORM, check_source

TRAINER = '''\
import torch
from torch import nn


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(8, 16)
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        return self.head(torch.relu(self.encoder(x)))


def train(loader, epochs=3):
    model = Regressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            {reset}
            optimizer.step()
            {after}
    return model
'''


def forms(source: str, preview: bool = False) -> list[tuple[str, str]]:
    select = EVERY_FORM if preview else None
    return [(f.code, f.pattern) for f in check_source(source, "train.py", strict=True, select=select)]


def test_the_stepped_optimizers_own_reset_before_its_step_is_reported_by_default() -> None:
    source = TRAINER.format(reset="optimizer.zero_grad()", after="")
    assert forms(source) == [("GC001", "straight")]


def test_a_reset_of_the_network_the_optimizer_was_built_over_is_reported_by_default() -> None:
    source = TRAINER.format(reset="model.zero_grad()", after="")
    assert forms(source) == [("GC001", "straight")]


def test_reading_gradients_or_clipping_between_the_reset_and_the_step_keeps_the_evidence() -> None:
    # a gradient norm logged and a clip (under any name) read or rescale; they write nothing back
    reset = ("optimizer.zero_grad()\n"
             "            norm = sum(p.grad.norm() ** 2 for p in model.parameters()) ** 0.5\n"
             "            torch.nn.utils.clip_grad_norm(model.parameters(), 1.0)")
    assert forms(TRAINER.format(reset=reset, after="")) == [("GC001", "straight")]


def test_gradients_written_back_between_the_reset_and_the_step_make_it_unproven() -> None:
    # saved, cleared and written back corrected before the step, as federated clients do:
    # a helper the file does not define writes them, so what the step applies is unknown
    reset = ("saved = [p.grad.clone() for p in model.parameters()]\n"
             "            optimizer.zero_grad()\n"
             "            write_grads(model, saved)")
    source = TRAINER.format(reset=reset, after="")
    assert forms(source) == []
    assert forms(source, preview=True) == [("GC001", "unproven")]
    # written back in the loop itself, the analysis sees the write and reports nothing
    inline = reset.replace("write_grads(model, saved)",
                           "for p, g in zip(model.parameters(), saved):\n"
                           "                p.grad.copy_(g * 0.5)")
    assert forms(TRAINER.format(reset=inline, after=""), preview=True) == []


def test_a_reset_of_one_part_of_the_network_before_the_step_is_unproven() -> None:
    # clearing the encoder's gradients before the step freezes it for that step, on purpose
    source = TRAINER.format(reset="model.encoder.zero_grad()", after="")
    assert forms(source) == []
    assert forms(source, preview=True) == [("GC001", "unproven")]


def test_a_loop_that_never_resets_is_stale_when_nothing_else_in_the_file_resets() -> None:
    source = TRAINER.format(reset="", after="")
    assert forms(source) == [("GC002", "stale")]


def test_a_reset_in_another_trainers_own_parameter_does_not_weaken_the_evidence() -> None:
    other = ("\n\ndef finetune(model, optimizer, loader):\n"
             "    for x, y in loader:\n"
             "        optimizer.zero_grad()\n"
             "        nn.functional.mse_loss(model(x), y).backward()\n"
             "        optimizer.step()\n")
    source = TRAINER.format(reset="", after="") + other
    assert forms(source) == [("GC002", "stale")]


def test_a_reset_kept_on_an_object_the_loop_may_reach_makes_the_finding_unproven() -> None:
    # `self.optimizer` outlives any one call: a method the analysis did not see called
    # (a callback, a hook) may be the reset the loop seems to lack
    source = '''\
import torch
from torch import nn


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def on_batch_start(self):
        self.optimizer.zero_grad()

    def fit(self, loader, epochs=2):
        for _ in range(epochs):
            for x, y in loader:
                loss = nn.functional.mse_loss(self.model(x), y)
                loss.backward()
                self.optimizer.step()
        return self.model


def main(loader):
    trainer = Trainer(nn.Linear(4, 1))
    return trainer.fit(loader)
'''
    assert forms(source) == []
    assert forms(source, preview=True) == [("GC002", "unproven")]


def test_a_helper_named_for_zeroing_elsewhere_makes_the_finding_unproven() -> None:
    helper = ("\n\ndef zero_optim_grads(optimizer):\n"
              "    for group in optimizer.param_groups:\n"
              "        for p in group['params']:\n"
              "            p.grad = None\n"
              "\n\nRESET = zero_optim_grads\n")
    source = TRAINER.format(reset="", after="") + helper
    assert forms(source) == [("GC002", "stale")]  # its `p.grad = None` acts on its own argument
    called = source.replace("RESET = zero_optim_grads", "def reset(opt):\n    zero_optim_grads(opt)")
    assert forms(called) == []
    assert forms(called, preview=True) == [("GC002", "unproven")]


def test_another_optimizer_built_here_and_reset_elsewhere_keeps_the_evidence() -> None:
    # a GAN's generator optimizer never reset, while the discriminator's is reset in its
    # own method: the discriminator's reset cannot be the generator's
    source = '''\
import torch
from torch import nn


class GAN:
    def __init__(self):
        self.generator = nn.Linear(4, 8)
        self.discriminator = nn.Linear(8, 1)
        self.opt_g = torch.optim.Adam(self.generator.parameters(), lr=2e-4)
        self.opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=2e-4)

    def update_discriminator(self, real, noise):
        self.opt_d.zero_grad()
        fake = self.generator(noise).detach()
        loss = self.discriminator(fake).mean() - self.discriminator(real).mean()
        loss.backward()
        self.opt_d.step()

    def update_generator(self, noise):
        loss = -self.discriminator(self.generator(noise)).mean()
        loss.backward()
        self.opt_g.step()

    def fit(self, loader):
        for real, noise in loader:
            self.update_discriminator(real, noise)
            self.update_generator(noise)
'''
    assert ("GC002", "stale") in forms(source)


def test_the_same_attribute_reset_in_an_unrelated_class_keeps_the_evidence() -> None:
    # two trainers of one file each keep `self.optim`; one forgot its reset, and the other
    # class's reset acts on another object
    source = '''\
import torch
from torch import nn


class EncoderTrainer:
    def __init__(self, model):
        self.model = model
        self.optim = torch.optim.Adam(model.parameters(), lr=1e-3)

    def train_step(self, x):
        self.optim.zero_grad()
        loss = self.model(x).pow(2).mean()
        loss.backward()
        self.optim.step()


class DecoderTrainer:
    def __init__(self, model):
        self.model = model
        self.optim = torch.optim.Adam(model.parameters(), lr=1e-3)

    def fit(self, loader):
        for x in loader:
            loss = self.model(x).pow(2).mean()
            loss.backward()
            self.optim.step()
'''
    assert forms(source) == [("GC002", "stale")]
    derived = source.replace("class DecoderTrainer:", "class DecoderTrainer(EncoderTrainer):")
    assert forms(derived) == []  # the base class's method may run on the same object
    assert forms(derived, preview=True) == [("GC002", "unproven")]


def test_another_plainly_named_optimizers_reset_beside_the_step_keeps_the_evidence() -> None:
    # an actor-critic update resets the critic's optimizer and forgets the actor's
    source = '''\
import torch
from torch import nn


class ActorCritic:
    def __init__(self, actor, critic):
        self.actor, self.critic = actor, critic

    def update(self, batch):
        for obs, ret in batch:
            value_loss = (self.critic(obs) - ret).pow(2).mean()
            self.critic.optimizer.zero_grad()
            value_loss.backward()
            self.critic.optimizer.step()
            policy_loss = -self.critic(self.actor(obs)).mean()
            policy_loss.backward()
            self.actor.optimizer.step()
'''
    assert ("GC002", "stale") in forms(source)


def test_the_only_network_of_a_loop_whose_optimizer_a_helper_builds_is_the_trained_one() -> None:
    # what `configure_optimizers` puts in the optimizer is not in this file, but the loop
    # runs no other network: the reset clears the gradients the step should apply
    source = '''\
import torch


def train(model, loader, config, epochs=1):
    optimizer = model.configure_optimizers(config)
    model.train()
    for _ in range(epochs):
        for x, y in loader:
            logits, loss = model(x, y)
            loss.backward()
            model.zero_grad(set_to_none=True)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
    return model
'''
    assert forms(source) == [("GC001", "straight")]
    teacher = source.replace("def train(model,", "def train(teacher, model,").replace(
        "    model.train()\n", "    model.train()\n    teacher.eval()\n").replace(
        "logits, loss = model(x, y)", "logits, loss = model(teacher(x), y)")
    # a second network runs: which one the step trains is unsaid, so nothing is reported
    assert forms(teacher) == forms(teacher, preview=True) == []


def test_a_step_helper_that_no_loop_here_calls_is_unproven() -> None:
    # the method runs once per batch from a pipeline elsewhere, which may reset before each call
    source = '''\
import torch


class BaseAlgorithm:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def loss_postprocess(self, loss, mask):
        return (loss * mask).sum() / mask.sum()

    def update(self, loss):
        loss.backward()
        self.optimizer.step()
'''
    assert forms(source) == []
    assert forms(source, preview=True) == [("GC002", "unproven")]
    looped = source + '''

def fit(model, loader):
    algorithm = BaseAlgorithm(model)
    for x, y, mask in loader:
        loss = torch.nn.functional.mse_loss(algorithm.model(x), y, reduction="none")
        algorithm.update(algorithm.loss_postprocess(loss, mask))
'''
    assert forms(looped) == [("GC002", "stale")]  # the loop that calls it is in the file


def test_a_hook_the_framework_runs_once_per_batch_is_evidence_of_the_loop() -> None:
    source = '''\
import torch
import lightning as L


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.manual_backward(loss)
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
'''
    assert forms(source) == [("GC002", "stale")]


WRAPPED = '''\
import torch
from torch import nn


class WarmupOptim:
    def __init__(self, optimizer, warmup):
        self._optimizer = optimizer
        self.warmup = warmup
        self.n = 0

    def step(self):
        self.n += 1
        for group in self._optimizer.param_groups:
            group["lr"] = min(1.0, self.n / self.warmup) * 1e-3
        self._optimizer.step()

    def zero_grad(self):
        self._optimizer.zero_grad()


def train(loader, epochs=3):
    net = nn.Linear(4, 1)
    optimizer = WarmupOptim(torch.optim.Adam(net.parameters(), lr=1e-3), 4000)
    for _ in range(epochs):
        for x, y in loader:
            nn.functional.mse_loss(net(x), y).backward()
            optimizer.step()
'''


def test_a_never_reset_object_of_a_project_class_that_is_no_optimizer_is_unproven() -> None:
    # the class is the project's own: wrappers like it have reset in step(), written their
    # own gradients or averaged weights, so its step is no evidence of torch's semantics
    assert forms(WRAPPED) == []
    assert forms(WRAPPED, preview=True) == [("GC002", "unproven")]
    plain = WRAPPED[:WRAPPED.index("class")] + WRAPPED[WRAPPED.index("def train"):].replace(
        "WarmupOptim(torch.optim.Adam(net.parameters(), lr=1e-3), 4000)",
        "torch.optim.Adam(net.parameters(), lr=1e-3)")
    assert forms(plain) == [("GC002", "stale")]


def test_an_optimizer_built_by_a_callable_handed_in_is_unproven() -> None:
    # `opt_func` is whatever the caller passes: here a course's own SGD, whose step()
    # clears the gradients it applies
    source = '''\
import torch


class SGD:
    def __init__(self, params, lr):
        self.params, self.lr = list(params), lr

    def step(self):
        for p in self.params:
            p.data -= p.grad.data * self.lr
            p.grad.data.zero_()


class Learner:
    def __init__(self, model, loader, lr, opt_func=SGD):
        self.model, self.loader, self.lr, self.opt_func = model, loader, lr, opt_func

    def fit(self, epochs):
        self.opt = self.opt_func(self.model.parameters(), self.lr)
        for _ in range(epochs):
            for x, y in self.loader:
                loss = torch.nn.functional.mse_loss(self.model(x), y)
                loss.backward()
                self.opt.step()
'''
    assert forms(source) == []
    assert forms(source, preview=True) == [("GC002", "unproven")]
    built_here = source[source.index("class Learner"):].replace(
        "self.opt_func(self.model.parameters(), self.lr)",
        "torch.optim.SGD(self.model.parameters(), self.lr)").replace(", opt_func=SGD", "")
    assert forms("import torch\n\n\n" + built_here) == [("GC002", "stale")]


def test_a_callable_handed_in_that_defaults_to_a_torch_optimizer_keeps_the_evidence() -> None:
    source = '''\
import torch


def training(epochs, model, loader, opt_func=torch.optim.Adam):
    optimizer = opt_func(model.parameters())
    for _ in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
'''
    assert forms(source) == [("GC002", "stale")]
    assert forms(source.replace("opt_func=torch.optim.Adam", "opt_func")) == []


COURSE_FRAMEWORK = '''\
import numpy as np

from mytorch.models import MLP
from mytorch.optim.adam import Adam


def train(batches, epochs=5):
    model = MLP([8, 16, 1])
    optimizer = Adam(model, lr=0.01)
    for _ in range(epochs):
        for x, y in batches:
            loss = model.loss(model.forward(x), y)
            model.backward(loss)
            optimizer.step()
    return model
'''


def test_an_optimizer_class_imported_from_the_project_is_its_own_and_unproven() -> None:
    # A course's own NumPy framework: its backward assigns gradients rather than adding them,
    # and its `Adam` is not torch's, whatever its name.
    assert forms(COURSE_FRAMEWORK) == []
    assert forms(COURSE_FRAMEWORK, preview=True) == [("GC002", "unproven")]


def test_an_optimizer_class_imported_from_torch_or_an_optimizer_library_keeps_the_evidence() -> None:
    for line in ("from torch.optim import Adam", "from torch_optimizer import Adam"):
        source = COURSE_FRAMEWORK.replace("from mytorch.optim.adam import Adam", line)
        assert forms(source) == [("GC002", "stale")], line


def test_a_projects_own_optimizer_class_in_a_torch_program_keeps_the_evidence() -> None:
    # an assignment's own AdamW, written over torch.optim.Optimizer, used in a torch program
    source = "import torch\n" + COURSE_FRAMEWORK.replace(
        "from mytorch.optim.adam import Adam", "from optimizer import Adam")
    assert forms(source) == [("GC002", "stale")]


CLASSIFIERS = '''\
import torch
from torch import nn


class Classifier:
    def __init__(self, model, lr=1e-3):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr)

    def train(self, x, y):
        loss = nn.functional.mse_loss(self.model(x), y)
        {base_reset}
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def fit(self, batches):
        for x, y in batches:
            self.train(x, y)


class PeerClassifier(Classifier):
    def train(self, x, y):
        loss = nn.functional.mse_loss(self.model(x), y) - 0.1 * self.model(x).var()
        {peer_reset}
        loss.backward()
        self.optimizer.step()
        return loss.item()
'''


def test_a_reset_in_an_override_runs_only_for_the_other_classs_objects() -> None:
    # Each class's `train` is the whole update for its own objects: the subclass's reset
    # never runs for a plain Classifier, nor the base's for a PeerClassifier.
    reset = "self.optimizer.zero_grad()"
    assert forms(CLASSIFIERS.format(base_reset="", peer_reset=reset)) == [("GC002", "stale")]
    assert forms(CLASSIFIERS.format(base_reset=reset, peer_reset="")) == [("GC002", "stale")]
    assert forms(CLASSIFIERS.format(base_reset=reset, peer_reset=reset)) == []



EXERCISE_SOLVER = '''\
import numpy as np

from exercise_code.networks.optimizer import Adam


class Solver:
    def __init__(self, model, loader, optimizer=Adam, learning_rate=1e-3):
        self.model = model
        self.loader = loader
        self.opt = optimizer(model, learning_rate)

    def train(self, epochs=10):
        for _ in range(epochs):
            for x, y in self.loader:
                loss = self.model.loss(self.model.forward(x), y)
                self.opt.backward(loss)
                self.opt.step()
'''


def test_a_callable_handed_in_that_defaults_to_an_exercises_own_adam_is_unproven() -> None:
    # the default names `Adam`, but the exercise's NumPy one: its model assigns gradients
    assert forms(EXERCISE_SOLVER) == []
    assert forms(EXERCISE_SOLVER, preview=True) == [("GC002", "unproven")]
    torch_default = EXERCISE_SOLVER.replace(
        "from exercise_code.networks.optimizer import Adam", "from torch.optim import Adam")
    assert forms(torch_default.replace("self.opt.backward(loss)", "loss.backward()")) == \
        [("GC002", "stale")]


GAN_TRAINER = '''\
import torch
import torch.nn.functional as F


class BaseTrainer:
    def __init__(self, model, optimizer_G, optimizer_D):
        self.model = model
        self.optimizer_G = optimizer_G
        self.optimizer_D = optimizer_D


class Trainer(BaseTrainer):
    def __init__(self, model, optimizer_G, optimizer_D, loader):
        super().__init__(model, optimizer_G, optimizer_D)
        self.loader = loader
        self.generator_opt = {generator}
        self.discriminator_opt = {discriminator}

    def train_epoch(self):
        for x, y in self.loader:
            self.optimizer_D.zero_grad()
            real, fake = self.model(x, y, train_d=True)
            loss_d = F.binary_cross_entropy(real, torch.ones_like(real)) + \\
                F.binary_cross_entropy(fake, torch.zeros_like(fake))
            loss_d.backward()
            self.discriminator_opt.step()
            self.optimizer_G.zero_grad()
            fake = self.model(x)
            loss_g = F.binary_cross_entropy(fake, torch.ones_like(fake))
            loss_g.backward()
            self.generator_opt.step()
'''


def test_two_attributes_bound_from_one_handed_in_optimizer_may_be_one_object() -> None:
    # the base class keeps the optimizers as `optimizer_D`, the trainer again as
    # `discriminator_opt`: each reset may well be the stepped optimizer's own
    aliases = GAN_TRAINER.format(generator="optimizer_G", discriminator="optimizer_D")
    assert forms(aliases) == []
    assert forms(aliases, preview=True) == [("GC002", "unproven")] * 2
    # built here, the trainer's own optimizers are other objects than the base class's
    built = GAN_TRAINER.format(generator="torch.optim.Adam(model.generator.parameters())",
                               discriminator="torch.optim.Adam(model.discriminator.parameters())")
    assert forms(built) == [("GC002", "stale")] * 2


LEFTOVER = '''\
import torch


class Trainer:
    def __init__(self, args):
        self.args = args

    def do_train(self, model, loader, criterion):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        while True:
            left = self.args.update_epochs
            for x, y in loader:
                if left == self.args.update_epochs:
                    optimizer.zero_grad()
                left -= 1
                criterion(model(x), y).backward(){every_batch}
                if not left:
                    optimizer.step()
                    left = self.args.update_epochs
            if not left:
                optimizer.step()
            if self.args.done:
                return model
'''


def test_a_step_for_the_leftover_batches_tests_the_windows_own_counter() -> None:
    # `if not left:` after the loop runs only when the last window stayed open: it never
    # applies a window the loop already stepped
    assert forms(LEFTOVER.format(every_batch="")) == []
    # a step on every batch as well: the window's step applies those gradients again
    again = LEFTOVER.format(every_batch="\n                optimizer.step()")
    assert forms(again) == [("GC002", "restep")]


def test_attributes_a_hollowed_constructor_fills_from_a_dict_are_other_objects() -> None:
    # `__init__` mentions no optimizer (so its body is hollowed before the analysis), yet
    # it shows each attribute filled from its own entry: the critic's reset is not the
    # actor's missing one
    source = '''\
import torch


class Trainer(Base):
    def __init__(self, parts):
        self.actor = parts["actor"]["net"]
        self.actor_opt = parts["actor"]["opt"]
        self.critic_opt = parts["critic"]["opt"]

    def train(self, batches):
        for batch in batches:
            self.critic_opt.zero_grad()
            self.critic_loss(batch).backward()
            self.critic_opt.step()
            self.actor_loss(batch).backward()
            self.actor_opt.step()
'''
    assert forms(source) == [("GC002", "stale")]
