"""What each finding of the run-time guard says: what happened, and the fix. One table.

Each entry is a template filled with the finding's numbers (``{name}`` is the optimizer's class
and the line that built it). Where it happened and how often are the report's to add.

>>> print(message("repeated_step", name="SGD (train.py:9)", passes=1))  # doctest: +ELLIPSIS
SGD (train.py:9).step() ran again with no backward() since its previous step(): ...
"""
from __future__ import annotations

MESSAGES = {
    "stale_gradients": (
        "{name}.step() ran on gradients that still hold backward passes an earlier step() "
        "already applied (nothing reset them since): the update applies those stale gradients "
        "of earlier batches again. Call zero_grad() once per update, right after step()."
    ),
    "stale_beyond_k": (
        "{name}.step() ran on {fresh} backward passes since the last zero_grad(), beyond "
        "accumulation_steps={k}: the update includes gradients of earlier batches. Call "
        "zero_grad() once per update, right after step()."
    ),
    "stale_closure": (
        "{name}.step(closure) evaluated a closure whose backward() added to gradients left "
        "from before that evaluation: the update includes stale gradients. Call "
        "optimizer.zero_grad() at the top of the closure."
    ),
    "stale_by_hand": (
        "parameters updated by hand ({name} and the others updated with it) changed between "
        "two backward passes while their .grad kept the passes that update applied: this "
        "backward() adds to them, so the next update applies them again. Reset the gradients "
        "after each update (p.grad = None, or p.grad.zero_())."
    ),
    "wiped_gradients": (
        "{name}.step() ran with no backward() since the last zero_grad() (0 backward passes), "
        "so it updates with wiped or missing gradients. Move zero_grad() so it runs before "
        "loss.backward() (or after step()), never between backward() and step()."
    ),
    "wiped_behind": (
        "{name}.step() found every gradient None or zero although {passes} backward pass(es) "
        "ran: something reset them behind the optimizer (e.g. model.zero_grad() or p.grad = "
        "None) between backward() and step(). Move that reset before backward() or after "
        "step()."
    ),
    "discarded_accumulation": (
        "{how} on {name} discarded gradients of {dropped} backward pass(es) that no step() "
        "used, and step() then ran on {kept} of accumulation_steps={k}: the accumulation is "
        "broken. Call zero_grad() only after step()."
    ),
    "repeated_step": (
        "{name}.step() ran again with no backward() since its previous step(): the gradients "
        "it applies ({passes} backward pass(es)) were already applied once, so the update is "
        "doubled. Call step() once per backward() (or per accumulation window), and zero_grad() "
        "after it."
    ),
    "optimizer_without_gradients": (
        "{name}.step() never had a gradient to apply: {why}{context}, so every step changed "
        "nothing and nothing it holds was trained. Build the optimizer over the parameters the "
        "loss uses (the model you call, not a copy), and unfreeze the ones it should train."
    ),
    "frozen_by_omission": (
        "{name}.step() applied gradients of {fresh} backward passes that piled up while other "
        "optimizers stepped {foreign} times and nothing stepped or reset these parameters (e.g. "
        "a warm-up that trains only some models, or zero_grad() only on the optimizers that "
        "step); its usual update holds {usual}. Reset them with the others while they do not "
        "train (model.zero_grad(), or requires_grad=False), or zero_grad() this optimizer "
        "before its first step."
    ),
    "aliased_gradients": (
        "{name}.step() applied gradients that are another model's .grad tensors (as "
        "global_param._grad = local_param.grad makes them; {parameter} is one), and nothing "
        "reset those afterwards: zero_grad() with set_to_none=True drops only this optimizer's "
        "references, so the other model's .grad grows with every backward() and each step "
        "re-applies all of it. Reset that model's gradients too (local_model.zero_grad()), or "
        "copy them (global_param.grad = local_param.grad.clone())."
    ),
    "unsynced_gradients": (
        "the gradients {name}.step() was about to apply at step {step} differed between ranks "
        "{ranks} (parameter group{plural} {groups}: squared norms from {low:.6g} to {high:.6g}), "
        "although DDP should have averaged them: the ranks' models drift apart. DDP's gradient "
        "hooks do not cover these parameters (the wrapped model's parameters replaced or moved "
        "after wrapping), or a forward pass bypassed the DDP wrapper (model.module(x)), or a "
        "rank skipped synchronisation outside no_sync(). Wrap the final model once, call it "
        "through the wrapper, and build the optimizer over the wrapper's parameters."
    ),
    "unscaled_clipping": (
        "{function}() ran on gradients the GradScaler still holds multiplied by its scale "
        "({scale:g}): it {effect}, so it clipped by the wrong amount. Call "
        "scaler.unscale_(optimizer) before {function}(); scaler.step() then does not unscale "
        "them twice."
    ),
}


def message(template: str, **fields: object) -> str:
    """The text of ``template`` (a key of ``MESSAGES``) with ``fields`` filled in."""
    return MESSAGES[template].format(**fields)
