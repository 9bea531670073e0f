"""Complex tensors, torch.fft and stft/istft against torch: values, dtypes and the gradients
of real losses built through complex ops (torch's conjugate convention), in float64."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcheck.ref as ref

RNG = np.random.default_rng(11)


def _draw(shape, complex_values: bool) -> np.ndarray:
    values = RNG.normal(size=shape)
    return values + 1j * RNG.normal(size=shape) if complex_values else values


def _loss(lib, out):
    """A real loss that reads both parts of a complex output, and its magnitude."""
    if out.is_complex():
        parts = lib.view_as_real(out.resolve_conj())
        return (parts * parts).sum() + out.abs().sum()
    return (out * out).sum()


def _compare(torch, fn, arrays, rtol=1e-9):
    """Run ``fn`` on both libraries from the same arrays; compare outputs, dtypes and grads."""
    results = []
    for lib in (ref, torch):
        inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
        with warnings.catch_warnings():  # both warn alike; test_stft_warns_like_torch checks
            warnings.simplefilter("ignore")
            out = fn(lib, *inputs)
        _loss(lib, out).backward()
        value = out._data if lib is ref else out.detach().resolve_conj().numpy()
        grads = [t.grad._data if lib is ref else t.grad.numpy() for t in inputs]
        results.append((value, str(out.dtype), grads))
    (mine, mine_dtype, my_grads), (theirs, their_dtype, their_grads) = results
    assert mine_dtype == their_dtype
    assert mine.shape == theirs.shape
    np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=rtol)
    for a, b in zip(my_grads, their_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


# ---- torch.fft -------------------------------------------------------------------------------
ONE_DIM = {
    "fft": lambda lib, x, n, norm: lib.fft.fft(x, n=n, norm=norm),
    "ifft": lambda lib, x, n, norm: lib.fft.ifft(x, n=n, dim=0, norm=norm),
    "rfft": lambda lib, x, n, norm: lib.fft.rfft(x, n, norm=norm),
    "irfft": lambda lib, x, n, norm: lib.fft.irfft(x, n=n, norm=norm),
}
MANY_DIMS = {
    "fft2": lambda lib, x, s, norm: lib.fft.fft2(x, s=s, norm=norm),
    "ifft2": lambda lib, x, s, norm: lib.fft.ifft2(x, s, norm=norm),
    "fftn": lambda lib, x, s, norm: lib.fft.fftn(x, s=s, dim=(1, 2), norm=norm),
    "ifftn": lambda lib, x, s, norm: lib.fft.ifftn(x, s=s, dim=(0, 2), norm=norm),
    "rfft2": lambda lib, x, s, norm: lib.fft.rfft2(x, s=s, norm=norm),
    "rfftn": lambda lib, x, s, norm: lib.fft.rfftn(x, s=s, dim=(0, 2), norm=norm),
    "irfft2": lambda lib, x, s, norm: lib.fft.irfft2(x, s=s, norm=norm),
    "irfftn": lambda lib, x, s, norm: lib.fft.irfftn(x, s=s, dim=(0, 1), norm=norm),
}
NORMS = (None, "ortho", "forward")


@pytest.mark.parametrize("name,n,norm,complex_input", [
    (name, n, norm, complex_input)
    for name, n, norm, complex_input in itertools.product(ONE_DIM, (None, 3, 5, 8), NORMS,
                                                          (False, True))
    if not (name == "rfft" and complex_input)])
def test_one_dim_transforms_match_torch(real_torch, name, n, norm, complex_input):
    shape = (6, 2) if name == "ifft" else (2, 5)
    _compare(real_torch, lambda lib, x: ONE_DIM[name](lib, x, n, norm),
             [_draw(shape, complex_input)])


@pytest.mark.parametrize("name,s,norm", list(itertools.product(
    MANY_DIMS, (None, (4, 5), (2, 3), (-1, 6)), NORMS)))
def test_multi_dim_transforms_match_torch(real_torch, name, s, norm):
    complex_input = not name.startswith("rfft")
    _compare(real_torch, lambda lib, x: MANY_DIMS[name](lib, x, s, norm),
             [_draw((3, 4, 5), complex_input)])


@settings(max_examples=15, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3),
       n=st.one_of(st.none(), st.integers(1, 9)), norm=st.sampled_from(NORMS),
       name=st.sampled_from(["fft", "rfft", "irfft"]))
def test_drawn_shapes_match_torch(shape, n, norm, name):
    torch = pytest.importorskip("torch")
    if name == "irfft" and n is None and shape[-1] == 1:
        return  # the default length 2 * (1 - 1) = 0 is torch's error, tested below
    fn = {"fft": lambda lib, x: lib.fft.fft(x, n=n, norm=norm),
          "rfft": lambda lib, x: lib.fft.rfft(x, n=n, norm=norm),
          "irfft": lambda lib, x: lib.fft.irfft(x, n=n, norm=norm)}[name]
    _compare(torch, fn, [_draw(tuple(shape), name == "irfft")])


@pytest.mark.parametrize("name,fn,shape,complex_input", [
    ("fftn_all", lambda lib, x: lib.fft.fftn(x), (3, 4), True),
    ("rfftn_all", lambda lib, x: lib.fft.rfftn(x), (3, 4), False),
    ("irfftn_all", lambda lib, x: lib.fft.irfftn(x), (3, 4), True),
    ("fft_of_real", lambda lib, x: lib.fft.fft(x * 2), (2, 6), False),
    ("fftshift", lambda lib, x: lib.fft.fftshift(x), (3, 4), True),
    ("ifftshift", lambda lib, x: lib.fft.ifftshift(x, dim=1), (3, 5), False),
    ("shift_roundtrip", lambda lib, x: lib.fft.ifftshift(lib.fft.fftshift(lib.fft.fft2(x))),
     (5, 4), False),
])
def test_fft_helpers_match_torch(real_torch, name, fn, shape, complex_input):
    _compare(real_torch, fn, [_draw(shape, complex_input)])


def test_frequencies_match_torch(real_torch):
    for lib_fn, n, d in itertools.product(("fftfreq", "rfftfreq"), (1, 4, 7), (1.0, 0.25)):
        mine = getattr(ref.fft, lib_fn)(n, d)
        theirs = getattr(real_torch.fft, lib_fn)(n, d)
        assert str(mine.dtype) == str(theirs.dtype)
        np.testing.assert_allclose(mine._data, theirs.numpy(), rtol=1e-7)
    assert str(ref.fft.fftfreq(4, dtype=ref.float64).dtype) == "torch.float64"


# ---- complex arithmetic and the complex-specific ops ------------------------------------------
COMPLEX_OPS = {
    "polar": (lambda lib, x: lib.polar(x.abs() + 0.5, x * 2), False),
    "complex": (lambda lib, x: lib.complex(x, x * x), False),
    "complex_broadcast": (lambda lib, x: lib.complex(x, x[:1] * 3), False),
    "angle": (lambda lib, z: lib.angle(z * z), True),
    "abs": (lambda lib, z: (z * (1 + 2j)).abs(), True),
    "real_imag_conj": (lambda lib, z: (z * z).real * (z.conj() * 3).imag, True),
    "matmul": (lambda lib, z: z @ (z.T * (0.5 - 1j)), True),
    "div": (lambda lib, z: (z + 1) / (z * z + 2j), True),
    "exp_sum_mean": (lambda lib, z: z.exp().sum(0) * z.mean(), True),
    "pow_sqrt_log": (lambda lib, z: (z ** 3 + z.sqrt() * z.log() + 2 ** z).sum(1), True),
    "mixed_real": (lambda lib, x: (x * 1j + x) * (x - 2j) / (x + 3j), False),
    "view_as_complex": (lambda lib, x: lib.view_as_complex(x * 2) * (1 + 1j), False),
    "view_as_real": (lambda lib, z: lib.view_as_real(z) ** 3, True),
    "sgn": (lambda lib, z: z.sgn() * z, True),
    "shapes": (lambda lib, z: lib.cat([z.T.reshape(-1), z[1:, ::2].flatten()]).flip(0), True),
    "norms": (lambda lib, z: lib.stack([z.norm(), lib.norm(z, p=1), z.norm(dim=0)[1],
                                        lib.linalg.vector_norm(z, 3)]), True),
}


@pytest.mark.parametrize("name", list(COMPLEX_OPS))
def test_complex_ops_match_torch(real_torch, name):
    fn, complex_input = COMPLEX_OPS[name]
    shape = (3, 4, 2) if name == "view_as_complex" else (3, 4)
    _compare(real_torch, fn, [_draw(shape, complex_input)])


DOUBLE_BACKWARD = {
    "rfft": lambda lib, x, z: (lib.fft.rfft(x * 2, norm="ortho").abs() ** 3).sum(),
    "fft": lambda lib, x, z: (lib.fft.fft(z).abs() ** 3).sum() + (
        lib.fft.fft(x) * z).real.sum() ** 2,
    "irfft": lambda lib, x, z: (lib.fft.irfft(z * x, n=8) ** 3).sum(),
    "angle_polar": lambda lib, x, z: ((z * x).angle() ** 3).sum() + (
        lib.polar(x.abs() + 1, x) * z).imag.pow(2).sum(),
    "complex_views": lambda lib, x, z: (lib.view_as_real(z * x) ** 3).sum() + (
        lib.view_as_complex(lib.stack([x, x * x], -1)) * z).abs().pow(2).sum(),
}


@pytest.mark.parametrize("name", list(DOUBLE_BACKWARD))
def test_double_backward_matches_torch(real_torch, name):
    x_values, z_values = _draw((3, 8), False), _draw((3, 8), True)
    results = []
    for lib in (ref, real_torch):
        x = lib.tensor(x_values, requires_grad=True)
        z = lib.tensor(z_values, requires_grad=True)
        gx, gz = lib.autograd.grad(DOUBLE_BACKWARD[name](lib, x, z), (x, z), create_graph=True,
                                   allow_unused=True)
        gx = gx if gx is not None else x * 0
        gz = gz if gz is not None else z * 0
        ((gx ** 2).sum() + (gz.abs() ** 2).sum()).backward()
        results.append([t.detach() for t in (gx, gz, x.grad, z.grad)])
    for mine, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(mine._data, theirs.resolve_conj().numpy(), rtol=1e-9,
                                   atol=1e-9)


def test_in_place_edits_through_complex_views_match_torch(real_torch):
    def edit(lib, x, z):
        w = z * x
        lib.view_as_real(w)[..., 0].mul_(3)
        w.imag.add_(x)
        v = z * 2
        v.real = x * x
        return (w.abs() ** 2).sum() + (v * w).real.sum()

    results = []
    for lib in (ref, real_torch):
        x = lib.tensor(_draw((2, 3), False) if lib is ref else results[0][3], requires_grad=True)
        z = lib.tensor(_draw((2, 3), True) if lib is ref else results[0][4], requires_grad=True)
        loss = edit(lib, x, z)
        loss.backward()
        results.append([loss.item(), x.grad.detach().numpy(), z.grad.detach().numpy(),
                        x.detach().numpy(), z.detach().numpy()])
    for mine, theirs in zip(results[0][:3], results[1][:3], strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10)


def test_views_share_storage_with_their_base():
    z = ref.tensor([1 + 2j, 3 - 4j])
    ref.view_as_real(z)[1, 1] = 9.0
    z.real.mul_(10)
    assert z.tolist() == [10 + 2j, 30 + 9j]
    pairs = ref.tensor([[1.0, 2.0], [3.0, 4.0]])
    ref.view_as_complex(pairs).mul_(1j)
    assert pairs.tolist() == [[-2.0, 1.0], [-4.0, 3.0]]
    assert z.real._version == z._version


# ---- stft / istft ------------------------------------------------------------------------------
STFT_CASES = [case for case in itertools.product(
    (4, 7), (None, 3), (None, 4), (True, False), ("reflect", "constant", "circular"),
    (False, True), (None, False)) if not (case[2] and case[2] > case[0])]


@pytest.mark.parametrize("n_fft,hop,win,center,mode,normalized,onesided", STFT_CASES[::3])
def test_stft_matches_torch(real_torch, n_fft, hop, win, center, mode, normalized, onesided):
    window = np.hanning(win) + 0.1 if win else None

    def fn(lib, x, *maybe_window):
        return lib.stft(x, n_fft, hop_length=hop, win_length=win,
                        window=maybe_window[0] if maybe_window else None, center=center,
                        pad_mode=mode, normalized=normalized, onesided=onesided,
                        return_complex=True)

    arrays = [_draw((2, 17), False)] + ([window] if win else [])
    _compare(real_torch, fn, arrays, rtol=1e-8)


@pytest.mark.parametrize("n_fft,hop,center,normalized,length", [
    (4, 1, True, False, None), (8, 2, True, True, 15), (8, 2, False, False, None),
    (4, 2, False, True, 40), (8, 3, True, False, 40)])
def test_istft_inverts_stft_like_torch(real_torch, n_fft, hop, center, normalized, length):
    def fn(lib, x, window):
        spectrum = lib.stft(x, n_fft, hop_length=hop, window=window, center=center,
                            normalized=normalized, return_complex=True)
        return lib.istft(spectrum * 1.5, n_fft, hop_length=hop, window=window, center=center,
                         normalized=normalized, length=length)

    _compare(real_torch, fn, [_draw((2, 30), False), np.hanning(n_fft) + 0.1], rtol=1e-8)


def test_complex_and_two_sided_stft_match_torch(real_torch):
    window = np.hanning(8) + 0.1

    def complex_signal(lib, z, w):
        spectrum = lib.stft(z, 8, hop_length=2, window=w, return_complex=True)
        return lib.istft(spectrum, 8, hop_length=2, window=w, return_complex=True)

    def two_sided(lib, x, w):
        spectrum = lib.stft(x, 8, hop_length=2, window=w, onesided=False, return_complex=True)
        return lib.istft(spectrum, 8, hop_length=2, window=w, onesided=False)

    _compare(real_torch, complex_signal, [_draw(30, True), window], rtol=1e-8)
    _compare(real_torch, two_sided, [_draw(30, False), window], rtol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _compare(real_torch, lambda lib, x: lib.stft(x, 6, return_complex=False),
                 [_draw(30, False)], rtol=1e-8)


def test_stft_and_istft_warn_with_torchs_text():
    # torch gives these warnings once per process (TORCH_WARN_ONCE), so only their text is
    # checked here, copied from torch 2.13
    for lib in (ref,):
        with pytest.warns(UserWarning, match="A window was not provided"):
            lib.stft(lib.ones(8), 4, return_complex=True)
        spectrum = lib.stft(lib.ones(8), 4, window=lib.ones(4), return_complex=True)
        with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
            lib.stft(lib.ones(8), 4, window=lib.ones(4), return_complex=False)
        with pytest.warns(UserWarning, match="padded with zeros in the tail"):
            assert lib.istft(spectrum, 4, window=lib.ones(4), length=12).shape == (12,)


# ---- dtypes, printing, errors ------------------------------------------------------------------
def test_promotion_and_printing_match_torch(real_torch):
    def make(lib):
        z = lib.tensor([1 + 2j, -3 + 0.5j, 0j])
        x = lib.tensor([1.0, -2.0, 3.0])
        return [z, z * 2, x * 1j, lib.tensor([1, 2]) * 1j, x.double() * 1j, z + x.double(),
                lib.zeros(2, dtype=lib.cfloat), x.to(lib.complex128), z.abs(), z.angle(),
                lib.tensor(1.5 - 2j), lib.tensor([[1e6 + 1j, 1e-5 - 3j]]),
                lib.tensor([float("nan") + 1j, 0j]), lib.view_as_real(z),
                lib.complex(x, x), lib.tensor([1j], requires_grad=True) * 2]

    for mine, theirs in zip(make(ref), make(real_torch), strict=True):
        assert repr(mine) == repr(theirs)
    assert ref.promote_types(ref.complex64, ref.float64) == ref.complex128
    assert ref.ones(2, dtype=ref.complex64).is_complex() and not ref.ones(2).is_complex()
    assert ref.finfo(ref.complex128).eps == real_torch.finfo(real_torch.complex128).eps


def test_unsupported_uses_raise_clear_errors():
    z = ref.tensor([1 + 2j, 3 - 1j])
    for call, match in [
        (lambda: z.sigmoid(), "Sigmoid is not supported on complex tensors"),
        (lambda: ref.relu(z), "Relu is not supported on complex tensors"),
        (lambda: z < 1, "complex numbers have no order"),
        (lambda: ref.fft.hfft(z), "fft.hfft is not available"),
        (lambda: z.argmax(), "argmax does not support complex"),
        (lambda: ref.sort(z), "sort does not support complex"),
        (lambda: ref.fft.fft(z, norm="half"), "Invalid normalization mode: 'half'"),
        (lambda: ref.fft.fft(z, out=z), r"fft\(out=...\) is not supported"),
        (lambda: ref.fft.rfft(z), "rfft expects a real input tensor"),
        (lambda: ref.fft.irfft(z, n=0), r"invalid number of data points \(0\)"),
        (lambda: ref.fft.irfft(ref.tensor([1j])), r"invalid number of data points \(0\)"),
        (lambda: ref.fft.fft(ref.ones(3, dtype=ref.float16)), "numpy has no complex32"),
        (lambda: ref.stft(ref.ones(8), 4), "requires the return_complex parameter"),
        (lambda: ref.stft(ref.ones(8), 20, center=False, return_complex=True),
         "expected 0 < n_fft <= 8"),
        (lambda: ref.stft(z, 2, 1, onesided=True, return_complex=True),
         "Cannot have onesided"),
        (lambda: ref.istft(ref.stft(ref.ones(10), 4, return_complex=True), 4,
                           window=ref.zeros(4)), "window overlap add min"),
        (lambda: ref.view_as_complex(ref.ones(2, 3)), "last dimension of size 2"),
        (lambda: ref.view_as_complex(ref.ones(2, 2).T), "last dimension with stride 1"),
        (lambda: ref.view_as_real(ref.ones(2)), "only supported for complex tensors"),
        (lambda: ref.complex(ref.ones(2), ref.ones(2, dtype=ref.float64)),
         "float32 or float64 tensors of one dtype"),
        (lambda: ref.ones(2).imag, "imag is not implemented for tensors with non-complex"),
    ]:
        with pytest.raises((RuntimeError, NotImplementedError), match=match):
            call()


def test_rfft_gradient_matches_central_differences(finite_diff):
    """Without torch: the Hermitian bookkeeping of rfft/irfft against finite differences."""
    x_values = RNG.normal(size=7)
    weights = RNG.normal(size=(4, 2))

    def loss_of(values):
        spectrum = np.fft.rfft(values, n=6)
        return float((np.stack([spectrum.real, spectrum.imag], -1) * weights).sum()
                     + (np.fft.irfft(spectrum, n=6) ** 3).sum())

    x = ref.tensor(x_values, requires_grad=True)
    spectrum = ref.fft.rfft(x, n=6)
    loss = (ref.view_as_real(spectrum) * ref.tensor(weights)).sum() + (
        ref.fft.irfft(spectrum, n=6) ** 3).sum()
    loss.backward()
    (expected,) = finite_diff(lambda v: loss_of(v), [x_values], 1.0)
    np.testing.assert_allclose(x.grad._data, expected, rtol=1e-6, atol=1e-7)


def test_complex_random_draws_follow_torchs_laws():
    """torch draws both parts: randn each N(0, 1/2), rand each U[0, 1), normal_(m, s) each
    N(m, s^2 / 2); a draw with a zero imaginary part would be silently wrong."""
    ref.manual_seed(0)
    z = ref.randn(40000, dtype=ref.cfloat)
    assert z.dtype == ref.complex64
    assert abs(float((z.abs() ** 2).mean()) - 1) < 0.03
    assert abs(float(z.imag.std()) - 0.5 ** 0.5) < 0.02
    u = ref.rand(40000, dtype=ref.cdouble)
    assert 0 <= float(u.imag.min()) and float(u.imag.max()) < 1
    assert abs(float(u.imag.mean()) - 0.5) < 0.02
    n = ref.empty(40000, dtype=ref.cfloat).normal_(1.0, 2.0)
    assert abs(float(n.imag.mean()) - 1) < 0.05 and abs(float(n.imag.std()) - 2 ** 0.5) < 0.05


def _rotary(lib, xq, xk, dim: int, end: int, theta: float = 10000.0):
    """LLaMA's rotary embedding as its repositories write it (float32, complex64 views)."""
    freqs = 1.0 / (theta ** (lib.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    freqs = lib.outer(lib.arange(end, device=freqs.device), freqs).float()
    freqs_cis = lib.polar(lib.ones_like(freqs), freqs)
    xq_ = lib.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = lib.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    shape = [d if i in (1, xq_.ndim - 1) else 1 for i, d in enumerate(xq_.shape)]
    rotation = freqs_cis[: xq.shape[1]].view(*shape)
    return (lib.view_as_real(xq_ * rotation).flatten(3).type_as(xq),
            lib.view_as_real(xk_ * rotation).flatten(3).type_as(xk))


def test_rotary_embedding_in_float32_matches_torch(real_torch):
    q, k = (RNG.normal(size=(2, 5, 3, 8)).astype(np.float32) for _ in range(2))
    results = []
    for lib in (ref, real_torch):
        xq, xk = lib.tensor(q, requires_grad=True), lib.tensor(k, requires_grad=True)
        out_q, out_k = _rotary(lib, xq, xk, 8, 16)
        ((out_q * out_k).sum() + (out_q ** 2).mean()).backward()
        results.append([str(out_q.dtype), out_q.detach().numpy(), xq.grad.numpy(),
                        xk.grad.numpy()])
    assert results[0][0] == results[1][0] == "torch.float32"
    for mine, theirs in zip(results[0][1:], results[1][1:], strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-5)
    x32 = ref.randn(8)
    assert [str(t.dtype) for t in (ref.fft.rfft(x32), ref.fft.irfft(ref.fft.rfft(x32)))] == [
        "torch.complex64", "torch.float32"]


def test_complex_tensors_in_torch_checkpoints_load(real_torch, tmp_path):
    path = tmp_path / "complex.pt"
    real_torch.save({"freqs_cis": real_torch.tensor([1 + 2j, 3 - 4j]),
                     "double": real_torch.tensor([0.5j], dtype=real_torch.complex128)}, path)
    loaded = ref.load(path)
    assert repr(loaded["freqs_cis"]) == "tensor([1.+2.j, 3.-4.j])"
    assert loaded["double"].dtype == ref.complex128 and loaded["double"].tolist() == [0.5j]


OPTIMIZERS = {"SGD": {"momentum": 0.9, "nesterov": True}, "Adam": {"amsgrad": True},
              "AdamW": {}, "RMSprop": {"centered": True, "momentum": 0.5}, "Adagrad": {},
              "Adadelta": {}, "NAdam": {}, "RAdam": {}, "Rprop": {}, "Adamax": {}, "ASGD": {}}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizers_update_complex_parameters_like_torch(real_torch, name):
    """A spectral layer as FEDformer writes it (a complex Parameter mixing rfft modes, set into
    a complex zeros tensor, irfft back); torch updates complex parameters per real part."""
    weights = _draw((2, 3, 3), True) / 4
    signal = RNG.normal(size=(4, 2, 10))
    results = []
    for lib in (ref, real_torch):
        w = lib.nn.Parameter(lib.tensor(weights))
        optimizer = getattr(lib.optim, name)([w], lr=0.01, **OPTIMIZERS[name])
        losses = []
        for _ in range(3):
            optimizer.zero_grad()
            spectrum = lib.fft.rfft(lib.tensor(signal), dim=-1)
            mixed = lib.zeros(4, 3, 6, dtype=lib.complex128)
            mixed[:, :, :3] = lib.einsum("bix,iox->box", spectrum[:, :, :3], w)
            loss = (lib.fft.irfft(mixed, n=10) ** 2).mean()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        moments = {key: (str(value.dtype), tuple(value.shape))
                   for key, value in optimizer.state[w].items() if value is not None}
        results.append((losses, w.detach().numpy(), moments))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-10)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-9, atol=1e-12)
    assert results[0][2] == results[1][2]


def test_complex_arrays_from_numpy_turn_the_checks_on_in_a_fresh_process():
    """The dispatcher checks ops for complex inputs only once a complex dtype was seen; a
    complex numpy array handed to torch.tensor must count as seen."""
    import subprocess
    import sys

    program = ("import numpy as np, gradcheck.ref as torch\n"
               "z = torch.tensor(np.array([1 + 1j]))\n"
               "try:\n    torch.relu(z)\nexcept NotImplementedError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, check=True)
    assert "Relu is not supported on complex tensors" in done.stdout
