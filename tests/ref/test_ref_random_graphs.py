"""Random programs (shared subexpressions, in-place edits, views, setitem) run on the engine
and on torch: values and leaf gradients must agree."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gradcheck.ref as ref

torch = pytest.importorskip("torch")

# Each step reads two earlier values (by index) and appends a new one, or edits one in place.
STEPS = {
    "add": lambda m, a, b: a + b,
    "mul": lambda m, a, b: a * b,
    "sub_mean": lambda m, a, b: a - b.mean(),
    "maximum": lambda m, a, b: m.maximum(a, b * 0.5),
    "tanh": lambda m, a, b: m.tanh(a),
    "sigmoid_mul": lambda m, a, b: m.sigmoid(a) * b,
    "softmax": lambda m, a, b: m.softmax(a, dim=0),
    "flip_view": lambda m, a, b: a.view(3, 1).t().reshape(3) * 1.5,
    "where": lambda m, a, b: m.where(a > b, a, b * 2),
    "stack_sum": lambda m, a, b: m.stack([a, b]).sum(0),
}
IN_PLACE = {
    "mul_": lambda m, t, b: t.mul_(b),
    "add_view": lambda m, t, b: t[1:].add_(b[:2]),
    "setitem": lambda m, t, b: t.__setitem__(0, b[2] * 3),
    "clamp_": lambda m, t, b: t.clamp_(-1.0, 1.0),
    "index_add": lambda m, t, b: t.__setitem__(m.tensor([2, 0]), b[:2]),
}

# direct=True edits an existing value, which earlier ops may have saved for backward: then
# both engines must raise the same version-counter error.
program = st.lists(
    st.tuples(st.sampled_from(sorted(STEPS) + sorted(IN_PLACE)), st.integers(0, 99),
              st.integers(0, 99), st.booleans()),
    min_size=1, max_size=8,
)


def run(m, leaves, steps, weights):
    xs = [m.tensor(v, dtype=m.float64, requires_grad=True) for v in leaves]
    values = [x * 1 for x in xs]  # in-place edits need non-leaves
    for name, i, j, direct in steps:
        a, b = values[i % len(values)], values[j % len(values)]
        if name in STEPS:
            values.append(STEPS[name](m, a, b))
        else:
            target = a if direct else a.clone()
            IN_PLACE[name](m, target, b)
            values.append(target)
    loss = m.tensor(0.0, dtype=m.float64)
    for value, weight in zip(values, weights):
        loss = loss + (value * m.tensor(weight, dtype=m.float64)).sum()
    loss.backward()
    return loss.item(), [x.grad.numpy().copy() for x in xs]


@given(
    leaves=st.lists(st.lists(st.floats(-2, 2), min_size=3, max_size=3), min_size=2, max_size=2),
    steps=program,
    data=st.data(),
)
def test_random_programs_match_torch(leaves, steps, data):
    weights = [np.asarray(data.draw(st.lists(st.floats(-1, 1), min_size=3, max_size=3)))
               for _ in range(len(leaves) + len(steps))]
    try:
        theirs_loss, theirs = run(torch, leaves, steps, weights)
    except RuntimeError as exc:
        with pytest.raises(RuntimeError) as info:
            run(ref, leaves, steps, weights)
        assert str(info.value).split(":")[0] == str(exc).split(":")[0]
        return
    ours_loss, ours = run(ref, leaves, steps, weights)
    assert ours_loss == pytest.approx(theirs_loss, rel=1e-10, abs=1e-12)
    for mine, expected in zip(ours, theirs):
        np.testing.assert_allclose(mine, expected, rtol=1e-9, atol=1e-12)
