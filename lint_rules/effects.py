"""What each gradient event does to the state: BACKWARD, STEP, ZERO, hand-written gradients,
and calls into functions of the same file (walked in place with their parameters renamed).

``Effects`` is the half of the interpreter that handles expressions; ``flow.Interpreter``
adds the statements and control flow around it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import ast

from lint_rules import events as ev
from lint_rules import rebinding, syntax
from lint_rules.bindings import Bindings
from lint_rules.reach import (
    input_tensors,
    made_to_require_grad,
    models_feeding,
    switches_requires_grad,
)
from lint_rules.states import (
    APPLIED,
    CLEAN,
    FRESH,
    STALE,
    TAINTED,
    WFRESH,
    WIPED,
    State,
    after_other_reset,
    after_other_step,
    after_step,
    join,
    on_backward,
    on_zero,
    ordered,
)
from lint_rules.summaries import FunctionNode

MAX_INLINE_DEPTH = 4  # frames, counting the analysed function itself
ALIAS_PREFIX = "<gradients of>"  # the key of a model's gradients handed to another by reference


@dataclass
class Issue:
    """A raw GC001/GC002 observation, turned into a Finding by the rule modules."""

    code: str
    at: ev.Event  # the zero (GC001) or the step (GC002)
    step: ev.Event
    optimizer: str
    backwards: tuple[ev.Event, ...]
    loop_carried: bool = False
    conditions: tuple[str, ...] = ()
    loops: tuple[ast.AST, ...] = field(default=(), repr=False)
    counter_gated: bool = False  # the step sits under a counter test (`i % k == 0`) in its loop
    applied_by: tuple[ev.Event, ...] = ()  # GC002: the steps after which nothing reset the grads
    also: tuple[ev.Event, ...] = ()  # GC002: other steps of the same optimizer, same cause
    restep: bool = False  # GC002: no backward since ``applied_by`` applied the same gradients
    foreign: tuple[ev.Event, ...] = ()  # GC002: another network's passes under ``backwards``
    reset_elsewhere: bool = False  # GC002: the carrying loop resets it on other paths
    names: dict = field(default_factory=dict, repr=False)  # the frame's parameters -> caller keys


class Effects:
    """Event semantics; expects the attributes that ``flow.Interpreter.__init__`` sets."""

    def _expressions(self, stmt: syntax.Statement, state: State) -> State:
        if ev.is_grad_zeroing(stmt):
            if self._repairs_own_gradient(stmt) or self._clears_an_input(stmt):
                return state
            owners = self.index.optimizers_of_param(ev.grad_owner(stmt) or "")
            if not owners and self._owners[-1]:
                owners = {self._owners[-1]}  # inside the optimizer's own step(): its parameters
            event = self._event(ev.ZERO, stmt, ev.ALL, partial=not owners)
            return self._apply_zero(event, tuple(sorted(owners)) or (ev.ALL,), state)
        if ev.is_grad_write(stmt):
            # Hand-written gradients replace whatever was there: the next step applies them.
            # The gradients of a model whose tensors were handed over by reference (``aliases``)
            # are not replaced: they keep accumulating where they are.
            alias = ev.aliased_gradients(stmt, self.index.parents)
            if alias is not None:
                self._aliases[alias[1]] = self._alias_key(alias[0])
                self.alias_sites.setdefault(self._alias_key(alias[0]), stmt)
            kept = {a: {k: v for k, v in facts.items() if k in self._aliases.values()}
                    for a, facts in state.items()}
            state = self._map_all(state, lambda f: (FRESH, frozenset()))
            return {a: {**facts, **kept[a]} for a, facts in state.items()}
        return self._calls_in(stmt, stmt, state)

    def _repairs_own_gradient(self, stmt: ast.AST) -> bool:
        """``if torch.isnan(w.grad).any(): w.grad = None``: one tensor's gradient dropped when
        its own value says so (a NaN, an overflow), which no reset of the optimizer is."""
        owner = ev.grad_owner(stmt)
        parent = self.index.parents.get(id(stmt))
        if owner is None or type(parent) is not ast.If:
            return False
        return owner in ev.grad_values_read(parent.test)

    def _clears_an_input(self, stmt: ast.AST) -> bool:
        """``delta.grad.zero_()`` on a tensor that this function computed and then made
        require gradients (a PGD attack's perturbation, a gradient penalty's input): no
        optimizer holds it, so this clears no optimizer's gradients."""
        owner = ev.grad_owner(stmt)
        if owner is None or "." in owner:
            return False
        scope = self.index.scope_of(stmt)
        return owner in input_tensors(scope) and owner not in _parameters(scope) \
            and made_to_require_grad(scope, owner)

    def _calls_in(self, node: ast.AST, stmt: ast.AST, state: State) -> State:
        calls = self.index.call_cache.get(id(node))
        if calls is None:
            # Only calls that can matter, in the order they finish (inner calls first).
            calls = [n for n in _finishing_order(node) if type(n) is ast.Call
                     and (self.contains_events(n) or _is_closure_step(n))]
            self.index.call_cache[id(node)] = calls
        for call in calls:
            aliases = self._comprehension_members(call, stmt)
            if aliases:  # `[opt.zero_grad() for opt in optimizers]`
                self._subst.append({**self._subst[-1], **aliases})
            try:
                state = self._call(call, stmt, state)
            finally:
                if aliases:
                    self._subst.pop()
        return state

    def _comprehension_members(self, call: ast.Call, stmt: ast.AST) -> dict[str, tuple[str, ...]]:
        aliases: dict[str, tuple[str, ...]] = {}
        node = self.index.parents.get(id(call))
        while node is not None and node is not stmt:
            if type(node) in _COMPREHENSIONS:
                for comp in node.generators:
                    aliases.update(rebinding.loop_members(comp, self._key, self.index.is_optimizer))
            node = self.index.parents.get(id(node))
        return aliases

    def _call(self, call: ast.Call, stmt: ast.AST, state: State) -> State:
        if self.index.own_backward(call):
            # `self.backward(x, y)` in a class that defines `backward`: its own method (a
            # hand-written backward pass, or a helper around one), not autograd's
            callee = self.index.resolve(call, self._class[-1], self._local_defs[-1])
            return self._inline(callee, call, state) if callee is not None else state
        if ev.is_backward_call(call):
            self.backward_loops.update(map(id, self._loops))
            event = self._event(ev.BACKWARD, call, self.text.segment(call))
            self._note_reach(event, call)
            return self._on_backward(state, event)
        receiver = ev.zero_call_receiver(call)
        if receiver is not None:
            return self._zero_call(call, receiver, state)
        step = ev.step_target(call, lambda k: self.index.is_optimizer(self._subst_key(k)))
        if step is not None:
            key, closure = step
            if ev.is_opaque_step(call):
                # `strategy.optimizer_step(opt, model)`: someone else's step, which may reset
                # (DeepSpeed engines do): unknown, hence benign
                return self._opaque_step(key, state)
            if _handed_more_than_a_closure(call, key) and (
                    closure is not None or not self.index.is_torch_optimizer(key)):
                # `meta_opt.step(objective, batch)`, `meta.step(val_loss=v, train_loss=t)`:
                # torch's step takes a closure alone, so unless the file shows a torch
                # optimizer taking a flag (`opt.step(do_adam=True)`), this is a step of the
                # project's own making (one that resets, computes its own gradients and
                # steps, say): unknown, hence benign
                return self._opaque_step(key, state)
            if closure is not None:
                kind = self._closure_kind(closure)
                if kind != "callable":
                    # Whatever an unknown closure does (a reset and a backward, as LBFGS
                    # closures do) is out of sight; and a step handed a value, not a callable
                    # (`higher`'s `step(loss)`), is no torch optimizer's step: either way the
                    # step's gradients are unknown, hence benign.
                    return self._opaque_step(key, state)
                if kind == "callable":
                    state = self._closure(closure, state)
            if any(self._wrapper_step_is_its_own(opt) for opt in self._unwrapped(self._expand(key))):
                # `meta_optimizer.step()` of a project class that is no optimizer, and that
                # resets or writes gradients itself, or steps nothing (a weight average)
                return self._opaque_step(key, state)
            if any(self._own_step_runs_backward(opt) for opt in self._unwrapped(self._expand(key))):
                # an optimizer class of the project whose `step` evaluates an objective and
                # runs its backward itself: what it applies is its own business
                return self._opaque_step(key, state)
            for opt in self._unwrapped(self._expand(key)):
                state = self._gated(state, lambda s, o=opt: self._apply_step(call, o, s), (opt,))
                state = self._own_method(opt, "step", call, state)
            return state
        callee = self.index.resolve(call, self._class[-1], self._local_defs[-1])
        if callee is not None:
            return self._inline(callee, call, state)
        if self.index.hands_optimizer_to_unread_code(call):
            return self._unknown_reset(call, state)
        if self.index.calls_unread_inherited_method(call):
            return self._unknown_reset(call, state, own=True)
        return state

    def _unknown_reset(self, call: ast.Call, state: State, own: bool = False) -> State:
        """A function of the project that is not read, handed optimizers (``own``: a method
        of the object, inherited from a class not read, and the object's optimizers): it
        may reset them. For GC002 that counts as a reset; it is never a discard (GC001), nor
        a reset the loop is known to do (GC003)."""
        if own:
            owners = tuple(f"{key}." for key in self._expand("self"))
            keys = [k for k in _known_keys(state) if k.startswith(owners)]
        else:
            keys = [k for arg in syntax.call_values(call) for k in self._expand(self._key(arg) or "")
                    for k in (k, k.rpartition(".")[0])
                    if k and self.index.is_optimizer(self._subst_key(k))]
        keys = sorted(set(self._unwrapped(tuple(keys))))
        if not keys:
            return state
        maybe = self._event(ev.ZERO, call, keys[0], partial=True)
        return self._apply_zero(maybe, tuple(keys), state, certain=False)

    def _zero_call(self, call: ast.Call, receiver: str, state: State) -> State:
        keys = self._unwrapped(self._expand(receiver)) if receiver != ev.ALL else (ev.ALL,)
        keys = tuple(k for k in keys if not k.startswith(ev.NOTHING))
        if not keys:
            return state
        targets: list[str] = []
        gated = True
        partial = False
        spared: set[str] = set()  # optimizers known to hold none of the reset model's parameters
        covered: set[str] = set()  # optimizers known to hold some of them
        # `self.netG` inside a method the caller runs as `gan.train()`: what the file knows
        # of the model it knows under the method's own name, and says of the caller's
        own_name = receiver if len(keys) == 1 and keys[0] not in (receiver, ev.ALL) else None
        for key in keys:
            group = key != ev.ALL and self.index.is_group(key)
            if key != ev.ALL and self.index.is_optimizer(key) and not group:
                targets.append(key)
                continue
            gated = False
            owned = self.index.optimizers_of_model(key) if key != ev.ALL else set()
            if not owned and own_name:
                owned = {self._subst_key(o) for o in self.index.optimizers_of_model(own_name)}
            owned |= self.index.groups_holding(owned)
            # A network no optimizer here is known to hold (`teacher.zero_grad()`, a worker's
            # head), while the function runs other networks too: the stepping optimizer may
            # hold only those, so the reset counts for GC002 but is no evidence of a discard
            # (GC001), unless accelerate accumulates it or an optimizer built here holds it.
            partial |= not owned and key != ev.ALL and not self._gates \
                and not self.index.trained_by_an_optimizer(key) and self._other_networks(key)
            # `self.model.base.zero_grad()` between the backward and the step: the body
            # frozen while the head trains, on purpose. A reset, never a discard.
            partial |= not owned and key != ev.ALL and self.index.part_of_a_model(key) \
                and self._resets_an_optimizer_too()
            partial |= bool(owned) and all(self.index.holds_more_than(o, key) for o in owned)
            targets.extend(sorted(owned) or [ev.ALL])
            covered |= owned
            if key != ev.ALL and not group:
                spared |= self.index.optimizers_apart_from(key)
                if own_name:
                    spared |= {self._subst_key(o) for o in self.index.optimizers_apart_from(own_name)}
                # another model's gradients, handed over by reference, stay where they are
                spared |= {k for k in self._aliases.values() if k != self._alias_key(key)}
        if not set(targets) - {ev.ALL}:
            targets = [ev.ALL] if targets else targets
        # `mask = Masking(optimizer)`: the wrapper's step steps `optimizer` (as `mask.optimizer`)
        targets += sorted({w for t in targets for w in self.index.wrappers_of(t)} - set(targets))
        targets += self._inner_optimizers(targets, state)
        if self._sets_to_zero(call):
            # `opt.zero_grad(set_to_none=False)` zeroes the tensors in place, and with them
            # those of a model whose gradients were handed to `opt` by reference.
            targets += [k for dst, k in self._aliases.items()
                        if not self.index.models_of(targets[0]) or dst in self.index.models_of(targets[0])]
        event = self._event(ev.ZERO, call, receiver, partial=partial)
        apply = lambda s: self._apply_zero(event, tuple(targets), s, spared=frozenset(spared - covered))
        state = self._gated(state, apply, tuple(targets)) if gated else apply(state)
        if covered:
            # `model.zero_grad()` also clears whatever optimizer might hold parts of `model`
            # without our knowing: a reset for GC002, never a discard for GC001.
            maybe = self._event(ev.ZERO, call, receiver, partial=True)
            state = self._apply_zero(maybe, (ev.ALL,), state, spared=frozenset(spared | covered),
                                     certain=False)
        siblings = _siblings(state, targets, self.index)
        if siblings:
            # `optimizers[i].zero_grad()`: which member `i` picks is unknown, so any other
            # member may be the one reset. A reset for GC002, never a discard for GC001.
            maybe = self._event(ev.ZERO, call, receiver, partial=True)
            state = self._apply_zero(maybe, siblings, state, certain=False)
        state = self._maybe_any_optimizer(call, receiver, keys, state)
        if gated and self.index.shares_parameters():
            # Two optimizers here hold the same parameters (Lightning's two-optimizer tests):
            # one's reset clears the other's gradients too. Count it as a reset for GC002,
            # never as a discard for GC001.
            shared = self._event(ev.ZERO, call, receiver, partial=True)
            state = self._apply_zero(shared, (ev.ALL,), state)
        return state

    def _other_networks(self, key: str) -> bool:
        """Whether the function being walked runs a network on data that is neither ``key``
        nor a part of it nor a whole it belongs to: then the gradients a backward pass left
        need not be ``key``'s."""
        scope = self._frames[-1] if self._frames else self.index.tree
        found = self.index.networks_run(scope)
        return any(not k.startswith(f"{key}.") and not key.startswith(f"{k}.") and k != key
                   for k in found)

    def _resets_an_optimizer_too(self) -> bool:
        """Whether the function being walked also resets an optimizer itself: then the reset
        of one part of a network (`self.model.base.zero_grad()`) is a freeze on top of it.
        Where a network's reset is the only one (`expert.g.zero_grad()`), it is the reset."""
        scope = self._frames[-1] if self._frames else self.index.tree
        found = self._optimizer_resets.get(id(scope))
        if found is None:
            found = self._optimizer_resets[id(scope)] = any(
                type(node) is ast.Call and self.index.is_optimizer(ev.zero_call_receiver(node) or "")
                for node in syntax.walk(scope))
        return found

    def _restores_weights(self, call: ast.Call) -> bool:
        """``net.load_state_dict(saved)`` or ``net.set_params(old_weights)`` where ``saved``
        was bound to a copy (``deepcopy``, ``.clone()``, ``state_dict()``): the parameters go
        back to what they were before a step."""
        if syntax.callee_name(call) not in _RESTORING_CALLS:
            return False
        scope = self._frames[-1] if self._frames else self.index.tree
        names = {n for a in call.args for n in syntax.names_in(a)}
        return any(
            type(node) is ast.Assign and names & {n for t in node.targets for n in syntax.stored_names(t)}
            and any(type(c) is ast.Call and syntax.callee_name(c) in _COPYING_CALLS
                    for c in syntax.walk(node.value))
            for node in syntax.walk(scope))

    def _is_optional_step(self, stmt: ast.If) -> bool:
        """``if <flag>: <step>`` with no ``else``, no backward and no reset, the flag no
        counter (``if not dry_run:``, ``if update_param:``): a step the code skips on
        purpose when the flag is off. The caller has ruled out `%` tests and flags the block
        sets again; ``if step + 1 == total_steps:`` counts too, with no `%`."""
        if stmt.orelse or not self.index.contains_events(stmt):
            return False
        calls = [n for n in syntax.walk(stmt) if type(n) is ast.Call]
        if any(ev.is_backward_call(n) or ev.zero_call_receiver(n) is not None for n in calls) \
                or not any(self._steps(n) for n in calls):
            return False
        scope = self._frames[-1] if self._frames else self.index.tree
        counting = self._counting.get(id(scope))
        if counting is None:
            counting = self._counting[id(scope)] = _counting_names(scope)
        return syntax.names_in(stmt.test).isdisjoint(counting)

    def _steps(self, call: ast.Call) -> bool:
        """Whether ``call`` is an optimizer step, or calls a function of the project that
        holds one (``self._do_optim_step()``)."""
        if ev.step_target(call, lambda k: self.index.is_optimizer(self._subst_key(k))) is not None:
            return True
        callee = self.index.resolve(call, self._class[-1], self._local_defs[-1])
        return callee is not None and self.index.holds_step(callee)

    @staticmethod
    def _inner_optimizers(targets: list[str], state: State) -> list[str]:
        """Optimizers that a reset optimizer holds as attributes (``opt.optim``, stepped by
        its own ``step``): K-FAC, SAM and Lookahead build them over their own parameters,
        so the outer reset (inherited from torch's ``Optimizer``) clears theirs too. What
        an inner optimizer holds is unknown otherwise, hence benign."""
        prefixes = tuple(f"{t}." for t in targets if t != ev.ALL)
        if not prefixes:
            return []
        held = {k for k in _known_keys(state) if k.startswith(prefixes)}
        return sorted(held - set(targets))

    def _group_zero(self, loop: ast.For, receiver: str, state: State) -> State:
        """``for group in opt.param_groups: for p in group["params"]: p.grad = None``: what
        ``opt.zero_grad(set_to_none=True)`` does, written out."""
        keys = tuple(k for k in self._unwrapped(self._expand(receiver)) if not k.startswith(ev.NOTHING))
        if not keys:
            return state
        event = self._event(ev.ZERO, loop, receiver)
        state = self._gated(state, lambda s: self._apply_zero(event, keys, s), keys)
        return self._maybe_any_optimizer(loop, receiver, keys, state)

    def _maybe_any_optimizer(self, node: ast.AST, receiver: str, keys: tuple[str, ...],
                             state: State) -> State:
        """Resets whose reach the file cannot tell, counted as resets for GC002 and never as
        discards for GC001: a member of a collection whose contents this file does not show
        (``self.agent._optimizers["actor"]``) may be the very object another name steps; the
        optimizer inside a wrapper (``policy_optimizer._optimizer``) holds the gradients
        that the wrapper's step applies."""
        head = receiver.partition("[")[0]
        if "[" in receiver and not self.index.group_members(head):
            if not any(k != ev.ALL and self.index.is_optimizer(k) for k in keys):
                return state
            targets: tuple[str, ...] = (ev.ALL,)
        else:
            outers = {k.rpartition(".")[0] for k in keys} - {"", "self"}
            targets = tuple(sorted(o for o in outers if self.index.is_optimizer(self._subst_key(o))
                                   or self.index.is_optimizer(o)))
        if not targets:
            return state
        maybe = self._event(ev.ZERO, node, receiver, partial=True)
        return self._apply_zero(maybe, targets, state, spared=frozenset(keys), certain=False)

    def _param_zero(self, loop: ast.For, state: State) -> State:
        owner = ev.param_loop_owner(loop)
        owned = self.index.optimizers_of_model(owner) if owner else set()
        # `for p in backbone.parameters()` when every optimizer is known to hold other models:
        # a sub-module's gradients cleared on purpose (freezing), like `teacher.zero_grad()`.
        partial = owner is None or not owned and self.index.models_all_known()
        event = self._event(ev.ZERO, loop, owner or ev.ALL, partial=partial)
        return self._apply_zero(event, tuple(sorted(owned)) or (ev.ALL,), state)

    def _gated(self, state: State, apply, optimizers: tuple[str, ...]) -> State:
        # Inside `accelerator.accumulate`, optimizer.step()/zero_grad() only act on sync steps.
        # The prepared optimizer reads the sync flag, which outlives the `with` block: after it,
        # the optimizers stepped inside it stay gated by the same flag.
        if self._gates:
            gate = self._gates[-1]
            self._gated_optimizers.update(optimizers)
        elif self._last_gate and self._gated_optimizers.issuperset(optimizers):
            gate = self._last_gate
        else:
            return apply(state)
        yes, no = self._split(state, gate, True)
        return join(apply(yes) if yes else None, no)

    def _backward_inside(self, if_id: int) -> bool:
        node = self._if_nodes.get(if_id)
        return node is not None and self._runs_backward(node, depth=3)

    def _step_follows(self, if_id: int, zero: ev.Event, targets: tuple[str, ...]) -> bool:
        """``if (i + 1) % k == 0: opt.zero_grad(); opt.step()``: a reset that the same block
        follows with a step of that optimizer, no backward in between, opens no window: it
        empties the one that step closes."""
        block = self._block_after(self._if_nodes.get(if_id), zero.node)
        names = {zero.target, *targets}
        for stmt in block:
            for node in syntax.walk(stmt):
                if type(node) is not ast.Call:
                    continue
                if ev.is_backward_call(node):
                    return False
                stepped = ev.step_target(node, self.index.is_optimizer)
                if stepped is not None and stepped[0] in names:
                    return True
        return False

    def _block_after(self, around: ast.If | None, node: ast.AST) -> list[syntax.Statement]:
        """The statements that follow ``node``'s own statement in ``around``'s branch."""
        parents = self.index.parents
        current = node
        while current is not None and parents.get(id(current)) is not around:
            current = parents.get(id(current))
        if around is None or current is None:
            return []
        for block in (around.body, around.orelse):
            for position, stmt in enumerate(block):
                if stmt is current:
                    return block[position + 1:]
        return []

    def _runs_backward(self, node: ast.AST, depth: int) -> bool:
        """Whether ``node`` runs a backward pass, itself or in a function it calls (a helper
        that only resets, ``self._start_update()``, runs none)."""
        for n in syntax.walk(node):
            if type(n) is not ast.Call:
                continue
            if ev.is_backward_call(n):
                return True
            if depth and self.contains_events(n):
                callee = self.index.resolve(n, self._class[-1], self._local_defs[-1])
                if callee is not None and self._runs_backward(callee, depth - 1):
                    return True
        return False

    @staticmethod
    def _sets_to_zero(call: ast.Call) -> bool:
        value = syntax.keyword(call, "set_to_none")
        return value is not None and syntax.constant(value) is False

    def _apply_zero(self, event: ev.Event, targets: tuple[str, ...], state: State,
                    spared: frozenset[str] = frozenset(), certain: bool = True) -> State:
        """``certain=False``: a reset that may or may not reach these optimizers counts as a
        reset for the flow, but not as one that the loop is known to do (GC003)."""
        for loop in self._loops if certain else ():
            self.zeroed_in_loop[id(loop)].update(targets)
        inner = self._inner_conditions()
        # A reset under a counter test (`if i % k == 0: zero_grad()`) opens an accumulation
        # window on purpose: GC001 trusts it, and so does GC002 when the step is counter-gated.
        # Not when the backward pass runs under that same test: then the window is the block.
        counter = bool(inner and inner[-1]) and not self._backward_inside(self._conditions[-1][3]) \
            and not self._step_follows(self._conditions[-1][3], event, targets)
        if counter and self._loops:
            self.counter_zeroed_in_loop.setdefault(id(self._loops[-1]), set()).update(targets)
        between_epochs = self._epoch_unit and not any(
            isinstance(loop, syntax.LOOPS) for loop in self._loops
        )
        # a reset on a loop's first iteration alone (`if i == 0:`) drops what the last epoch
        # left over, like one before the loop
        quiet = self._handlers > 0 or event.partial or counter or between_epochs or \
            self._first_only > 0
        depth = len(self._loops)
        guards = tuple(c for c in self._conditions if c[1] == depth and depth and not c[2])
        # the context of its latest run: the same reset runs in several (a function called
        # once per trial of a search, say), and the step that follows belongs to that one
        self.zero_context[event] = (tuple(map(id, self._loops)), guards)
        fn = lambda f: on_zero(f, event, quiet)
        if ev.ALL in targets:
            return self._map_all(state, fn, spared)
        for key in _members(state, targets):
            state = self._map_key(state, key, fn)  # `for opt in optimizers: opt.zero_grad()`
        for key in targets:
            state = self._map_key(state, key, fn)
            state = self._map_all(state, lambda f, k=key: after_other_reset(f, k), {key})
        return state

    def _alias_key(self, model: str) -> str:
        return f"{ALIAS_PREFIX}{model}"

    def _apply_step(self, call: ast.Call, opt: str, state: State) -> State:
        for dst, key in self._aliases.items():
            held = self.index.models_of(opt)
            if not held or dst in held:  # the step applies the aliased tensors too
                state = self._step_one(call, key, state, skip=set(self._aliases.values()))
        return self._step_one(call, opt, state, skip=set(self._aliases.values()) - {opt})

    def _step_one(self, call: ast.Call, opt: str, state: State, skip: set[str]) -> State:
        event = self._event(ev.STEP, call, opt)
        out: State = {}
        for assumptions, facts in state.items():
            facts = dict(facts)
            mine = facts.get(opt, facts[None])
            new_mine = set()
            self._step_kinds.setdefault((event.node_id, opt), set()).update(f[0] for f in mine)
            for fact in ordered(mine):
                self._report(fact, event, opt)
                new_mine.add(after_step(fact, event))
            for other in list(facts):
                if other != opt and other not in skip:
                    reaches = lambda bw, o=other: self._reaches(bw, o) and self._reaches(bw, opt)
                    feeds = lambda bw, o=other: o in self._feeders.get(bw, {}).get(opt, ())
                    facts[other] = frozenset(after_other_step(f, opt, reaches, feeds)
                                             for f in facts[other])
            facts[opt] = frozenset(new_mine)
            out[assumptions] = facts
        return out

    def _report(self, fact: tuple, step: ev.Event, opt: str) -> None:
        if self._owners and opt.startswith(f"{self._owners[-1]}."):
            return  # an inner optimizer's fate is its owner's, reported at the owner's step
        kind = fact[0]
        # Only tests inside the innermost loop explain why the step is skipped.
        depth = len(self._loops)
        conditions = tuple(t for t, d, *_ in self._conditions if d == depth and depth)
        if self._gates or self._last_gate and opt in self._gated_optimizers:
            conditions += ("<sync>",)
        if kind == STALE:
            issues = [Issue("GC002", step, step, opt, (fact[1],), True, conditions,
                            tuple(self._loops), any(self._inner_conditions()), (fact[2],))]
        elif kind == TAINTED:
            issues = [Issue("GC002", step, step, opt, tuple(sorted(fact[1], key=_pos)), True,
                            conditions, tuple(self._loops), any(self._inner_conditions()),
                            foreign=tuple(sorted(fact[2], key=_pos)))]
        elif kind == APPLIED:
            # A second step with no backward and no reset since the last one applies the
            # same gradients again.
            issues = [Issue("GC002", step, step, opt, (), True, conditions, tuple(self._loops),
                            any(self._inner_conditions()), (fact[1],), restep=True)]
        elif kind == WFRESH and _skipped_on_purpose(conditions, self._inner_conditions()):
            return
        elif kind in (WIPED, WFRESH):
            backwards = tuple(sorted(fact[2], key=_pos))
            # A reset that comes before the backward passes it wiped, in the text, wiped them
            # on a later iteration: the step between them was skipped, as in the WFRESH form.
            carried = {zero for zero in fact[1] if all(self._later_in_scope(bw, zero) for bw in backwards)}
            if kind == WIPED and carried and _skipped_on_purpose(conditions, self._inner_conditions()):
                return
            issues = [Issue("GC001", zero, step, opt, backwards, kind == WFRESH or zero in carried,
                            conditions, tuple(self._loops), any(self._inner_conditions()))
                      for zero in sorted(fact[1], key=_pos)
                      if not self._deliberate_reset(zero)]
        else:
            return
        for issue in issues:
            issue.names = self._subst[-1]
            key = (issue.code, issue.at.line, issue.at.col, opt, issue.restep)
            known = self.issues.setdefault(key, issue)
            known.applied_by += tuple(a for a in issue.applied_by if a not in known.applied_by)

    def _later_in_scope(self, event: ev.Event, zero: ev.Event) -> bool:
        """Whether ``event`` stands after ``zero`` in the same function (a backward pass run
        by a function defined elsewhere has no place in that order)."""
        return event.node_id > zero.node_id and self.index.scope_of(event.node) is self.index.scope_of(zero.node)

    def _deliberate_reset(self, zero: ev.Event) -> bool:
        """A reset that discards gradients on purpose, or that we cannot relate to the step:

        - it runs outside the loop that steps (`zero_grad()` at the top of an epoch, before
          the micro-batch loop): it drops what an unfinished window left over;
        - it runs only under a guard of its own (`if accumulation_steps == 1:`) while the step
          is counter-gated: nothing says the guard and the counter can both hold.
        """
        loops, guards = self.zero_context.get(zero, ((), ()))
        here = tuple(map(id, self._loops))
        if here[: len(loops)] == loops and not self.backward_loops.isdisjoint(here[len(loops):]):
            return True  # a loop that runs backward passes lies between the reset and the step
        # A guard around both the reset and the step (`if use_autoencoder:` over the whole
        # update) says nothing about either: only a guard of the reset's own counts.
        own = [g for g in guards if g not in self._conditions]
        return bool(own) and any(self._inner_conditions())

    def _scope_bindings(self, scope: ast.AST) -> Bindings:
        """What ``scope`` binds to each name, worked out once per scope."""
        bindings = self._bindings.get(id(scope))
        if bindings is None:
            bindings = self._bindings[id(scope)] = Bindings(scope, self.index.parents)
        return bindings

    def _note_reach(self, event: ev.Event, call: ast.Call) -> None:
        """Which models this backward pass is known to go through (``reach.py``)."""
        models = self.index.model_keys()
        if not models:
            return
        scope = self._frames[-1] if self._frames else self.index.tree
        bindings = self._scope_bindings(scope)
        own = lambda c: self.index.resolve(c, self._class[-1], {})
        found = models_feeding(call, scope, models, self.index.parents, bindings, own, self._switches)
        if found:
            # The optimizers are looked up before the caller's names replace the callee's
            # (`self.qnet` of the class, not `agent.qnet` of the loop that calls its method).
            self._reached[event] = frozenset(o for model in found for o in self._optimizers_of(model))
            self._feeders[event] = {
                opt: frozenset(o for feeder in feeders for o in self._optimizers_of(feeder))
                for model, feeders in found.items() if feeders for opt in self._optimizers_of(model)}

    def _switches(self, scope: ast.AST) -> bool:
        """``reach.switches_requires_grad``, once per scope of this unit."""
        found = self._switching.get(id(scope))
        if found is None:
            found = self._switching[id(scope)] = switches_requires_grad(scope)
        return found

    def _optimizers_of(self, model: str) -> set[str]:
        found = self.index.optimizers_of_model(self._subst_key(model))
        if not self._is_parameter(model):
            # `self.qnet` of the class is looked up as the class spells it
            found = found | self.index.optimizers_of_model(model)
        elif model not in self._subst[-1]:
            # a parameter (`model` of `adapt(model)`) is what the caller passed; handed no
            # name (`adapt(deepcopy(self.model))`), it holds only what this function built
            # over it: another function's `model` is another variable
            frame = self._frames[-1]
            found = {opt for opt in found if self.index.built_in(opt, frame)}
        return {self._subst_key(opt) for opt in found}

    def _is_parameter(self, name: str) -> bool:
        frame = self._frames[-1] if self._frames else None
        return "." not in name and isinstance(frame, syntax.FUNCTIONS) \
            and name in syntax.parameter_names(frame.args)

    def _reaches(self, bw: ev.Event, optimizer: str | None) -> bool:
        return optimizer is not None and optimizer in self._reached.get(bw, ())

    def _own_step_runs_backward(self, key: str) -> bool:
        cls = self.index.instance_class(key)
        method = self.index.class_method(cls, "step") if cls and self.index.is_optimizer_class(cls) else None
        return method is not None and any(
            type(n) is ast.Call and ev.is_backward_call(n) for n in syntax.walk(method))

    def _wrapper_step_is_its_own(self, key: str) -> bool:
        """Whether ``key`` is built by a project class that derives from no optimizer and whose
        ``step()`` does more than hand on to an inner optimizer's step: it clears or writes
        gradients itself (a meta-learning wrapper writing hypergradients), or steps nothing
        (a weight average). What such a step applies is read from no torch semantics. A
        wrapper that only adjusts the learning rate and calls the inner step keeps them."""
        cls = self.index.instance_class(key)
        if cls is None or self.index.is_optimizer_class(cls):
            return False
        method = self.index.class_method(cls, "step")
        if method is None:
            return False
        nodes = list(syntax.walk(method))
        inner_step = any(type(n) is ast.Call and syntax.callee_name(n) == "step" for n in nodes)
        clears = any(ev.is_grad_zeroing(n) or ev.is_grad_write(n) or (
            type(n) is ast.Call and syntax.callee_name(n) == "zero_grad") for n in nodes)
        return clears or not inner_step

    def _own_method(self, key: str, name: str, call: ast.Call, state: State) -> State:
        """After the standard effect of ``key.step()``, what the file's own optimizer class
        adds in its ``step`` (a ``p.grad = None`` for each parameter, say)."""
        cls = self.index.instance_class(key)
        method = self.index.class_method(cls, name) if cls and self.index.is_optimizer_class(cls) else None
        if method is None:
            return state
        self._owners.append(key)
        try:
            return self._inline(method, call, state, receiver=key)
        finally:
            self._owners.pop()

    def _closure_kind(self, closure: ast.AST) -> str:
        """``"callable"`` for a lambda or a function of this file, ``"value"`` for a name this
        function binds to something else (``wrapper.step(loss)``), else ``"unknown"``."""
        if type(closure) is ast.Lambda:
            return "callable"
        if type(closure) is not ast.Name:
            return "unknown"
        name = closure.id
        if name in self._local_defs[-1] or name in self.index.functions:
            return "callable"
        scope = self._frames[-1] if self._frames else self.index.tree
        for node in syntax.walk(scope):
            if type(node) is ast.Assign and type(node.value) is not ast.Lambda and any(
                    name in syntax.stored_names(t) for t in node.targets):
                return "value"
        return "unknown"

    def _opaque_step(self, key: str, state: State) -> State:
        for opt in self._unwrapped(self._expand(key)):
            state = self._map_key(state, opt, lambda f: (CLEAN,))
        return state

    def _closure(self, closure: ast.AST, state: State) -> State:
        # A closure handed to step() starts by resetting on purpose: whatever was there
        # before (a call of the same closure to log the loss, say) is not meant for the step.
        self._handlers += 1
        try:
            if type(closure) is ast.Lambda:
                return self._calls_in(closure.body, closure, state)
            if type(closure) is ast.Name:
                fn = self._local_defs[-1].get(closure.id) or self.index.functions.get(closure.id)
                if fn is not None:
                    return self._inline(fn, None, state)
            return state
        finally:
            self._handlers -= 1

    def _inline(self, fn: FunctionNode, call: ast.Call | None, state: State,
                receiver: str | None = None) -> State:
        """Walk ``fn``'s body in place of ``call`` (None: a closure step() calls), with the
        caller's arguments for its parameters. A function of another module of the project
        is walked the same way: its events happen at the call in this file (where a finding
        can point), and inside it names resolve in its own module."""
        if fn in self._frames:
            return state
        if len(self._frames) >= MAX_INLINE_DEPTH:
            # The function making the call is judged on its own too, its loop around the
            # call included (only this file's own: another module's is judged in its file).
            caller = self._frames[-1]
            if self._site is None and self.index.owner_of(caller) is None \
                    and caller not in self.too_deep:
                self.too_deep.append(caller)
            return state
        owner = self.index.owner_of(fn) if call is not None else None
        index = owner or self.index
        subst = dict(self._subst[-1]) if call is None else self._bind(fn, call)
        if receiver is None and call is not None and type(call.func) is ast.Attribute \
                and index.enclosing_class(fn):
            key = self._key(call.func.value)
            known = owner is not None or self.index.instance_class(key)
            receiver = key if key and key != "self" and known else None
        if receiver is not None:  # `updater.step(loss)`: `self` in the method is `updater`
            subst["self"] = (receiver,)
        home, site = (self.index, self.text), self._site
        if owner is not None:
            self._site = site or (call, self.text)
            self.index, self.text = owner, owner.text
        self._frames.append(fn)
        self._subst.append(subst)
        self._constants.append(dict(self._constants[-1]) if call is None else _flags(fn, call))
        self._local_defs.append(dict(self._local_defs[-1]) if call is None else {})
        self._class.append(index.enclosing_class(fn) or (None if owner else self._class[-1]))
        conditions, self._conditions = self._conditions, list(self._conditions)
        try:
            flow = self._block(syntax.body_of(fn), state)
        finally:
            (self.index, self.text), self._site = home, site
            self._frames.pop()
            self._subst.pop()
            self._constants.pop()
            self._local_defs.pop()
            self._class.pop()
            self._conditions = conditions
        return join(flow.normal, flow.ret) or state

    def _bind(self, fn: FunctionNode, call: ast.Call) -> dict[str, tuple[str, ...]]:
        bound: dict[str, tuple[str, ...]] = {}
        pairs = syntax.call_arguments(fn, call)
        for name, arg in pairs:
            key = self._key(arg)
            if key:
                bound[name] = self._expand(key)
        # `optimizer=None` left out: inside the callee the name holds nothing, whatever the
        # caller calls its own optimizer.
        bound.update((name, (ev.NOTHING,)) for name in _left_at_none(fn, pairs))
        return bound

    # ----- helpers ------------------------------------------------------------------------
    def _event(self, kind: str, node: ast.AST, target: str, partial: bool = False) -> ev.Event:
        if self._site is not None:  # inside another module's function: at the call here
            site, text = self._site
            return ev.Event(kind, site, text, target, partial, via=True)
        return ev.Event(kind, node, self.text, target, partial)

    def _key(self, node: ast.AST) -> str | None:
        key = ev.dotted(node)
        return self._subst_key(key) if key else None

    def _subst_key(self, key: str) -> str:
        head, dot, rest = key.partition(".")
        mapped = self._subst[-1].get(head)
        if mapped and len(mapped) == 1:
            return mapped[0] + dot + rest
        return key

    def _expand(self, key: str) -> tuple[str, ...]:
        head, dot, rest = key.partition(".")
        mapped = self._subst[-1].get(head)
        if mapped:
            return tuple(m + dot + rest for m in mapped)
        return (key,)

    def _unwrapped(self, keys: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(rebinding.unwrapped(k, self.index.is_optimizer) for k in keys)

    def _map_all(self, state: State, fn, spared: frozenset[str] | set[str] = frozenset()) -> State:
        """``fn`` on the facts of every optimizer but the ``spared`` ones."""
        out: State = {}
        for assumptions, facts in state.items():
            kept = {k: facts.get(k, facts[None]) for k in spared}
            out[assumptions] = {**{k: frozenset(map(fn, v)) for k, v in facts.items()}, **kept}
        return out

    def _on_backward(self, state: State, event: ev.Event) -> State:
        """Every optimizer's facts after the backward pass ``event``. Stale gradients name the
        first pass that added to them, unless only a later one is known to reach that
        optimizer's parameters: a GAN's generator, never reset, is told of its own loss's
        pass, not of the discriminator's, which stops at the detached fake images."""
        reached = self._reached.get(event, frozenset())

        def after(fact: tuple, key: str | None) -> tuple:
            if fact[0] == STALE and key in reached and key not in self._reached.get(fact[1], ()):
                return (STALE, event, fact[2])
            return on_backward(fact, event)

        return {assumptions: {key: frozenset(after(f, key) for f in value) for key, value in facts.items()}
                for assumptions, facts in state.items()}

    def _map_key(self, state: State, key: str, fn) -> State:
        out: State = {}
        for assumptions, facts in state.items():
            facts = dict(facts)
            facts[key] = frozenset(map(fn, facts.get(key, facts[None])))
            out[assumptions] = facts
        return out


def _known_keys(state: State) -> set[str]:
    return {k for facts in state.values() for k in facts if k}


def _members(state: State, targets: tuple[str, ...]) -> list[str]:
    """The members of reset collections that the state knows (``optimizers[a]`` for
    ``optimizers``)."""
    prefixes = tuple(f"{t}[" for t in targets if t != ev.ALL)
    return sorted(k for k in _known_keys(state) if prefixes and k.startswith(prefixes)
                  and k not in targets)


def _siblings(state: State, targets: list[str], index) -> tuple[str, ...]:
    """Other members of the collections that ``targets`` pick members of by a variable,
    those collections themselves, and the optimizers the file lists in them
    (``self._optimizers = {"actor": self.actor_optimizer, ...}``)."""
    prefixes = {p for p in map(ev.member_prefix, targets) if p}
    if not prefixes:
        return ()
    groups = {p[:-1] for p in prefixes}
    found = {k for k in _known_keys(state) if k.startswith(tuple(prefixes))} | groups | {
        m for group in groups for m in index.group_members(group) if index.is_optimizer(m)}
    return tuple(sorted(found - set(targets)))


def _left_at_none(fn: FunctionNode, pairs: list[tuple[str, ast.AST]]) -> list[str]:
    """Parameters defaulting to ``None`` that the call does not pass."""
    passed = {name for name, _ in pairs}
    return [name for name, default in syntax.defaults_of(fn.args)
            if name not in passed and type(default) is ast.Constant and default.value is None]


def _flags(fn: FunctionNode, call: ast.Call) -> dict[str, object]:
    """Parameters the call sets to a literal ``True``/``False``/``None``/number: a test that
    reads only them (``if optimizer and do_zero_grad:``) is decided at this call."""
    pairs = syntax.call_arguments(fn, call)
    flags: dict[str, object] = dict.fromkeys(_left_at_none(fn, pairs))
    for name, arg in pairs:
        value = syntax.constant(arg)
        if syntax.has_value(value) and (value is None or isinstance(value, (bool, int, float))):
            flags[name] = value
    return flags


_RESTORING_CALLS = frozenset({"load_state_dict", "set_params", "set_parameters", "load_params",
                              "vector_to_parameters"})
_COPYING_CALLS = frozenset({"deepcopy", "clone", "state_dict", "get_params", "parameters_to_vector"})


def _counting_names(scope: ast.AST) -> set[str]:
    """Loop targets and names stepped with ``+=`` in ``scope``, and the names bound from an
    expression that reads one (``last = step + 1 == total``)."""
    counters: set[str] = set()
    for node in syntax.walk(scope):
        if isinstance(node, syntax.FOR_LOOPS):
            counters |= syntax.stored_names(node.target)
        elif type(node) is ast.AugAssign:
            counters |= syntax.stored_names(node.target)
    derived = {name for node in syntax.walk(scope) if type(node) is ast.Assign
               and syntax.names_in(node.value) & counters
               for t in node.targets for name in syntax.stored_names(t)}
    return counters | derived


def _skipped_on_purpose(conditions: tuple[str, ...], counters: list[bool]) -> bool:
    """A step under a guard that is no counter test (``if torch.isfinite(norm):``) skips a
    batch on purpose; resetting that batch's gradients before the next one is intended."""
    return bool(conditions) and "<sync>" not in conditions and not any(counters)


def _pos(event: ev.Event) -> tuple[int, int]:
    return event.line, event.col


def _handed_more_than_a_closure(call: ast.Call, key: str) -> bool:
    """``opt.step(a, b)`` or ``opt.step(loss=l)`` on the optimizer itself (not a scaler's
    ``step(opt)``): more than torch's ``step(closure)`` takes."""
    func = call.func
    if type(func) is not ast.Attribute or func.attr != "step" or ev.member_key(func.value) != key:
        return False
    return len(call.args) > 1 or any(k.arg not in (None, "closure") for k in call.keywords)


def _is_closure_step(call: ast.Call) -> bool:
    return type(call.func) is ast.Attribute and call.func.attr == "step"


_COMPREHENSIONS = frozenset({ast.ListComp, ast.SetComp, ast.GeneratorExp})


def _finishing_order(node: ast.AST) -> list[ast.AST]:
    """Nodes evaluated when ``node`` runs, each after everything inside it (post-order).

    Children come in source order, so this is the order in which the nodes end in the text,
    found without resolving positions (which costs a walk of the whole module).
    """
    out: list[ast.AST] = []
    stack: list[tuple[ast.AST, bool]] = [(node, False)]
    while stack:
        current, expanded = stack.pop()
        if expanded:
            out.append(current)
            continue
        stack.append((current, True))
        stack.extend((c, False) for c in reversed(syntax.children(current))
                     if not isinstance(c, syntax.SCOPES))
    return out


def _parameters(scope: ast.AST) -> list[str]:
    return syntax.parameter_names(scope.args) if isinstance(scope, syntax.FUNCTIONS) else []

