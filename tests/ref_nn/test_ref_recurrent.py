"""RNN, LSTM and GRU (and their cells) against torch: hypothesis draws num_layers,
bidirectional, batch_first, bias and the sizes; from torch's initial weights both sides must
give the same outputs, final states and gradients (for the input, h0/c0 and every weight)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcheck.ref as ref


def _recurrent(kind, options, with_state):
    def build(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = getattr(lib.nn, kind)(3, 4, **options)
                layers = options.get("num_layers", 1) * (2 if options.get("bidirectional")
                                                         else 1)
                self.h0 = lib.nn.Parameter(lib.randn(layers, 2, 4))
                self.c0 = lib.nn.Parameter(lib.randn(layers, 2, 4))

            def forward(self, x):
                if not with_state:
                    out, state = self.rnn(x)
                elif kind == "LSTM":
                    out, state = self.rnn(x, (self.h0, self.c0))
                else:
                    out, state = self.rnn(x, self.h0)
                h = state[0] if kind == "LSTM" else state
                return out.sum() + (h * h).sum() + (state[1].sum() if kind == "LSTM" else 0)

        return Net()

    return build


@settings(max_examples=10, deadline=None)
@given(kind=st.sampled_from(["RNN", "LSTM", "GRU"]), num_layers=st.integers(1, 2),
       bidirectional=st.booleans(), batch_first=st.booleans(), bias=st.booleans(),
       length=st.integers(1, 4), with_state=st.booleans())
def test_recurrent_layers_match_torch(kind, num_layers, bidirectional, batch_first, bias,
                                      length, with_state):
    pytest.importorskip("torch")
    options = dict(num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first,
                   bias=bias)
    shape = (2, length, 3) if batch_first else (length, 2, 3)
    x = np.random.default_rng(length).normal(size=shape)
    loss = (lambda lib, out: out)
    report = ref.compare_with_torch(_recurrent(kind, options, with_state), [x], loss,
                                    rtol=1e-9, atol=1e-11)
    report.assert_ok()


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(kind):
    pytest.importorskip("torch")

    def build(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.cell = getattr(lib.nn, kind)(3, 5)

            def forward(self, x):
                state = None
                for t in range(x.shape[0]):
                    state = self.cell(x[t], state)
                return state[0] if kind == "LSTMCell" else state

        return Net()

    x = np.random.default_rng(0).normal(size=(4, 2, 3))
    ref.compare_with_torch(build, [x], rtol=1e-9, atol=1e-11).assert_ok()


def test_unbatched_lstm_and_names_match_torch(torch):
    t_lstm = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    r_lstm = ref.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    assert list(r_lstm.state_dict()) == list(t_lstm.state_dict())
    assert [tuple(p.shape) for p in r_lstm.parameters()] == \
        [tuple(p.shape) for p in t_lstm.parameters()]
    assert repr(r_lstm) == repr(t_lstm)
    out, (h, c) = r_lstm(ref.randn(5, 3))
    assert tuple(out.shape) == (5, 8) and tuple(h.shape) == (4, 4) and tuple(c.shape) == (4, 4)
