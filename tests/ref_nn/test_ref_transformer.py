"""MultiheadAttention and the Transformer family against torch, in float64.

hypothesis draws the geometry (heads, head size, lengths, batch or unbatched, batch_first,
kdim/vdim), the options (bias, add_bias_kv, add_zero_attn, need_weights, averaging,
norm_first, activation by name or callable) and the masks (attn_mask 2-D or 3-D, bool or
float; key padding masks bool or float; causal masks). torch's initial weights are copied
into the engine by name; outputs, attention weights and every gradient must agree.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcheck.ref as ref

EXAMPLES = settings(max_examples=12, deadline=None)


def _copy_weights(theirs, ours):
    state = theirs.state_dict()
    mine = ours.state_dict(keep_vars=True)
    assert list(state) == list(mine), "parameter and buffer names differ from torch's"
    with ref.no_grad():
        for name, value in state.items():
            mine[name].copy_(ref.tensor(value.detach().numpy()))


def _mask(rng, kind, shape, valid_first=True):
    """A bool (True = masked out) or float (-inf/0 or finite) mask; key 0 stays visible so
    that no row of the softmax is empty."""
    if kind is None:
        return None
    masked = rng.random(shape) < 0.4
    if valid_first:
        masked[..., 0] = False
    if kind == "bool":
        return masked
    if kind == "float-inf":
        return np.where(masked, -np.inf, 0.0)
    return rng.normal(size=shape)


def _tensors(lib, arrays, grad):
    out = []
    for array in arrays:
        if array is None:
            out.append(None)
        elif array.dtype == bool:
            out.append(lib.tensor(array))
        else:
            out.append(lib.tensor(array, dtype=lib.float64, requires_grad=grad))
    return out


def _assert_same(ours, theirs, what):
    if theirs is None:
        assert ours is None, f"{what}: torch gives None"
        return
    np.testing.assert_allclose(np.asarray(ours.detach().numpy()),
                               theirs.detach().numpy(), rtol=1e-9, atol=1e-11, err_msg=what)


@st.composite
def attention_case(draw):
    heads = draw(st.integers(1, 3))
    embed = heads * draw(st.integers(1, 3))
    batch = draw(st.sampled_from([None, 1, 2]))
    lengths = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    separate = draw(st.booleans())
    return dict(
        heads=heads, embed=embed, batch=batch, tgt=lengths[0], src=lengths[1],
        kdim=draw(st.integers(1, 4)) if separate else None,
        vdim=draw(st.integers(1, 4)) if separate else None,
        self_attention=draw(st.booleans()) and not separate,
        batch_first=draw(st.booleans()), bias=draw(st.booleans()),
        add_bias_kv=draw(st.booleans()), add_zero_attn=draw(st.booleans()),
        need_weights=draw(st.booleans()), average=draw(st.booleans()),
        attn_mask=draw(st.sampled_from([None, "bool", "float-inf", "float"])),
        attn_mask_3d=draw(st.booleans()),
        padding=draw(st.sampled_from([None, "bool", "float-inf"])),
    )


def _attention_inputs(case, rng):
    n, first = case["batch"], case["batch_first"]
    src = case["tgt"] if case["self_attention"] else case["src"]

    def seq(length, width):
        if n is None:
            return rng.normal(size=(length, width))
        return rng.normal(size=(n, length, width) if first else (length, n, width))

    query = seq(case["tgt"], case["embed"])
    key = query if case["self_attention"] else seq(src, case["kdim"] or case["embed"])
    value = query if case["self_attention"] else seq(src, case["vdim"] or case["embed"])
    rows = (n or 1) * case["heads"]
    mask_shape = (rows, case["tgt"], src) if case["attn_mask_3d"] else (case["tgt"], src)
    attn_mask = _mask(rng, case["attn_mask"], mask_shape)
    padding = _mask(rng, case["padding"], (src,) if n is None else (n, src))
    if case["attn_mask"] and case["padding"] and (case["attn_mask"] == "bool") != (
            case["padding"] == "bool"):
        padding = None  # torch deprecates mixing a bool and a float mask
    return query, key, value, attn_mask, padding


@EXAMPLES
@given(case=attention_case())
def test_multihead_attention_matches_torch_with_gradients(case):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(case["embed"] * 31 + case["tgt"])
    query, key, value, attn_mask, padding = _attention_inputs(case, rng)
    kwargs = dict(bias=case["bias"], add_bias_kv=case["add_bias_kv"],
                  add_zero_attn=case["add_zero_attn"], kdim=case["kdim"], vdim=case["vdim"],
                  batch_first=case["batch_first"], dtype=None)
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(case["embed"], case["heads"], **kwargs).double()
    ours = ref.nn.MultiheadAttention(case["embed"], case["heads"], **kwargs).double()
    _copy_weights(theirs, ours)
    results = {}
    for lib, module in ((ref, ours), (torch, theirs)):
        arrays = (query,) if case["self_attention"] else (query, key, value)
        inputs = _tensors(lib, arrays, grad=True)
        q, k, v = inputs * 3 if case["self_attention"] else inputs
        mask, pad = _tensors(lib, (attn_mask, padding), grad=False)
        out, weights = module(q, k, v, key_padding_mask=pad, need_weights=case["need_weights"],
                              attn_mask=mask, average_attn_weights=case["average"])
        loss = (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))).sum()
        if weights is not None:
            loss = loss + (weights ** 2).sum()
        loss.backward()
        grads = [t.grad for t in inputs] + [p.grad for _, p in module.named_parameters()]
        results[lib] = (out, weights, grads)
    (out, weights, grads), (t_out, t_weights, t_grads) = results[ref], results[torch]
    _assert_same(out, t_out, "output")
    _assert_same(weights, t_weights, "attention weights")
    names = ["query", "key", "value"] + [n for n, _ in theirs.named_parameters()]
    for name, mine, expected in zip(names, grads, t_grads):
        _assert_same(mine, expected, f"gradient of {name}")


@pytest.mark.parametrize("call", [
    lambda lib, m: m(lib.ones(2, 3, 4), lib.ones(2, 3, 4), lib.ones(2, 3, 4),
                     attn_mask=lib.ones(2, 3, dtype=lib.bool)),
    lambda lib, m: m(lib.ones(2, 3, 4), lib.ones(2, 3, 4), lib.ones(2, 3, 4),
                     attn_mask=lib.ones(3, 2, 2, dtype=lib.bool)),
    lambda lib, m: m(lib.ones(2, 3, 4), lib.ones(2, 3, 4), lib.ones(2, 3, 4),
                     key_padding_mask=lib.ones(3, 3, dtype=lib.bool)),
    lambda lib, m: m(lib.ones(2, 3, 4), lib.ones(2, 3, 4), lib.ones(2, 3, 4),
                     attn_mask=lib.ones(2, 2, dtype=lib.int64)),
    lambda lib, m: m(lib.ones(2, 3, 6), lib.ones(2, 3, 6), lib.ones(2, 3, 6)),
    lambda lib, m: m(lib.ones(2, 3, 4), lib.ones(2, 3), lib.ones(2, 3, 4)),
    lambda lib, m: m(lib.ones(2, 2, 3, 4), lib.ones(2, 3, 4), lib.ones(2, 3, 4)),
])
def test_multihead_attention_refuses_what_torch_refuses(call, torch):
    errors = []
    for lib in (torch, ref):
        with pytest.raises((AssertionError, RuntimeError)) as caught:
            call(lib, lib.nn.MultiheadAttention(4, 2))
        errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1]


@st.composite
def transformer_case(draw):
    heads = draw(st.integers(1, 2))
    return dict(
        heads=heads, d_model=heads * draw(st.integers(1, 3)), ff=draw(st.integers(1, 5)),
        batch=draw(st.integers(1, 2)), src=draw(st.integers(1, 4)), tgt=draw(st.integers(1, 4)),
        layers=draw(st.integers(1, 2)), norm_first=draw(st.booleans()),
        batch_first=draw(st.booleans()), bias=draw(st.booleans()),
        activation=draw(st.sampled_from(["relu", "gelu", "tanh"])),
        causal=draw(st.booleans()), padding=draw(st.sampled_from([None, "bool", "float-inf"])),
    )


def _activation(lib, name):
    return lib.tanh if name == "tanh" else name  # a callable, or a name torch resolves


def _build_transformer(case):
    def build(lib):
        class Model(lib.nn.Module):
            def __init__(self):
                super().__init__()
                with warnings.catch_warnings():  # the nested-tensor notice, as in torch
                    warnings.simplefilter("ignore")
                    self.net = lib.nn.Transformer(
                        d_model=case["d_model"], nhead=case["heads"],
                        num_encoder_layers=case["layers"], num_decoder_layers=case["layers"],
                        dim_feedforward=case["ff"], dropout=0.0,
                        activation=_activation(lib, case["activation"]),
                        batch_first=case["batch_first"], norm_first=case["norm_first"],
                        bias=case["bias"])

            def forward(self, src, tgt, src_padding, tgt_padding):
                mask = self.net.generate_square_subsequent_mask(tgt.shape[
                    1 if case["batch_first"] else 0], dtype=src.dtype)
                return self.net(src, tgt, tgt_mask=mask if case["causal"] else None,
                                src_key_padding_mask=src_padding,
                                tgt_key_padding_mask=tgt_padding,
                                memory_key_padding_mask=src_padding)

        return Model()

    return build


@EXAMPLES
@given(case=transformer_case())
def test_transformer_trains_like_torch(case):
    pytest.importorskip("torch")
    rng = np.random.default_rng(case["d_model"] * 7 + case["src"])
    n, first = case["batch"], case["batch_first"]

    def seq(length):
        return rng.normal(size=(n, length, case["d_model"]) if first else
                          (length, n, case["d_model"]))

    inputs = [seq(case["src"]), seq(case["tgt"]),
              _mask(rng, case["padding"], (n, case["src"])) if case["padding"] else None,
              _mask(rng, case["padding"], (n, case["tgt"])) if case["padding"] else None]
    if case["padding"] is None:
        inputs = inputs[:2]

        def build(lib, inner=_build_transformer(case)):
            model = inner(lib)
            forward = model.forward
            model.forward = lambda src, tgt: forward(src, tgt, None, None)
            return model
    else:
        build = _build_transformer(case)
    # NOTE: SGD, not Adam: some gradients are exactly zero in theory (keys of a length-1
    # sequence get all the attention), and Adam would blow their rounding noise up to lr.
    report = ref.compare_with_torch(build, inputs, steps=2, rtol=1e-8, atol=1e-10,
                                    optimizer=lambda lib, p: lib.optim.SGD(p, lr=0.1))
    report.assert_ok()


@EXAMPLES
@given(case=transformer_case(), eval_mode=st.booleans())
def test_encoder_stack_matches_torch_in_eval_and_under_no_grad(case, eval_mode):
    """Eval mode under no_grad is where torch takes its nested-tensor path (zeros at padded
    positions); the engine must give the same values there too."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(case["d_model"] + case["src"])
    d, n, first = case["d_model"], case["batch"], True
    src = rng.normal(size=(n, case["src"], d))
    lengths = rng.integers(1, case["src"] + 1, size=n)
    padding = np.arange(case["src"])[None, :] >= lengths[:, None]  # padded at the end
    outputs, encoders = [], []
    for lib in (torch, ref):
        lib.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            layer = lib.nn.TransformerEncoderLayer(
                d, case["heads"] * 2 if d % (case["heads"] * 2) == 0 else case["heads"],
                dim_feedforward=case["ff"], dropout=0.1 if eval_mode else 0.0,
                activation=case["activation"]
                if case["activation"] != "tanh" else "gelu", batch_first=first,
                norm_first=case["norm_first"])
            encoder = lib.nn.TransformerEncoder(layer, case["layers"], lib.nn.LayerNorm(d))
        encoder = encoder.double().train(not eval_mode)
        if lib is ref:
            _copy_weights(encoders[0], encoder)
        encoders.append(encoder)
        with lib.no_grad():
            outputs.append(encoder(lib.tensor(src), src_key_padding_mask=lib.tensor(padding)))
    np.testing.assert_allclose(outputs[1].numpy(), outputs[0].numpy(), rtol=1e-9, atol=1e-11)


def test_transformer_masks_and_names_match_torch(torch):
    for size in (1, 4):
        np.testing.assert_array_equal(
            ref.nn.Transformer.generate_square_subsequent_mask(size).numpy(),
            torch.nn.Transformer.generate_square_subsequent_mask(size).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = ref.nn.Transformer(8, 2, 1, 1, 16)
        theirs = torch.nn.Transformer(8, 2, 1, 1, 16)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in theirs.named_parameters()]
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not swish"):
        ref.nn.TransformerEncoderLayer(4, 2, activation="swish")
    with pytest.warns(UserWarning, match="enable_nested_tensor is True, but self.use_nested"):
        ref.nn.TransformerEncoder(ref.nn.TransformerEncoderLayer(4, 2), 1)
    ref.nn.TransformerEncoder(ref.nn.TransformerEncoderLayer(4, 2), 1,
                              enable_nested_tensor=False)
