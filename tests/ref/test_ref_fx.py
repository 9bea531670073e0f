"""torch.fx on the engine against real torch.fx: the same models traced into the same graphs
(node ops, names, targets, printed graph and generated code), GraphModules that compute the
same values and gradients, wrap, custom leaves, Interpreter/Transformer and graph edits."""
from __future__ import annotations

import contextlib
import copy
import io
import math

import numpy as np
import pytest

import gradcheck.ref as ref


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    torch.set_default_dtype(torch.float32)
    return torch


def _models(lib):
    """Two models exercising what a trace records: leaf and traced-through modules,
    functions, methods, operators, attribute reads, parameters and buffers."""

    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)
            self.norm = lib.nn.LayerNorm(3)

        def forward(self, x):
            return self.norm(x + lib.tanh(self.lin(x)))

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = lib.nn.ModuleList([Block(), Block()])
            self.head = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
            self.w = lib.nn.Parameter(lib.ones(2) * 1.5)
            self.register_buffer("shift", lib.arange(2.0))

        def forward(self, x, scale=None):
            for block in self.blocks:
                x = block(x)
            y = self.head(x).softmax(dim=-1) * self.w + self.shift
            n = x.shape[0]
            y = lib.cat([y, y[:, :1] * 2], dim=1).view(n, -1) / 3
            return y.sum(dim=1, keepdim=True), -x.transpose(0, 1), 1 - y.mean()

    return Block, Net


def _same_weights(theirs, ours):
    ours.load_state_dict({k: ref.tensor(v.detach().double().numpy()) for k, v in
                          theirs.double().state_dict().items()})
    ours.double()


def _nodes(graph_module):
    return [(n.op, n.name, n.format_node()) for n in graph_module.graph.nodes]


def test_trace_matches_torch_graph_and_code(torch):
    theirs = torch.fx.symbolic_trace(_models(torch)[1]())
    ours = ref.fx.symbolic_trace(_models(ref)[1]())
    assert _nodes(ours) == _nodes(theirs)
    assert str(ours.graph) == str(theirs.graph)
    assert ours.code == theirs.code
    assert str(ours) == str(theirs)
    assert type(ours).__name__ == type(theirs).__name__ == "Net"
    assert isinstance(ours, ref.fx.GraphModule) and isinstance(ours, ref.nn.Module)
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_graph_module_computes_values_and_gradients_as_torch(torch):
    torch_model, model = _models(torch)[1](), _models(ref)[1]()
    _same_weights(torch_model, model)
    traced = ref.fx.symbolic_trace(model)
    torch_traced = torch.fx.symbolic_trace(torch_model)
    x = np.random.default_rng(0).standard_normal((5, 3))
    results = []
    for lib, module in ((torch, torch_traced), (ref, traced), (ref, model)):
        inputs = lib.tensor(x, requires_grad=True)
        outputs = module(inputs)
        sum(o.sum() * (i + 1) for i, o in enumerate(outputs)).backward()
        grads = [p.grad.numpy().copy() for p in module.parameters()]
        for p in module.parameters():
            p.grad = None
        results.append(([o.detach().numpy() for o in outputs], inputs.grad.numpy(), grads))
    for ours in results[1:]:
        for mine, real in zip(ours[0], results[0][0]):
            np.testing.assert_allclose(mine, real, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(ours[1], results[0][1], rtol=1e-12, atol=1e-14)
        for mine, real in zip(ours[2], results[0][2]):
            np.testing.assert_allclose(mine, real, rtol=1e-12, atol=1e-14)
    # the traced module holds the root's own parameters
    assert {id(p) for p in traced.parameters()} <= {id(p) for p in model.parameters()}


_WRAPPED_SOURCE = '''
def clamp_sum(x, bound):
    return (x.clamp(-bound, bound)).sum()

torch.fx.wrap("clamp_sum")

def uses_wrapped(a, b):
    return clamp_sum(a * b, 0.5) + torch.sin(a).mean()
'''


def _wrapped_function(lib):
    namespace = {"torch": lib, "__name__": "wrapped_example"}
    exec(compile(_WRAPPED_SOURCE, "wrapped_example", "exec"), namespace)
    return namespace["uses_wrapped"]


def test_functions_and_wrap_trace_as_torch(torch):
    theirs = torch.fx.symbolic_trace(_wrapped_function(torch))
    ours = ref.fx.symbolic_trace(_wrapped_function(ref))
    assert _nodes(ours) == _nodes(theirs)
    assert ours.code == theirs.code
    a, b = np.linspace(-1, 1, 6).reshape(2, 3), np.full((2, 3), 0.7)
    np.testing.assert_allclose(ours(ref.tensor(a), ref.tensor(b)).item(),
                               theirs(torch.tensor(a), torch.tensor(b)).item(), atol=1e-14)
    assert not ref.fx._symbolic_trace.is_fx_tracing()


def test_custom_leaves_and_untraceable_control_flow(torch):
    results = []
    for lib in (torch, ref):
        block_cls, net_cls = _models(lib)

        class KeepBlocks(lib.fx.Tracer):
            def is_leaf_module(self, m, qualified_name):
                return isinstance(m, block_cls) or super().is_leaf_module(m, qualified_name)

        graph = KeepBlocks().trace(net_cls())
        results.append([(n.op, str(n.target)) for n in graph.nodes if n.op == "call_module"])

        def branches(x):
            return x if x.sum() > 0 else -x

        with pytest.raises(lib.fx.proxy.TraceError, match="control flow"):
            lib.fx.symbolic_trace(branches)
        with pytest.raises(RuntimeError, match="'len' is not supported"):
            lib.fx.symbolic_trace(lambda x: len(x))
    assert results[1] == results[0]
    assert ("call_module", "blocks.0") in results[0]


def _swap_tanh(lib):
    class SwapTanh(lib.fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is lib.tanh:
                target = lib.sigmoid
            return super().call_function(target, args, kwargs)

    return SwapTanh


def test_interpreter_and_transformer_match_torch(torch):
    torch_model, model = _models(torch)[1](), _models(ref)[1]()
    _same_weights(torch_model, model)
    theirs, ours = torch.fx.symbolic_trace(torch_model), ref.fx.symbolic_trace(model)
    x = np.random.default_rng(1).standard_normal((4, 3))
    interpreted = ref.fx.Interpreter(ours).run(ref.tensor(x))
    for mine, real in zip(interpreted, theirs(torch.tensor(x))):
        np.testing.assert_allclose(mine.detach().numpy(), real.detach().numpy(), rtol=1e-12)
    swapped_theirs = _swap_tanh(torch)(theirs).transform()
    swapped_ours = _swap_tanh(ref)(ours).transform()
    assert swapped_ours.code == swapped_theirs.code
    assert "torch.sigmoid" in swapped_ours.code
    for mine, real in zip(swapped_ours(ref.tensor(x)), swapped_theirs(torch.tensor(x))):
        np.testing.assert_allclose(mine.detach().numpy(), real.detach().numpy(), rtol=1e-12)


def _edit(lib, traced):
    """A typical pass: put a relu after every tanh, then drop what is unused."""
    graph = traced.graph
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is lib.tanh:
            with graph.inserting_after(node):
                relu = graph.call_function(lib.relu, (node,))
            node.replace_all_uses_with(relu, delete_user_cb=lambda user: user is not relu)
    unused = graph.call_method("abs", (next(iter(graph.nodes)),))
    graph.erase_node(unused)
    graph.eliminate_dead_code()
    graph.lint()
    traced.recompile()
    return traced


def test_graph_edits_recompile_as_torch(torch):
    torch_model, model = _models(torch)[1](), _models(ref)[1]()
    _same_weights(torch_model, model)
    theirs = _edit(torch, torch.fx.symbolic_trace(torch_model))
    ours = _edit(ref, ref.fx.symbolic_trace(model))
    assert ours.code == theirs.code
    x = np.random.default_rng(2).standard_normal((3, 3))
    np.testing.assert_allclose(ours(ref.tensor(x))[0].detach().numpy(),
                               theirs(torch.tensor(x))[0].detach().numpy(), rtol=1e-12)
    users = [len(n.users) for n in ours.graph.nodes]
    assert users == [len(n.users) for n in theirs.graph.nodes]


def test_graph_module_from_a_dict_and_print_tabular(torch):
    outputs = []
    for lib in (torch, ref):
        graph = lib.fx.Graph()
        x = graph.placeholder("x")
        scaled = graph.call_function(lib.mul, (graph.get_attr("scale"), x))
        graph.output(graph.call_module("act", (scaled,)))
        module = lib.fx.GraphModule({"scale": lib.tensor([2.0, -1.0]), "act": lib.nn.ReLU()},
                                    graph)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            try:
                graph.print_tabular()
                raised = None
            except ImportError as error:
                raised = type(error)
        outputs.append((module.code, module(lib.tensor([1.0, 1.0])).tolist(),
                        printed.getvalue().splitlines()[:1], raised, sorted(
                            dict(module.named_buffers()))))
    assert outputs[1][:2] == outputs[0][:2] and outputs[1][4] == outputs[0][4]
    if outputs[0][3] is ImportError:  # torch needs `tabulate`: both say so the same way
        assert outputs[1][2:4] == outputs[0][2:4]


@pytest.mark.parametrize("name", ["gradcheck.ref.fx", "gradcheck.ref.fx.graph",
                                  "gradcheck.ref.fx.node", "gradcheck.ref.fx.proxy"])
def test_fx_docstring_examples_run(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_side_effects_survive_dead_code_elimination_and_compatibility_notes(torch):
    kept = []
    for lib in (torch, ref):
        def log_value(x):
            return x

        lib.fx.has_side_effect(log_value)
        graph = lib.fx.Graph()
        x = graph.placeholder("x")
        graph.call_function(log_value, (x,))
        graph.call_function(lib.sin, (x,))
        graph.output(x)
        graph.eliminate_dead_code()
        kept.append([n.name for n in graph.nodes])

        def documented():
            """Does a thing."""

        noted = lib.fx._compatibility.compatibility(is_backward_compatible=False)(documented)
        kept.append(noted.__doc__)
    assert kept[2:] == kept[:2]
    assert "log_value" in kept[0] and "sin" not in kept[0]


def test_renamed_inputs_deepcopy_and_patches_undone(torch):
    before = (ref.relu, ref.Tensor.__add__, vars(ref.Tensor).get("__radd__"),
              ref.nn.Module.__call__, ref.nn.Module.__getattr__)
    theirs = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
    ours = ref.fx.symbolic_trace(ref.nn.Sequential(ref.nn.Linear(2, 2), ref.nn.ReLU()))
    assert ours.code == theirs.code and "input_1 = input" in ours.code
    assert (ref.relu, ref.Tensor.__add__, vars(ref.Tensor).get("__radd__"),
            ref.nn.Module.__call__, ref.nn.Module.__getattr__) == before
    copied = copy.deepcopy(ours)
    assert type(copied).__name__ == "Sequential" and copied.code == ours.code
    assert copied.get_parameter("0.weight") is not ours.get_parameter("0.weight")
    x = ref.randn(3, 2)
    np.testing.assert_array_equal(copied(x).detach().numpy(), ours(x).detach().numpy())


def _attention(lib):
    class Attention(lib.nn.Module):
        """A GPT-style block: unpacking a split, sizes, math on sizes, a buffer mask."""

        def __init__(self, d=8, heads=2):
            super().__init__()
            self.emb, self.ln = lib.nn.Embedding(10, d), lib.nn.LayerNorm(d)
            self.qkv, self.proj, self.heads = lib.nn.Linear(d, 3 * d), lib.nn.Linear(d, d), heads
            self.register_buffer("mask", lib.tril(lib.ones(6, 6)).view(1, 1, 6, 6))

        def forward(self, idx):
            x = self.emb(idx)
            b, t, c = x.size(0), x.size(1), x.size(2)
            q, k, v = self.qkv(self.ln(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                       for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.mask == 0, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
            return self.proj(y) + x, lib.arange(0, t, dtype=lib.long)

    return Attention().double()


def test_attention_block_traces_and_computes_as_torch(torch):
    torch_model, model = _attention(torch), _attention(ref)
    _same_weights(torch_model, model)
    theirs, ours = torch.fx.symbolic_trace(torch_model), ref.fx.symbolic_trace(model)
    assert ours.code == theirs.code and "math_sqrt" in ours.code
    idx = np.arange(12).reshape(2, 6) % 10
    mine, real = ours(ref.tensor(idx)), theirs(torch.tensor(idx))
    np.testing.assert_allclose(mine[0].detach().numpy(), real[0].detach().numpy(), rtol=1e-12)
    assert mine[1].tolist() == real[1].tolist()


def _functional_net(lib):
    functional = lib.nn.functional

    class Functional(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(4, 4)

        def forward(self, x):
            h = functional.dropout(functional.relu(self.fc(x)), p=0.0, training=self.training)
            h = functional.layer_norm(h, (4,)) + functional.gelu(h)
            return functional.softmax(h, dim=-1, dtype=lib.float64), functional.log_softmax(h, 1)

    return Functional().double()


def test_functional_calls_are_recorded_with_torchs_layout(torch):
    torch_model, model = _functional_net(torch), _functional_net(ref)
    _same_weights(torch_model, model)
    theirs, ours = torch.fx.symbolic_trace(torch_model), ref.fx.symbolic_trace(model)
    assert ours.code == theirs.code and "relu(fc, inplace = False)" in ours.code
    x = np.random.default_rng(3).standard_normal((2, 4))
    for mine, real in zip(ours(ref.tensor(x)), theirs(torch.tensor(x))):
        np.testing.assert_allclose(mine.detach().numpy(), real.detach().numpy(), rtol=1e-12)
