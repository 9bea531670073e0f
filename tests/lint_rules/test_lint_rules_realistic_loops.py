"""Realistic correct training loops in styles the rule examples do not show: each must lint clean.

Accumulation windows, guarded steps, AMP, SWA/EMA, checkpointing, LBFGS closures, RL and GAN
loops, meta-learning, adversarial training, exception handling. The buggy twins of the
guarded-step programs (a counter test gates the step) must keep their finding.
"""
from __future__ import annotations

import pytest

from lint_rules.testing import program_findings

SILENT = {
    "window-start-zero": """
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for step, (x, y) in enumerate(loader):
            if step % accum == 0:
                optimizer.zero_grad(set_to_none=True)
            loss = criterion(model(x), y) / accum
            loss.backward()
            if (step + 1) % accum == 0:
                optimizer.step()
    """,
    "eval-no-grad": """
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(epochs):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                for x, y in val_loader:
                    val_loss += criterion(model(x), y).item()
    """,
    "step-sched-modelzero": """
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, 100)
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            scheduler.step()
            model.zero_grad()
    """,
    "param-groups-none": """
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None
            criterion(model(x), y).backward()
            optimizer.step()
    """,
    "maml-manual": """
        meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for batch in tasks:
            meta_opt.zero_grad()
            for task in batch:
                params = dict(model.named_parameters())
                for _ in range(inner_steps):
                    loss = task.loss(model, params)
                    grads = torch.autograd.grad(loss, params.values(), create_graph=True)
                    params = {n: p - alpha * g for (n, p), g in zip(params.items(), grads)}
                task.query_loss(model, params).backward()
            meta_opt.step()
    """,
    "swa": """
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        swa_model = torch.optim.swa_utils.AveragedModel(model)
        swa_scheduler = torch.optim.swa_utils.SWALR(optimizer, swa_lr=0.05)
        for epoch in range(100):
            for x, y in loader:
                optimizer.zero_grad()
                loss_fn(model(x), y).backward()
                optimizer.step()
            if epoch > swa_start:
                swa_model.update_parameters(model)
                swa_scheduler.step()
            else:
                scheduler.step()
        torch.optim.swa_utils.update_bn(loader, swa_model)
    """,
    "ema": """
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ema = torch.optim.swa_utils.AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
        for x, y in loader:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            ema.update_parameters(model)
            with torch.no_grad():
                for e, p in zip(ema_model.parameters(), model.parameters()):
                    e.mul_(0.999).add_(p, alpha=0.001)
    """,
    "checkpointing": """
        from torch.utils.checkpoint import checkpoint
        optimizer = torch.optim.Adam(model.parameters())
        for x, y in loader:
            optimizer.zero_grad()
            h = checkpoint(model.block1, x, use_reentrant=False)
            out = checkpoint(model.block2, h, use_reentrant=False)
            loss_fn(out, y).backward()
            optimizer.step()
    """,
    "while-true-break": """
        optimizer = torch.optim.Adam(model.parameters())
        step = 0
        it = iter(loader)
        while True:
            try:
                x, y = next(it)
            except StopIteration:
                it = iter(loader)
                continue
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
            step += 1
            if step >= max_steps:
                break
    """,
    "lbfgs-closure-outside": """
        optimizer = torch.optim.LBFGS(model.parameters(), lr=1)
        def closure():
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            return loss
        for i in range(20):
            optimizer.step(closure)
    """,
    "scaler-setnone": """
        scaler = torch.cuda.amp.GradScaler()
        opt = torch.optim.AdamW(model.parameters())
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
    """,
    "ddp-model-zero": """
        model = DDP(net.to(rank), device_ids=[rank])
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            for x, y in loader:
                model.zero_grad()
                loss_fn(model(x), y).backward()
                optimizer.step()
    """,
    "ddp-model-zero-net": """
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
        model = DDP(net, device_ids=[rank])
        for x, y in loader:
            model.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            optimizer.step()
    """,
    "fgsm-adversarial": """
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            x.requires_grad_(True)
            loss = criterion(model(x), y)
            loss.backward()
            x_adv = (x + eps * x.grad.sign()).detach()
            optimizer.zero_grad()
            criterion(model(x_adv), y).backward()
            optimizer.step()
    """,
    "freeze-backbone-grads": """
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        backbone = model.backbone
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            loss.backward()
            if step < freeze_steps:
                for p in backbone.parameters():
                    p.grad = None
            optimizer.step()
            optimizer.zero_grad()
    """,
    "nan-skip": """
        optimizer = torch.optim.Adam(model.parameters())
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            if not torch.isfinite(loss):
                continue
            loss.backward()
            optimizer.step()
    """,
    "multi-loss-retain": """
        optimizer = torch.optim.Adam(model.parameters())
        for x, y in loader:
            out = model(x)
            loss_a = crit_a(out, y)
            loss_b = crit_b(out, y)
            loss_a.backward(retain_graph=True)
            loss_b.backward()
            optimizer.step()
            optimizer.zero_grad()
    """,
    "reinforce": """
        optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
        for episode in range(1000):
            state = env.reset()
            log_probs, rewards = [], []
            for t in range(10000):
                action, log_prob = policy.act(state)
                state, reward, done, _ = env.step(action)
                log_probs.append(log_prob)
                rewards.append(reward)
                if done:
                    break
            loss = -(torch.stack(log_probs) * returns(rewards)).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """,
    "manual-sgd": """
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= lr * p.grad
                    p.grad.zero_()
    """,
    "wgan-gp": """
        opt_d = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.0, 0.9))
        opt_g = torch.optim.Adam(gen.parameters(), lr=1e-4, betas=(0.0, 0.9))
        for i, real in enumerate(loader):
            for _ in range(n_critic):
                opt_d.zero_grad()
                fake = gen(torch.randn(bs, nz)).detach()
                gp = gradient_penalty(critic, real, fake)
                d_loss = critic(fake).mean() - critic(real).mean() + 10 * gp
                d_loss.backward()
                opt_d.step()
            opt_g.zero_grad()
            g_loss = -critic(gen(torch.randn(bs, nz))).mean()
            g_loss.backward()
            opt_g.step()
    """,
    "moco-momentum": """
        optimizer = torch.optim.SGD(encoder_q.parameters(), lr=0.03)
        for im_q, im_k in loader:
            q = encoder_q(im_q)
            with torch.no_grad():
                for param_q, param_k in zip(encoder_q.parameters(), encoder_k.parameters()):
                    param_k.data = param_k.data * m + param_q.data * (1.0 - m)
                k = encoder_k(im_k)
            loss = contrastive(q, k)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """,
    "zero-in-finally-after-step": """
        optimizer = torch.optim.Adam(model.parameters())
        for batch in loader:
            try:
                loss = model(batch).loss
                loss.backward()
                optimizer.step()
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
            finally:
                optimizer.zero_grad(set_to_none=True)
    """,
    "step-counter-while": """
        optimizer = torch.optim.Adam(model.parameters())
        global_step = 0
        while global_step < max_steps:
            for batch in loader:
                loss = model(batch).loss / grad_accum
                loss.backward()
                if (global_step + 1) % grad_accum == 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
                    lr_scheduler.step()
                    optimizer.zero_grad()
                global_step += 1
                if global_step >= max_steps:
                    break
    """,
    "dict-of-optimizers": """
        optimizers = {"g": torch.optim.Adam(G.parameters()), "d": torch.optim.Adam(D.parameters())}
        for real in loader:
            optimizers["d"].zero_grad()
            d_loss(real).backward()
            optimizers["d"].step()
            optimizers["g"].zero_grad()
            g_loss(real).backward()
            optimizers["g"].step()
    """,
    "sam-two-step": """
        optimizer = SAM(model.parameters(), torch.optim.SGD, lr=0.1)
        for x, y in loader:
            criterion(model(x), y).backward()
            optimizer.first_step(zero_grad=True)
            criterion(model(x), y).backward()
            optimizer.second_step(zero_grad=True)
    """,
    "lookahead": """
        base = torch.optim.Adam(model.parameters())
        optimizer = Lookahead(base, k=5, alpha=0.5)
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
    """,
    "zero-via-set-to-none-helper": """
        def reset_grads(model):
            for p in model.parameters():
                p.grad = None

        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            reset_grads(model)
            criterion(model(x), y).backward()
            optimizer.step()
    """,
    "no-sync-accum": """
        optimizer = torch.optim.AdamW(model.parameters())
        for i, (x, y) in enumerate(loader):
            sync = (i + 1) % k == 0
            ctx = contextlib.nullcontext() if sync else model.no_sync()
            with ctx:
                (criterion(model(x), y) / k).backward()
            if sync:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
    """,
    "keyboard-interrupt": """
        optimizer = torch.optim.Adam(model.parameters())
        try:
            for epoch in range(epochs):
                for x, y in loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()
        except KeyboardInterrupt:
            print("stopped early")
            save(model)
    """,
    "dcgan-official": """
        optimizerD = optim.Adam(netD.parameters(), lr=lr, betas=(beta1, 0.999))
        optimizerG = optim.Adam(netG.parameters(), lr=lr, betas=(beta1, 0.999))
        for epoch in range(num_epochs):
            for i, data in enumerate(dataloader, 0):
                netD.zero_grad()
                real_cpu = data[0].to(device)
                output = netD(real_cpu).view(-1)
                errD_real = criterion(output, label)
                errD_real.backward()
                fake = netG(noise)
                output = netD(fake.detach()).view(-1)
                errD_fake = criterion(output, label)
                errD_fake.backward()
                optimizerD.step()
                netG.zero_grad()
                output = netD(fake).view(-1)
                errG = criterion(output, label)
                errG.backward()
                optimizerG.step()
    """,
    "grad-accum-last-flush": """
        optimizer.zero_grad()
        for i, (x, y) in enumerate(loader):
            (criterion(model(x), y) / k).backward()
            if (i + 1) % k == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
    """,
    "ppo-epochs-minibatches": """
        optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
        for update in range(num_updates):
            with torch.no_grad():
                rollout = collect(envs, agent)
            for epoch in range(update_epochs):
                for mb in minibatches(rollout):
                    loss = ppo_loss(agent, mb)
                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                    optimizer.step()
    """,
    "sac-alpha": """
        q_optimizer = optim.Adam(list(qf1.parameters()) + list(qf2.parameters()), lr=1e-3)
        actor_optimizer = optim.Adam(list(actor.parameters()), lr=3e-4)
        a_optimizer = optim.Adam([log_alpha], lr=1e-3)
        for global_step in range(total_timesteps):
            data = rb.sample(batch_size)
            qf_loss = q_loss(data)
            q_optimizer.zero_grad()
            qf_loss.backward()
            q_optimizer.step()
            if global_step % policy_frequency == 0:
                for _ in range(policy_frequency):
                    actor_loss = pi_loss(data)
                    actor_optimizer.zero_grad()
                    actor_loss.backward()
                    actor_optimizer.step()
                    alpha_loss = (-log_alpha.exp() * (log_pi + target_entropy)).mean()
                    a_optimizer.zero_grad()
                    alpha_loss.backward()
                    a_optimizer.step()
                    alpha = log_alpha.exp().item()
    """,
    "dqn": """
        optimizer = optim.AdamW(policy_net.parameters(), lr=LR, amsgrad=True)
        for i_episode in range(num_episodes):
            state, info = env.reset()
            for t in count():
                action = select_action(state)
                observation, reward, terminated, truncated, _ = env.step(action.item())
                memory.push(state, action, next_state, reward)
                state = next_state
                if len(memory) >= BATCH_SIZE:
                    loss = compute_loss(memory.sample(BATCH_SIZE))
                    optimizer.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
                    optimizer.step()
                target_net_state_dict = target_net.state_dict()
                for key in policy_net_state_dict:
                    target_net_state_dict[key] = policy_net_state_dict[key] * TAU + target_net_state_dict[key] * (1 - TAU)
                target_net.load_state_dict(target_net_state_dict)
                if terminated or truncated:
                    break
    """,
    "two-opts-shared-backbone": """
        opt_backbone = torch.optim.SGD(backbone.parameters(), lr=0.01)
        opt_heads = torch.optim.Adam(list(head_a.parameters()) + list(head_b.parameters()))
        for x, ya, yb in loader:
            opt_backbone.zero_grad()
            opt_heads.zero_grad()
            feats = backbone(x)
            loss = crit(head_a(feats), ya) + crit(head_b(feats), yb)
            loss.backward()
            opt_backbone.step()
            opt_heads.step()
    """,
    "param-groups-decay": """
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
        no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=6e-4)
        for it in range(max_iters):
            for g in optimizer.param_groups:
                g["lr"] = get_lr(it)
            x, y = get_batch("train")
            logits, loss = model(x, y)
            model.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    """,
    "skip-nonfinite-step": """
        optimizer = torch.optim.AdamW(model.parameters())
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if torch.isfinite(norm):
                optimizer.step()
    """,
    "skip-step-flag": """
        optimizer = torch.optim.AdamW(model.parameters())
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            if not args.dry_run:
                optimizer.step()
    """,
    "warmup-probe": """
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                if epoch >= probe_epochs:
                    optimizer.step()
                else:
                    stats.update(grad_norms(model))
    """,
    "step-in-else-of-nan-check": """
        for x, y in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = criterion(model(x), y)
            loss.backward()
            if any(p.grad is not None and not torch.isfinite(p.grad).all() for p in model.parameters()):
                logger.warning("skipping step")
            else:
                optimizer.step()
    """,
    "while-loop-iter-next": """
        data_iter = iter(loader)
        for step in range(max_steps):
            try:
                batch = next(data_iter)
            except StopIteration:
                data_iter = iter(loader)
                batch = next(data_iter)
            optimizer.zero_grad()
            model(batch).loss.backward()
            optimizer.step()
    """,
    "zero-grad-in-helper-before": """
        def zero_all(*optims):
            for o in optims:
                o.zero_grad()

        for x in loader:
            zero_all(opt_enc, opt_dec)
            loss = dec(enc(x)).mean()
            loss.backward()
            opt_enc.step()
            opt_dec.step()
    """,
    "zero-after-backward-grad-stats": """
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            grad_norm_history.append(total_norm(model))
            optimizer.step()
            optimizer.zero_grad()
    """,
    "scaler-found-inf-skip": """
        for x, y in loader:
            with torch.autocast("cuda"):
                loss = criterion(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            if not math.isfinite(grad_norm):
                continue
            lr_scheduler.step()
    """,
    "opt-per-model-dict": """
        optimizers = {name: torch.optim.Adam(m.parameters()) for name, m in models.items()}
        for batch in loader:
            for name, model in models.items():
                optimizer = optimizers[name]
                optimizer.zero_grad()
                model(batch).loss.backward()
                optimizer.step()
    """,
    "opt-per-model-dict-no-inner-zero": """
        optimizers = {name: torch.optim.Adam(m.parameters()) for name, m in models.items()}
        for batch in loader:
            for name, model in models.items():
                model(batch).loss.backward()
                optimizers[name].step()
            for opt in optimizers.values():
                opt.zero_grad()
    """,
    "group-tuple-var": """
        all_opts = (opt_a, opt_b)
        for x in loader:
            for o in all_opts:
                o.zero_grad()
            loss = model(x).mean()
            loss.backward()
            opt_a.step()
            opt_b.step()
    """,
    "modules-zero": """
        opt = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()))
        for x in loader:
            for m in (encoder, decoder):
                m.zero_grad()
            decoder(encoder(x)).mean().backward()
            opt.step()
    """,
    "gan-d-steps-then-g": """
        for it, real in enumerate(loader):
            d_opt.zero_grad()
            d_loss(real).backward()
            d_opt.step()
            if it % n_critic == 0:
                g_opt.zero_grad()
                g_loss(real).backward()
                g_opt.step()
    """,
    "zero-after-step-in-branch-both": """
        for x, y in loader:
            loss = criterion(model(x), y)
            if use_amp:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
            optimizer.zero_grad()
    """,
    "reptile": """
        meta_opt = torch.optim.SGD(model.parameters(), lr=1.0)
        for it in range(iterations):
            weights_before = copy.deepcopy(model.state_dict())
            task = sample_task()
            inner_opt = torch.optim.SGD(model.parameters(), lr=inner_lr)
            for _ in range(inner_steps):
                inner_opt.zero_grad()
                task.loss(model).backward()
                inner_opt.step()
            weights_after = model.state_dict()
            model.load_state_dict({n: weights_before[n] + (weights_after[n] - weights_before[n]) * eps for n in weights_before})
    """,
    "hypernet-two-losses-two-opts": """
        for x, y in loader:
            opt_main.zero_grad()
            opt_aux.zero_grad()
            main_loss, aux_loss = model(x, y)
            (main_loss + 0.1 * aux_loss).backward()
            opt_main.step()
            opt_aux.step()
    """,
    "bptt-truncated": """
        optimizer = torch.optim.Adam(rnn.parameters())
        for epoch in range(epochs):
            hidden = rnn.init_hidden(batch_size)
            for i in range(0, data.size(0) - 1, bptt):
                x, y = get_batch(data, i)
                hidden = repackage_hidden(hidden)
                model.zero_grad()
                output, hidden = rnn(x, hidden)
                loss = criterion(output.view(-1, ntokens), y)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(rnn.parameters(), clip)
                optimizer.step()
    """,
    "word-lm-manual-sgd": """
        for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
            data, targets = get_batch(train_data, i)
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
    """,
    "eval-no-grad-accumulate": """
        def evaluate(model, loader):
            model.eval()
            total = 0.0
            with torch.no_grad():
                for x, y in loader:
                    total += criterion(model(x), y)
            return total / len(loader)
    """,
    "eval-decorator-accumulate": """
        @torch.no_grad()
        def evaluate(model, loader):
            total = 0
            for x, y in loader:
                total += criterion(model(x), y) * x.size(0)
            return total / len(loader.dataset)
    """,
    "eval-inference-mode": """
        def validate(model, loader):
            with torch.inference_mode():
                val_loss = 0
                for x, y in loader:
                    val_loss = val_loss + criterion(model(x), y)
            return val_loss.item()
    """,
    "microbatch-sum-then-backward": """
        for batch in loader:
            optimizer.zero_grad()
            loss_sum = 0
            for mb in batch.split(4):
                loss_sum = loss_sum + model(mb).loss
            loss_sum.backward()
            optimizer.step()
    """,
    "losses-list-stack": """
        for batch in loader:
            optimizer.zero_grad()
            losses = []
            for head in heads:
                losses.append(head(batch))
            torch.stack(losses).mean().backward()
            optimizer.step()
    """,
    "full-batch-gd": """
        for epoch in range(epochs):
            optimizer.zero_grad()
            for x, y in loader:
                (criterion(model(x), y) * len(x) / n).backward()
            optimizer.step()
    """,
    "running-loss-item": """
        running = 0.0
        for i, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running += loss.item()
            if i % 100 == 99:
                print(running / 100)
                running = 0.0
    """,
    "running-loss-detach-ema": """
        smooth = None
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            smooth = loss.detach() if smooth is None else 0.98 * smooth + 0.02 * loss.detach()
    """,
    "set-grad-enabled-eval": """
        for phase in ["train", "val"]:
            model.train(phase == "train")
            epoch_loss = 0.0
            for x, y in loaders[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    loss = criterion(model(x), y)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                epoch_loss += loss.item() * x.size(0)
    """,
    "optimizer-wrapper-zero-outer": """
        for batch in loader:
            optimizer.zero_grad()
            compute(model, batch).backward()
            optimizer.optimizer.step()
    """,
    "closure-with-lambda": """
        optimizer = torch.optim.LBFGS(model.parameters())
        for x, y in loader:
            def closure():
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                return loss
            optimizer.step(closure)
            lr_scheduler.step()
    """,
    "sgld-manual": """
        for x, y in loader:
            model.zero_grad()
            nll(model(x), y).backward()
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(-0.5 * lr * p.grad + torch.randn_like(p) * math.sqrt(lr))
    """,
    "gradient-accumulation-dict-counter": """
        step = 0
        for epoch in range(epochs):
            for batch in loader:
                loss = model(**batch).loss / accum
                loss.backward()
                step += 1
                if step % accum == 0:
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad()
    """,
    "pcgrad": """
        for x, y in loader:
            optimizer.zero_grad()
            grads = []
            for task_loss in model.task_losses(x, y):
                optimizer.zero_grad()
                task_loss.backward(retain_graph=True)
                grads.append([p.grad.clone() for p in model.parameters()])
            merged = project_conflicting(grads)
            for p, g in zip(model.parameters(), merged):
                p.grad = g
            optimizer.step()
    """,
}

BUGGY = {
    # a running total that keeps every iteration's graph alive
    "total-loss-graph": ("""
        total = 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss
    """, [(9, "GC004")]),
    # accumulation by a counter: the reset at the top discards the window (GC001)
    "counter-gated-step-zero-every-batch": ("""
        for i, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            if (i + 1) % k == 0:
                optimizer.step()
    """, [(4, "GC001")]),
    # the same through a flag computed from the counter, with a finiteness guard inside
    "counter-flag-step-zero-every-batch": ("""
        for i, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            should_step = (i + 1) % k == 0
            if should_step:
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                if torch.isfinite(norm):
                    optimizer.step()
    """, [(4, "GC001")]),
    # A3C's shared gradients (pytorch-a3c style): `shared_param._grad = param.grad` hands the
    # local tensors over by reference; since torch 2.0 `optimizer.zero_grad()` sets the shared
    # ones to None and leaves the local ones to grow by one pass per step (checked on torch).
    "a3c-shared-grads": ("""
        def ensure_shared_grads(model, shared_model):
            for param, shared_param in zip(model.parameters(), shared_model.parameters()):
                if shared_param.grad is not None:
                    return
                shared_param._grad = param.grad

        def train(rank, shared_model, optimizer):
            model = ActorCritic()
            while True:
                model.load_state_dict(shared_model.state_dict())
                loss = rollout_loss(model)
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 50)
                ensure_shared_grads(model, shared_model)
                optimizer.step()
    """, [(18, "GC002")]),
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_correct_program_is_silent(name: str) -> None:
    assert program_findings(SILENT[name], name) == []


@pytest.mark.parametrize("name", sorted(BUGGY))
def test_buggy_program_gives_exactly_its_findings(name: str) -> None:
    body, expected = BUGGY[name]
    assert program_findings(body, name) == expected
