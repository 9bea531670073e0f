"""The abstract gradient state of each optimizer, and how events change it.

Per optimizer, on every path, the gradients are in one of these states:

- ``clean``: zeroed (or never written) since the last step;
- ``fresh``: holding backward passes that no step has used yet;
- ``applied``: a step has used them and nothing has zeroed them since;
- ``stale``: a backward added to ``applied`` gradients: the next step re-applies old ones (GC002);
- ``foreign``: fresh, but another optimizer's step consumed that backward (GANs, actor-critic),
  so zeroing them is housekeeping, not a loss; it names the backward passes known (``reach.py``)
  to have gone through the parameters of both, with the optimizer that stepped on them
  (pending), and those whose stepping optimizer has since reset its own share (confirmed:
  the loss was that optimizer's, and what is left here is another network's);
- ``tainted``: this optimizer's own backward added to such foreign gradients: its next step
  applies another network's loss too (GC002);
- ``wiped``: a zero discarded fresh gradients; a step reached from here is GC001;
- ``wfresh``: the same backward ran again after the wipe: the step sees only the last pass.

A State maps each set of branch assumptions (``(test, value)`` pairs, so that two ``if``
statements with the same test agree) to the facts of every optimizer; the key None stands
for every optimizer not named yet.
"""
from __future__ import annotations

from lint_rules import events as ev

CLEAN, FRESH, APPLIED, STALE, FOREIGN, TAINTED, WIPED, WFRESH = (
    "clean", "fresh", "applied", "stale", "foreign", "tainted", "wiped", "wfresh",
)
NO_EVIDENCE: frozenset = frozenset()
State = dict  # {frozenset of (test, bool): {optimizer key or None (others): frozenset of facts}}

def join(a: State | None, b: State | None) -> State | None:
    """Union of two path sets."""
    if a is None:
        return b
    if b is None:
        return a
    out = dict(a)
    for assumptions, facts in b.items():
        out[assumptions] = merge_facts(out[assumptions], facts) if assumptions in out else facts
    return out


def merge_facts(x: dict, y: dict) -> dict:
    keys = set(x) | set(y)
    return {k: x.get(k, x[None]) | y.get(k, y[None]) for k in keys}


def initial_state() -> State:
    """Nothing known: every optimizer clean, no assumptions."""
    return {frozenset(): {None: frozenset({(CLEAN,)})}}


def compact(state: State, key=None) -> State:
    """The same paths in fewer worlds: two worlds whose assumptions differ only in the value
    of one test, and whose facts agree, are one world that does not assume that test (the
    answer did not matter). Nothing is lost, so nothing is invented either.

    With ``key=kinds``, facts agree when they have the same kinds for every optimizer: the
    merged world keeps both sets of facts, so only which backward passes a message names
    can blur."""
    same = (lambda a, b: a == b) if key is None else (lambda a, b: key(a) == key(b))
    worlds = dict(state)
    changed = True
    while changed:
        changed = False
        # NOTE: which twins merge first decides what is left, so the order must not come
        # from hashing (a set's order changes with PYTHONHASHSEED, and with it the verdict).
        for assumptions in sorted(worlds, key=_world_order):
            if assumptions not in worlds:
                continue
            facts = worlds[assumptions]
            for test, value in sorted(assumptions, key=_assumption_order):
                twin = assumptions - {(test, value)} | {(test, not value)}
                if twin in worlds and same(worlds[twin], facts):
                    other = worlds.pop(twin)
                    del worlds[assumptions]
                    facts = merge_facts(facts, other)
                    merged = assumptions - {(test, value)}
                    worlds[merged] = merge_facts(worlds[merged], facts) if merged in worlds else facts
                    changed = True
                    break
    return worlds


def _assumption_order(assumption: tuple) -> tuple:
    (text, names, paths), value = assumption
    return text, sorted(names), sorted(map(repr, paths)), value


def _world_order(assumptions: frozenset) -> list:
    return sorted(map(_assumption_order, assumptions))


def kinds(facts: dict) -> dict:
    """The kinds of facts each optimizer has (``clean``, ``fresh``...), without their events."""
    return {key: frozenset(f[0] for f in value) for key, value in facts.items()}


def forget(state: State, drop) -> State:
    """Merge the paths that differ only in the assumptions ``drop`` selects."""
    out: State = {}
    for assumptions, facts in state.items():
        kept = frozenset(a for a in assumptions if not drop(a))
        out[kept] = merge_facts(out[kept], facts) if kept in out else facts
    return out


def on_backward(fact: tuple, bw: ev.Event) -> tuple:
    kind = fact[0]
    if kind == FOREIGN:
        # own passes, and the foreign ones under them: confirmed, or known to have reached
        # these parameters only through the network whose optimizer stepped on them
        foreign = fact[2] | {other for other, _, through in fact[1] if through}
        if foreign:
            return (TAINTED, frozenset({bw}), foreign)
    if kind in (CLEAN, FOREIGN):
        return (FRESH, frozenset({bw}))
    if kind in (FRESH, TAINTED):
        return (kind, fact[1] | {bw}, *fact[2:])
    if kind == APPLIED:
        return (STALE, bw, fact[1])  # which backward, and which step applied the old ones
    if kind == WIPED:
        # Only the same backward running again means the wiped gradients were wanted.
        return (WFRESH, fact[1], fact[2]) if bw in fact[2] else (FRESH, frozenset({bw}))
    return fact


def on_zero(fact: tuple, zero: ev.Event, quiet: bool) -> tuple:
    kind = fact[0]
    if kind in (FRESH, TAINTED) and not quiet:
        return (WIPED, frozenset({zero}), fact[1])
    if kind == WFRESH and not quiet:
        return (WIPED, fact[1], fact[2])
    if kind == WIPED:
        return fact if quiet else (WIPED, fact[1] | {zero}, fact[2])
    return (CLEAN,)


def dropped(fact: tuple) -> tuple:
    if fact[0] == FRESH:
        return (FOREIGN, NO_EVIDENCE, NO_EVIDENCE)
    if fact[0] == TAINTED:
        return (FOREIGN, NO_EVIDENCE, fact[2])
    return (CLEAN,) if fact[0] == WIPED else fact


def after_step(fact: tuple, step: ev.Event) -> tuple:
    # After a wipe the step had nothing to apply, so nothing stale is left behind.
    return (CLEAN,) if fact[0] in (CLEAN, WIPED) else (APPLIED, step)


def after_revert(fact: tuple) -> tuple:
    """The parameters were put back to a copy taken before the step (a look-ahead or a line
    search's trial step): the step is undone, and its gradients are unapplied again."""
    return (FRESH, frozenset()) if fact[0] == APPLIED else fact


def after_other_step(fact: tuple, stepper: str, consumed, fed=lambda bw: False) -> tuple:
    """Optimizer ``stepper`` stepped on the passes in ``fact``; ``consumed(bw)`` says whether
    ``bw`` is known to have gone through the parameters of both, ``fed(bw)`` whether it
    reached these only through the stepper's network (a generator under a discriminator's
    loss): then that loss was the stepper's, with no need to wait for its reset."""
    if fact[0] not in (FRESH, TAINTED):
        return fact
    pending = frozenset((bw, stepper, fed(bw)) for bw in fact[1] if consumed(bw))
    return (FOREIGN, pending, fact[2] if fact[0] == TAINTED else NO_EVIDENCE)


def after_other_reset(fact: tuple, resetter: str) -> tuple:
    """Optimizer ``resetter`` cleared its own share of the passes it stepped on: what they
    left here is confirmed as another network's."""
    if fact[0] != FOREIGN or not any(owner == resetter for _, owner, _ in fact[1]):
        return fact
    confirmed = frozenset(bw for bw, owner, _ in fact[1] if owner == resetter)
    pending = frozenset(p for p in fact[1] if p[1] != resetter)
    return (FOREIGN, pending, fact[2] | confirmed)


def ordered(facts) -> list[tuple]:
    """``facts`` in an order that does not depend on hashing (reports take the first)."""
    return sorted(facts, key=_fact_order)


def _fact_order(fact: tuple) -> tuple:
    return tuple(_part_order(part) for part in fact)


def _part_order(part) -> tuple:
    if isinstance(part, ev.Event):
        return (1, part.order)
    if isinstance(part, frozenset):
        return (2, tuple(sorted(_part_order(p) for p in part)))
    return (0, str(part))
