"""torch.compile's OptimizedModule, torch._dynamo.config, and torch.library custom operators
on the engine, each against real torch on the same inputs (torch compiling with its eager
backend, which needs no C++ compiler)."""
# no `from __future__ import annotations`: torch.library reads the annotations as types

import itertools

import numpy as np
import pytest

import gradcheck.ref as ref

_names = itertools.count()


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2)).double()


def test_compiled_module_wraps_as_torch(torch):
    theirs_model, ours_model = _mlp(torch), _mlp(ref)
    ours_model.load_state_dict({k: ref.tensor(v.detach().numpy())
                                for k, v in theirs_model.state_dict().items()})
    theirs = torch.compile(theirs_model, backend="eager")
    ours = ref.compile(ours_model)
    assert type(ours).__name__ == type(theirs).__name__ == "OptimizedModule"
    assert isinstance(ours, ref._dynamo.eval_frame.OptimizedModule)
    assert ours._orig_mod is ours_model and repr(ours) == repr(theirs)
    for what in ("state_dict", "named_parameters", "named_modules"):
        assert [k for k, *_ in (getattr(ours, what)().items() if what == "state_dict" else
                                getattr(ours, what)())] == \
               [k for k, *_ in (getattr(theirs, what)().items() if what == "state_dict" else
                                getattr(theirs, what)())]
    for lib, module in ((torch, theirs), (ref, ours)):
        module.eval()
        module.note = "kept on the original"
    assert (ours_model.training, ours.training, ours_model.note) == (
        theirs_model.training, theirs.training, theirs_model.note)
    x = np.random.default_rng(0).standard_normal((5, 3))
    outs = []
    for lib, module in ((torch, theirs), (ref, ours)):
        out = module(lib.tensor(x))
        out.pow(2).sum().backward()
        outs.append((out.detach().numpy(), module._orig_mod[0].weight.grad.numpy()))
    for mine, real in zip(outs[1], outs[0]):
        np.testing.assert_allclose(mine, real, rtol=1e-12)
    stripped = {k.removeprefix("_orig_mod."): v for k, v in ours.state_dict().items()}
    assert _mlp(ref).load_state_dict(stripped) is not None
    assert ref.compile(len) is len


def test_dynamo_config_flags_and_patch_as_torch(torch):
    for lib in (torch, ref):
        config = lib._dynamo.config
        names = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops", "cache_size_limit",
                 "accumulated_cache_size_limit", "suppress_errors", "optimize_ddp",
                 "automatic_dynamic_shapes", "verbose")
        defaults = [getattr(config, name) for name in names]
        with config.patch(capture_scalar_outputs=True):
            inside = config.capture_scalar_outputs

        @config.patch("suppress_errors", True)
        def patched():
            return config.suppress_errors

        config.cache_size_limit = 16
        aliased = config.recompile_limit
        config.cache_size_limit = defaults[2]
        unknown = "torch._dynamo.config.no_such_flag does not exist"
        with pytest.raises(AttributeError, match=unknown):
            with config.patch(no_such_flag=1):
                pass
        with pytest.raises(AttributeError, match="no_such_flag does not exist"):
            config.no_such_flag = 1
        results = (defaults, inside, patched(), config.suppress_errors, aliased,
                   config.capture_scalar_outputs)
        if lib is torch:
            expected = results
    assert results == expected
    assert ref._dynamo.testing.reduce_to_scalar_loss([ref.ones(2, 2), ref.zeros(3)]).item() == \
        torch._dynamo.testing.reduce_to_scalar_loss([torch.ones(2, 2), torch.zeros(3)]).item()


def _scale_add(lib, ns):
    @lib.library.custom_op(f"{ns}::scale_add", mutates_args=())
    def scale_add(x: lib.Tensor, y: lib.Tensor, alpha: float = 2.0) -> lib.Tensor:
        return x * alpha + y.sin()

    @scale_add.register_fake
    def _(x, y, alpha=2.0):
        return lib.empty_like(x)

    return scale_add


def _backward(ctx, grad):
    (y,) = ctx.saved_tensors
    return grad * ctx.alpha, grad * y.cos(), None


def _setup(ctx, inputs, output):
    x, y, alpha = inputs
    ctx.save_for_backward(y)
    ctx.alpha = alpha


def test_custom_op_runs_and_differentiates_as_torch(torch):
    ns = f"gcfix{next(_names)}"
    x0, y0 = np.array([1.0, 2.0, -0.5]), np.array([0.5, 0.1, 2.0])
    results = []
    for lib in (torch, ref):
        op = _scale_add(lib, ns)
        x = lib.tensor(x0, requires_grad=True)
        y = lib.tensor(y0, requires_grad=True)
        out = op(x, y, alpha=3.0)
        with pytest.raises(RuntimeError, match="no autograd formula was registered"):
            out.sum().backward()
        lib.library.register_autograd(f"{ns}::scale_add", _backward, setup_context=_setup)
        packet = getattr(lib.ops, ns).scale_add
        out = packet(x, y, 3.0)
        (out * lib.tensor([1.0, 2.0, 3.0], dtype=out.dtype)).sum().backward()
        plain = packet.default(lib.tensor(x0), lib.tensor(y0))
        results.append((out.detach().numpy(), x.grad.numpy(), y.grad.numpy(), plain.numpy(),
                        type(out.grad_fn).__name__, repr(packet), repr(packet.default),
                        str(packet), str(packet.default), packet.default.name(),
                        out.requires_grad, plain.requires_grad))
        with pytest.raises(AttributeError, match="has no attribute 'missing'"):
            getattr(lib.ops, ns).missing
    for mine, real in zip(results[1][:4], results[0][:4]):
        np.testing.assert_allclose(mine, real, rtol=1e-6)
    assert results[1][4:] == results[0][4:]


def test_custom_op_rules_match_torch(torch):
    ns = f"gcfix{next(_names)}"
    for lib in (torch, ref):
        with pytest.raises(ValueError, match="Parameter x must have a type annotation"):
            lib.library.custom_op(f"{ns}::noann", mutates_args=())(lambda x: x.clone())

        @lib.library.custom_op(f"{ns}::same", mutates_args=())
        def same(x: lib.Tensor) -> lib.Tensor:
            return x

        with pytest.raises(RuntimeError, match="same"):
            same(lib.ones(2))

        @lib.library.custom_op(f"{ns}::bump_", mutates_args={"x"})
        def bump_(x: lib.Tensor) -> None:
            x.add_(1)

        z = lib.zeros(2)
        bump_(z)
        assert z.tolist() == [1.0, 1.0] and z._version == 2


def test_library_define_and_impl_as_torch(torch):
    ns = f"gcfix{next(_names)}"
    results = []
    for lib in (torch, ref):
        library = lib.library.Library(ns, "DEF")
        library.define("twice(Tensor x) -> Tensor")
        lib.library.impl(library, "twice", "CompositeImplicitAutograd")(lambda x: x * 2)
        lib.library.define(f"{ns}::cube", "(Tensor x) -> Tensor")
        lib.library.impl(f"{ns}::cube", "CompositeImplicitAutograd")(lambda x: x ** 3)
        x = lib.tensor([1.0, -2.0], requires_grad=True)
        out = getattr(lib.ops, ns).twice(getattr(lib.ops, ns).cube(x))
        out.sum().backward()
        results.append((out.tolist(), x.grad.tolist()))
    assert results[1] == results[0]
