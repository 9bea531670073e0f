"""Tensor API against torch: repr, dtypes and promotion, creation, conversions, indexing,
in-place ops, devices and bad input."""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import gradcheck.ref as ref

torch = pytest.importorskip("torch")


def torch_error(fn) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn(torch)
    return type(info.value), str(info.value)


def assert_same_error(fn):
    kind, text = torch_error(fn)
    kind = IndexError if issubclass(kind, IndexError) else RuntimeError
    with pytest.raises(kind, match=re.escape(text)):
        fn(ref)


REPRS = [
    lambda m: m.tensor([12.0]),
    lambda m: m.tensor([1.0, 2.0], requires_grad=True),
    lambda m: m.tensor(3.0),
    lambda m: m.tensor([1, 2]),
    lambda m: m.tensor(2.0, dtype=m.float64),
    lambda m: m.tensor([1.5, 2.0]),
    lambda m: m.tensor([1.0, 2.0], requires_grad=True) * 2,
    lambda m: m.tensor([1e-5, 1.0]),
    lambda m: m.tensor([1e10, 1.0]),
    lambda m: m.tensor([0.1234567]),
    lambda m: m.tensor([[1.0, 2.0], [3.0, 4.0]]),
    lambda m: m.tensor([[[1.0, -2.0], [3.0, 4.5]], [[0.0, 1.0], [2.0, 3.0]]]),
    lambda m: m.tensor([True, False]),
    lambda m: m.tensor([1.0, float("nan"), float("inf")]),
    lambda m: m.tensor([-1.0, 2.0]),
    lambda m: m.zeros(2, 0),
    lambda m: m.zeros(0),
    lambda m: m.tensor([1, 2], dtype=m.int32),
    lambda m: m.tensor([100.0, 2.5]),
    lambda m: m.tensor([123456.0, 1.0]),
    lambda m: m.tensor(3.0, requires_grad=True).sum(),
    lambda m: m.tensor([-0.5, 0.25], dtype=m.float64, requires_grad=True),
    lambda m: m.arange(12).reshape(3, 4),
    # line wrapping at 80 columns, suffixes moved to their own line, summarised big tensors
    lambda m: m.arange(30.0), lambda m: m.arange(30.0, dtype=m.float64).requires_grad_() * 2,
    lambda m: m.arange(100).reshape(4, 25), lambda m: m.tensor([True] * 30),
    lambda m: m.arange(2000.0), lambda m: m.arange(10000.0).reshape(100, 100),
    lambda m: m.from_numpy(np.linspace(-3, 3, 1500)), lambda m: m.ones(3, 2, 1000),
    lambda m: m.arange(10.0).reshape(2, 5) * 1e-6, lambda m: m.zeros(3, 0, 2),
]


@pytest.mark.parametrize("make", REPRS, ids=[str(i) for i in range(len(REPRS))])
def test_repr_matches_torch(make):
    assert repr(make(ref)) == repr(make(torch))


def test_repr_of_dtype_device_size():
    assert repr(ref.float32) == repr(torch.float32)
    assert repr(ref.device("cpu")) == repr(torch.device("cpu"))
    assert repr(ref.ones(2, 3).shape) == repr(torch.ones(2, 3).shape)
    assert str(ref.ones(1).device) == "cpu"


# ----- dtypes -------------------------------------------------------------------------------------
OPERANDS = {
    "f32": lambda m: m.ones(2), "f64": lambda m: m.ones(2, dtype=m.float64),
    "i64": lambda m: m.ones(2, dtype=m.int64), "b": lambda m: m.ones(2, dtype=m.bool),
    "i32": lambda m: m.ones(2, dtype=m.int32),
    "f64_0d": lambda m: m.tensor(1.0, dtype=m.float64), "i64_0d": lambda m: m.tensor(3),
    "float": lambda m: 2.5, "int": lambda m: 3, "bool": lambda m: True,
}


@pytest.mark.parametrize("op", ["add", "mul", "truediv", "sub"])
@pytest.mark.parametrize("left,right", [
    (a, b) for a, b in itertools.product(OPERANDS, OPERANDS)
    if not (a in ("float", "int", "bool") and b in ("float", "int", "bool"))
])
def test_type_promotion_matches_torch(op, left, right):
    def run(m):
        a, b = OPERANDS[left](m), OPERANDS[right](m)
        try:
            return str(getattr(__import__("operator"), op)(a, b).dtype).replace("torch.", "")
        except (RuntimeError, TypeError) as exc:
            return type(exc).__name__

    assert run(ref) == run(torch)


def test_default_dtype_can_be_switched():
    ref.set_default_dtype(ref.float64)
    try:
        assert ref.tensor([1.0]).dtype == ref.float64 and ref.randn(2).dtype == ref.float64
    finally:
        ref.set_default_dtype(ref.float32)
    assert ref.tensor([1.0]).dtype == ref.float32 and ref.get_default_dtype() == ref.float32


def test_float32_stays_float32_through_a_training_step():
    w = ref.randn(3, 2, requires_grad=True)
    loss = ((ref.randn(4, 3) @ w).relu() * 0.5 + 1).log_softmax(1).mean()
    loss.backward()
    assert loss.dtype == ref.float32 and w.grad.dtype == ref.float32


@pytest.mark.parametrize("make", [
    lambda m: m.arange(5), lambda m: m.arange(0, 1, 0.25), lambda m: m.linspace(0, 1, 5),
    lambda m: m.eye(3, 2), lambda m: m.full((2,), 7), lambda m: m.full((2,), 7.0),
    lambda m: m.zeros_like(m.ones(2, dtype=m.int64)), lambda m: m.ones(2, 3).new_zeros(4),
    lambda m: m.tensor([[1, 2], [3, 4]]).float(), lambda m: m.tensor([1.7, -1.7]).long(),
    lambda m: m.tensor([0.0, 2.0]).bool(), lambda m: m.ones(2).double().sum(),
    lambda m: m.tensor(np.arange(3.0)), lambda m: m.from_numpy(np.arange(3)),
    lambda m: m.tensor([True, True]).sum(), lambda m: m.ones(2, 3).new_tensor([1, 2]),
])
def test_creation_matches_torch(make):
    ours, theirs = make(ref), make(torch)
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_from_numpy_shares_memory_and_seeding_is_reproducible():
    array = np.zeros(3)
    t = ref.from_numpy(array)
    array[0] = 5
    assert t[0].item() == 5.0
    ref.manual_seed(0)
    a = ref.randn(4)
    ref.manual_seed(0)
    assert ref.randn(4).tolist() == a.tolist()
    g = ref.Generator().manual_seed(1)
    assert ref.randperm(5, generator=g).sort() if False else sorted(
        ref.randperm(5, generator=g).tolist()) == [0, 1, 2, 3, 4]


# ----- conversions and attributes -----------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda m: m.ones(2, 3).size(), lambda m: m.ones(2, 3).size(-1), lambda m: m.ones(2, 3).dim(),
    lambda m: m.ones(2, 3).numel(), lambda m: m.tensor([1.5]).item(),
    lambda m: m.tensor([[1, 2]]).tolist(), lambda m: float(m.tensor(2.5)),
    lambda m: int(m.tensor(3.9)), lambda m: bool(m.tensor([0.0])), lambda m: len(m.ones(4, 2)),
    lambda m: [t.tolist() for t in m.tensor([[1, 2], [3, 4]])],
    lambda m: list(range(10))[m.tensor(3)], lambda m: m.ones(2).is_leaf,
    lambda m: (m.ones(2, requires_grad=True) * 2).is_leaf, lambda m: m.ones(2, 3).T.shape,
    lambda m: m.ones(2, 3, 4).mT.shape, lambda m: m.ones(2, 3).ndim,
    lambda m: m.ones(2).requires_grad_().detach().requires_grad,
    lambda m: m.tensor([1.0, 2.0]).max(0).indices.item(),
    lambda m: m.equal(m.ones(2), m.ones(2)), lambda m: m.allclose(m.ones(2), m.ones(2) + 1e-9),
    lambda m: m.ones(3).to(m.float64).dtype.is_floating_point,
    lambda m: m.is_tensor(m.ones(1)), lambda m: m.numel(m.ones(2, 2)),
    lambda m: (m.tensor([1.0, 2.0]) > 1.5).tolist(), lambda m: m.tensor([3.0, 1.0]).argmax().item(),
    lambda m: m.tensor([[1.0, 5.0], [7.0, 2.0]]).argmin(1).tolist(),
    lambda m: (m.tensor([1, 0]) == 0).any().item(), lambda m: m.ones(2).all().item(),
    lambda m: m.ones(2, 3).type(), lambda m: str(m.ones(2).type(m.float64).dtype),
    lambda m: m.ones(2, 3).t().stride(), lambda m: m.ones(2).get_device(),
    lambda m: m.finfo(m.float32).eps, lambda m: m.iinfo(m.int64).max,
    lambda m: m.einsum("ij,jk->ik", m.ones(2, 3), m.ones(3, 4)).tolist(),
    lambda m: repr(m.ones(2, 3).max(1)), lambda m: m.ones(2, 3).split(2, 1)[1].shape,
    lambda m: [c.shape for c in m.ones(5, 2).chunk(2)], lambda m: m.ones(2, 3).unbind(1)[0].shape,
])
def test_attribute_and_conversion_results_match_torch(fn):
    assert fn(ref) == fn(torch)


def test_data_is_settable_and_shares_storage():
    w = ref.ones(2, requires_grad=True)
    alias = w.data
    alias.mul_(3)
    assert w.tolist() == [3.0, 3.0] and not alias.requires_grad
    w.data = ref.zeros(2)
    assert w.tolist() == [0.0, 0.0] and w.requires_grad


# ----- indexing and in-place under no_grad ---------------------------------------------------
@pytest.mark.parametrize("index", [
    lambda m: 1, lambda m: -1, lambda m: slice(None, None, 2), lambda m: (Ellipsis, 0),
    lambda m: (None, 1), lambda m: m.tensor([2, 0, 2]), lambda m: [0, 1],
    lambda m: m.tensor([True, False, True, False]), lambda m: (m.tensor([0, 1]), m.tensor([1, 2])),
    lambda m: (slice(1, 3), m.tensor([0, 2])),
])
def test_indexing_and_setitem_match_torch(index):
    def run(m):
        x = m.arange(12.0).reshape(4, 3)
        read = x[index(m)].tolist()
        with m.no_grad():
            x[index(m)] = -1.0
        return read, x.tolist()

    assert run(ref) == run(torch)


@st.composite
def _mixed_index(draw):
    """Per dim of a (3, 4, 5, 2) tensor: an int, a slice, an index array, or None before it;
    at least one int and one array, so ints may separate the arrays."""
    shape, entries = (3, 4, 5, 2), []
    for size in shape:
        if draw(st.booleans()):
            entries.append(("none",))
        kind = draw(st.sampled_from(["int", "slice", "array", "all"]))
        if kind == "int":
            entries.append(("int", draw(st.integers(-size, size - 1))))
        elif kind == "slice":
            entries.append(("slice", draw(st.integers(0, size - 1)), draw(st.integers(1, 2))))
        elif kind == "array":
            rows = draw(st.sampled_from([(2,), (1, 2), (3, 1)]))  # these broadcast
            if rows == (2,) and draw(st.booleans()):  # a plain tuple is an index sequence too
                entries.append(("tuple", tuple(draw(st.lists(st.integers(0, size - 1),
                                                             min_size=2, max_size=2)))))
                continue
            entries.append(("array", np.array(draw(st.lists(st.integers(0, size - 1),
                                                           min_size=int(np.prod(rows)),
                                                           max_size=int(np.prod(rows))))
                                      ).reshape(rows)))
        else:
            entries.append(("slice", 0, 1))
    kinds = {e[0] for e in entries}
    assume("int" in kinds and kinds & {"array", "tuple"})
    return entries


def _build_index(m, entries):
    parts = {"none": lambda: None, "int": lambda i: i, "slice": lambda a, b: slice(a, None, b),
             "array": lambda a: m.tensor(a), "tuple": lambda t: t}
    return tuple(parts[kind](*args) for kind, *args in entries)


@given(_mixed_index(), st.integers(0, 2**16))
def test_ints_mixed_with_index_tensors_match_torch(entries, seed):
    """torch selects ints before the index tensors (numpy would move the result dims when
    ints separate them): values and the gradient's scatter must agree."""
    x = np.random.default_rng(seed).standard_normal((3, 4, 5, 2))

    def run(m):
        t = m.tensor(x, requires_grad=True)
        out = t[_build_index(m, entries)]
        out.backward(m.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape))))
        return out.detach().numpy(), t.grad.numpy()

    (out, grad), (t_out, t_grad) = run(ref), run(torch)
    assert out.shape == t_out.shape
    np.testing.assert_array_equal(out, t_out)
    np.testing.assert_allclose(grad, t_grad, rtol=1e-12, atol=1e-12)


@given(st.sampled_from(["float32", "float64", "int16", "uint8"]),
       st.sampled_from(["int32", "uint8", "float16", "int64", "float32"]),
       st.integers(1, 3), st.integers(1, 8), st.integers(0, 2**16))
def test_view_as_dtype_matches_torch(source, target, rows, cols, seed):
    """view(dtype) reinterprets the bytes; the last dim scales by the element sizes' ratio,
    and the same error type as torch where it cannot."""
    data = (np.random.default_rng(seed).standard_normal((rows, cols)) * 100).astype(source)

    def run(m):
        try:
            out = m.tensor(data).view(getattr(m, target))
        except RuntimeError:
            return "RuntimeError"
        return tuple(out.shape), str(out.dtype), out.numpy().tobytes()

    assert run(ref) == run(torch)


@pytest.mark.parametrize("op", [
    lambda m, x: x.add_(m.ones(3), alpha=2), lambda m, x: x.sub_(1), lambda m, x: x.mul_(x),
    lambda m, x: x.div_(2), lambda m, x: x.zero_(), lambda m, x: x.fill_(4),
    lambda m, x: x.copy_(m.tensor([7.0, 8.0, 9.0])), lambda m, x: x.clamp_(0.5, 1.5),
    lambda m, x: x.addcmul_(x, x, value=0.5), lambda m, x: x.addcdiv_(x, x + 1, value=2),
    lambda m, x: x.lerp_(m.zeros(3), 0.25), lambda m, x: x.sqrt_(), lambda m, x: x.exp_(),
    lambda m, x: x.uniform_(0, 0), lambda m, x: x.normal_(1, 0),
])
def test_in_place_ops_match_torch_and_bump_version(op):
    def run(m):
        x = m.tensor([1.0, 2.0, 3.0])
        before = x._version
        out = op(m, x)
        return out is x, x.tolist(), x._version > before

    ours, theirs = run(ref), run(torch)
    assert ours[0] and ours[2] and ours[0] == theirs[0]
    assert ours[1] == pytest.approx(theirs[1])


# ----- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda m: m.ones(2, 3) + m.ones(2, 4),
    lambda m: m.ones(2, 3) * m.ones(5),
    lambda m: m.ones(2, 3) @ m.ones(4, 5),
    lambda m: m.ones(3) @ m.ones(4),
    lambda m: m.ones(3).view(2, 2),
    lambda m: m.ones(3)[5],
    lambda m: m.ones(3).sum(2),
    lambda m: m.ones(2, 3).expand(3, 3),
    lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]),
    lambda m: m.ones(2, 3).permute(0),
    lambda m: m.ones(3).item(),
    lambda m: bool(m.ones(3)),
    lambda m: m.ones(2).requires_grad_().numpy(),
    lambda m: m.ones(3, dtype=m.long).mean(),
    lambda m: m.ones(3, dtype=m.long).add_(1.5),
    lambda m: m.ones(2, 3).t().view(6),
    lambda m: m.ones(3).add_(m.ones(2, 3)),
])
def test_bad_input_gets_torchs_error_not_a_numpy_traceback(fn):
    assert_same_error(fn)


# ----- devices ------------------------------------------------------------------------------------
def _cupy_with_gpu() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.skipif(_cupy_with_gpu(), reason="a GPU is visible: the error path cannot be shown")
def test_cuda_without_cupy_or_gpu_names_what_is_missing():
    with pytest.raises(RuntimeError, match="CuPy|GPU") as info:
        ref.ones(2, device="cuda")
    assert "device='cpu'" in str(info.value)
    assert ref.cuda.is_available() is False
    with pytest.raises(RuntimeError, match="CuPy|GPU"):
        ref.ones(2).to("cuda")


@pytest.mark.skipif(not _cupy_with_gpu(), reason="needs CuPy and a visible GPU")
def test_cuda_tensors_run_on_cupy_and_backprop():
    x = ref.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    y = (x * x).sum()
    y.backward()
    assert x.device.type == "cuda" and type(x._data).__module__.startswith("cupy")
    assert x.grad.cpu().tolist() == [2.0, 4.0]
    moved = ref.tensor([1.0], requires_grad=True)
    (moved.to("cuda") * 3).sum().backward()
    assert moved.grad.tolist() == [3.0]


def test_device_objects_parse_like_torch():
    assert ref.device("cuda:1").index == torch.device("cuda:1").index
    assert str(ref.device("cuda", 0)) == str(torch.device("cuda", 0))
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        ref.device("tpu")


def test_save_and_load_round_trip(tmp_path):
    state = {"w": ref.randn(2, 3, dtype=ref.float64), "step": 3, "mask": ref.tensor([True, False])}
    path = tmp_path / "state.pt"
    ref.save(state, path)
    loaded = ref.load(path)
    assert loaded["step"] == 3 and loaded["w"].dtype == ref.float64
    assert ref.equal(loaded["w"], state["w"]) and loaded["mask"].tolist() == [True, False]
    leaf = ref.ones(2, requires_grad=True)
    ref.save(leaf, path)
    assert ref.load(path).requires_grad


def test_sort_topk_and_nonzero_match_torch():
    def run(m):
        x = m.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], requires_grad=True)
        values, indices = x.sort(1, descending=True)
        top = m.topk(x, 2)
        (values[:, 0].sum() + top.values.sum() * 2).backward()
        return (values.tolist(), indices.tolist(), top.indices.tolist(), x.grad.tolist(),
                x.nonzero().tolist(), m.argsort(x, 0).tolist())

    assert run(ref) == run(torch)


def test_deepcopy_of_leaves_keeps_grad_and_refuses_non_leaves():
    import copy

    def run(m):
        x = m.ones(2, requires_grad=True)
        (x * 2).sum().backward()
        y = copy.deepcopy(x)
        y.grad.add_(1)
        return y.requires_grad, y.grad.tolist(), x.grad.tolist()

    assert run(ref) == run(torch)
    # torch's text goes on to cite one of its pull requests; ours ends with the fix instead.
    _, text = torch_error(lambda m: copy.deepcopy(m.ones(2, requires_grad=True) * 2))
    first_sentence = text.split("  ")[0]
    with pytest.raises(RuntimeError, match=re.escape(first_sentence)) as caught:
        copy.deepcopy(ref.ones(2, requires_grad=True) * 2)
    assert ".detach()" in str(caught.value)


@pytest.mark.parametrize("edit", [
    lambda m, x: x[1:].copy_(x[:5]), lambda m, x: x.__setitem__(slice(1, None), x[:5]),
    lambda m, x: x.add_(x), lambda m, x: x[::2].add_(x[1::2]), lambda m, x: x[1:].mul_(x[:5]),
    lambda m, x: x.__setitem__(m.tensor([0, 1]), x[2:4]), lambda m, x: x[0:2].copy_(x[0:2]),
    lambda m, x: x.reshape(2, 3).t()[0].add_(x[:2]), lambda m, x: x.add_(x[0]),
])
def test_in_place_ops_refuse_partly_aliased_inputs_like_torch(edit):
    def run(m):
        x = m.arange(6.0)
        try:
            edit(m, x)
        except RuntimeError as exc:
            return str(exc)
        return x.tolist()

    assert run(ref) == run(torch)
