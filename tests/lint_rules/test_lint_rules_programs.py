"""Whole programs, one per bug shape and per must-stay-silent pattern of the issue that the
rule examples do not already show (the golden fixtures in fixtures/lint hold the bulk)."""
from __future__ import annotations

import textwrap

import pytest

from lint_rules.testing import program_findings

SILENT = {
    "maml-inner-loop-on-a-deepcopy": """
        class MetaTrainer:
            def __init__(self, model):
                self.model = model
                self.meta_optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)

            def adapt(self, model, loader):
                inner = torch.optim.SGD(model.parameters(), lr=0.01)
                for x, y in loader:
                    inner.zero_grad()
                    nn.functional.mse_loss(model(x), y).backward()
                    inner.step()
                return model

            def meta_step(self, tasks):
                self.meta_optimizer.zero_grad()
                total = 0.0
                for support, query in tasks:
                    learner = self.adapt(copy.deepcopy(self.model), support)
                    for x, y in query:
                        total += nn.functional.mse_loss(learner(x), y)
                total.backward()
                self.meta_optimizer.step()
    """,
    "rl-actor-critic-delayed-policy": """
        actor_opt = torch.optim.Adam(actor.parameters(), lr=3e-4)
        critic_opt = torch.optim.Adam(critic.parameters(), lr=3e-4)
        for it, batch in enumerate(buffer.sample_batches()):
            critic_loss = td_loss(critic, actor, batch)
            critic_opt.zero_grad()
            critic_loss.backward()
            critic_opt.step()
            if it % policy_delay == 0:
                actor_loss = -critic(batch.obs, actor(batch.obs)).mean()
                actor_opt.zero_grad()
                actor_loss.backward()
                actor_opt.step()
    """,
    "ddp-grad-allreduce-writes": """
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            for p in model.parameters():
                torch.distributed.all_reduce(p.grad)
                p.grad.mul_(1.0 / world_size)
            opt.step()
    """,
    "deepspeed-engine": """
        engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters())
        for batch in loader:
            loss = engine(batch)
            engine.backward(loss)
            engine.step()
    """,
    "autograd-grad-meta-learning": """
        meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for task in tasks:
            meta_opt.zero_grad()
            inner = task.loss(model)
            grads = torch.autograd.grad(inner, model.parameters(), create_graph=True)
            fast = [w - 0.01 * g for w, g in zip(model.parameters(), grads)]
            task.loss_with(fast).backward()
            meta_opt.step()
    """,
    "trainer-class-with-helper-methods": """
        class Trainer:
            def __init__(self, model):
                self.model = model
                self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, 10)

            def train_step(self, batch):
                loss = self.model(batch).loss
                loss.backward()
                self.optimizer.step()
                self.scheduler.step()

            def fit(self, loader):
                for batch in loader:
                    self.optimizer.zero_grad(set_to_none=True)
                    self.train_step(batch)
    """,
    "nanogpt-micro-steps": """
        optimizer = model.configure_optimizers(weight_decay, learning_rate, betas)
        scaler = torch.cuda.amp.GradScaler(enabled=True)
        X, Y = get_batch("train")
        while True:
            for micro_step in range(gradient_accumulation_steps):
                with ctx:
                    logits, loss = model(X, Y)
                    loss = loss / gradient_accumulation_steps
                X, Y = get_batch("train")
                scaler.scale(loss).backward()
            if grad_clip != 0.0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
    """,
    "pcgrad-hand-written-gradients": """
        for batch in loader:
            task_grads = []
            for task in tasks:
                optimizer.zero_grad()
                task.loss(model, batch).backward()
                task_grads.append([p.grad.clone() for p in model.parameters()])
            for p, g in zip(model.parameters(), project_conflicts(task_grads)):
                p.grad = g
            optimizer.step()
    """,
    "oom-handler-drops-batch": """
        for x, y in loader:
            optimizer.zero_grad()
            try:
                loss = criterion(model(x), y)
                loss.backward()
            except torch.cuda.OutOfMemoryError:
                optimizer.zero_grad()
                torch.cuda.empty_cache()
                continue
            optimizer.step()
    """,
    "caller-zeroes-before-helper": """
        def step_fn(batch):
            model(batch).backward()
            optimizer.step()

        for batch in loader:
            optimizer.zero_grad()
            step_fn(batch)
    """,
    "timm-need-update-closures": """
        def train_one_epoch(model, loader, optimizer, loss_fn, accum_steps):
            optimizer.zero_grad()
            for batch_idx, (inputs, target) in enumerate(loader):
                need_update = (batch_idx + 1) % accum_steps == 0

                def _forward():
                    return loss_fn(model(inputs), target) / accum_steps

                def _backward(_loss):
                    _loss.backward()
                    if need_update:
                        optimizer.step()

                if not need_update:
                    with model.no_sync():
                        _backward(_forward())
                else:
                    _backward(_forward())
                if not need_update:
                    continue
                optimizer.zero_grad()
    """,
    "fairseq-style-trainer-methods": """
        class Trainer:
            def train_step(self, samples):
                self.zero_grad()
                for sample in samples:
                    loss = self.task.train_step(sample, self.model, self.criterion)
                    self.optimizer.backward(loss)
                self.optimizer.step()

            def zero_grad(self):
                self.optimizer.zero_grad()
    """,
    "ddp-no-sync-continue": """
        for i, batch in enumerate(loader):
            accumulating = (i + 1) % accum != 0
            with (model.no_sync() if accumulating else contextlib.nullcontext()):
                (model(batch) / accum).backward()
            if accumulating:
                continue
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    """,
    "distillation-teacher-zero": """
        student = nn.parallel.DistributedDataParallel(net)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        for x in loader:
            loss = kd_loss(student(x), teacher(x))
            loss.backward()
            teacher.zero_grad()  # the frozen teacher's buffers, not the student's
            optimizer.step()
            optimizer.zero_grad()
    """,
    "lbfgs-closure-in-function": """
        def fit(model, x, y):
            optimizer = torch.optim.LBFGS(model.parameters(), lr=1)
            for _ in range(20):
                def closure():
                    optimizer.zero_grad()
                    loss = ((model(x) - y) ** 2).mean()
                    loss.backward()
                    return loss
                optimizer.step(closure)
    """,
    # a meta-learning wrapper whose step takes the losses by keyword: it resets, writes
    # its own hypergradients and steps, so what the inner loop's backward leaves on the
    # auxiliary network is never applied
    "meta-optimizer-step-with-keyword-losses": """
        aux_opt = torch.optim.SGD(aux_net.parameters(), lr=1e-3)
        meta_optimizer = HyperStep(aux_opt, truncate=3)
        optimizer = torch.optim.Adam(net.parameters(), lr=1e-4)
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = aux_net(criterion(net(x), y))
            loss.backward()
            optimizer.step()
            if step % 20 == 0:
                meta_optimizer.step(train_loss=inner_loss(), val_loss=outer_loss(),
                                    aux_params=list(aux_net.parameters()))
    """,
}

BUGGY = {
    # shape: zeroing only in the AMP branch (expected: the plain branch's step)
    "amp-branch-only-zeroes": ("""
        for x, y in loader:
            if use_amp:
                optimizer.zero_grad()
                with torch.autocast("cuda"):
                    loss = criterion(model(x), y)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
    """, [(14, "GC002")]),
    # shape: backward() and step() in a loop with no zeroing anywhere, through a helper
    "helper-without-zero": ("""
        def update(model, opt, batch):
            loss = model(batch).mean()
            loss.backward()
            opt.step()
            return loss.item()

        for epoch in range(3):
            for batch in loader:
                update(net, optimizer, batch)
    """, [(6, "GC002")]),
    # a step function never called here that steps the optimizer its caller passes in:
    # the callers are judged, not the helper alone (a loss scaler's `__call__` looks the same)
    "exported-step-function": ("""
        def training_update(model, optimizer, batch):
            loss = model(batch).mean()
            loss.backward()
            optimizer.step()
            return loss.detach()
    """, []),
    # the same helper stepping an optimizer it owns is judged as a loop body (dslinter W5517)
    "exported-step-method": ("""
        class Trainer:
            def training_update(self, batch):
                loss = self.model(batch).mean()
                loss.backward()
                self.optimizer.step()
    """, [(7, "GC002")]),
    # handed to a framework that calls it once per batch (ignite's Engine)
    "callback-update-function": ("""
        def update(engine, batch):
            loss = model(batch).mean()
            loss.backward()
            optimizer.step()
        trainer = Engine(update)
    """, [(6, "GC002")]),
    # shape: zeroing through an alias of the model the optimizer holds
    "wrapped-model-zero-between": ("""
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        model = torch.compile(net)
        for x in loader:
            model(x).backward()
            model.zero_grad()
            optimizer.step()
    """, [(7, "GC001")]),
    # shape: a zero before an inner loop, never inside it
    "zero-per-epoch": ("""
        for epoch in range(epochs):
            model.zero_grad()
            for x, y in loader:
                criterion(model(x), y).backward()
                optimizer.step()
    """, [(4, "GC003")]),
    # shape: zero every micro-batch, step every k (flag variant)
    "accum-flag": ("""
        for i, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            (criterion(model(x), y) / k).backward()
            do_step = (i + 1) % k == 0
            if do_step:
                optimizer.step()
    """, [(4, "GC001")]),
    # shape: GAN whose generator optimizer is never zeroed, written with methods
    "gan-methods": ("""
        class GAN:
            def __init__(self, g, d):
                self.opt_g = torch.optim.Adam(g.parameters())
                self.opt_d = torch.optim.Adam(d.parameters())

            def backward_d(self, real):
                self.loss_d = self.d_loss(real)
                self.loss_d.backward()

            def backward_g(self):
                self.g_loss().backward()

            def training_round(self, real):
                self.opt_d.zero_grad()
                self.backward_d(real)
                self.opt_d.step()
                self.backward_g()
                self.opt_g.step()

        gan = GAN(g, d)
        for real in loader:
            gan.training_round(real)
    """, [(20, "GC002")]),
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_correct_program_is_silent(name: str) -> None:
    assert program_findings(SILENT[name], name) == []


@pytest.mark.parametrize("name", sorted(BUGGY))
def test_buggy_program_gives_exactly_its_findings(name: str) -> None:
    body, expected = BUGGY[name]
    assert program_findings(body, name) == expected


def test_a_flag_rebound_where_no_gradient_event_is_still_unknown() -> None:
    # `on = False` then `if cond: on = True` (a statement the analysis does not walk, having
    # no gradient event): `if on:` may take either branch, not only the literal's
    body = """
        def train(method, loader):
            on = False
            if method == "dann":
                on = True
            if on:
                adv_opt = torch.optim.SGD(adversary.parameters(), lr=0.01)
            for x, y in loader:
                loss = adversary(x).mean()
                loss.backward()
                if on:
                    adv_opt.step()
    """
    assert program_findings(body) == [(13, "GC002")]
    # bound once, the literal decides: the branch never runs, so nothing is reported
    assert program_findings(body.replace("on = True", "pass")) == []


def test_a_running_average_of_the_loss_keeps_it_unless_read_as_a_number() -> None:
    # the progress bar's smoothed loss, printed now and then
    body = """
        smooth = 0.0
        for step, batch in enumerate(loader):
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            smooth = smooth * 0.99 + loss * 0.01
            if step % 100 == 0:
                print(f"step {step}: {float(smooth):.3f}")
    """
    assert program_findings(body) == [(9, "GC004")]
    assert program_findings(body.replace("loss * 0.01", "loss.item() * 0.01")) == []
    # a factor that is no number (another tensor) is not a running average of the total
    assert program_findings(body.replace("smooth * 0.99", "smooth * decay")) == []


def test_a_prefix_of_bare_steps_stays_a_prefix_only_while_its_bound_holds_still() -> None:
    # resuming: the epochs before `start` only catch the schedule up, and come before every
    # epoch that trains, so none of their steps can meet a training epoch's gradients
    built = "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    epochs = textwrap.dedent("""
        for epoch in range(epochs):
            if epoch < start:
                for _ in range(len(loader)):
                    opt.step()
                continue
            for x, y in loader:
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()
    """).lstrip("\n")
    assert program_findings(built + epochs) == []
    # the bound moves inside the loop: bare steps may follow an epoch that trained
    moved = built + epochs + "    start = epoch + 2\n"
    assert program_findings(moved) == [(7, "GC002")]
    # a later run starts its epochs over: its catching-up steps come after the last run's
    # training, whose final gradients no reset cleared
    runs = built + "for run in range(runs):\n" + textwrap.indent(epochs, "    ")
    assert program_findings(runs) == [(8, "GC002")]
