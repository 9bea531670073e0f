"""The short-time Fourier transform (torch.stft) and its inverse (torch.istft).

Both are composed of recorded ops (padding, one gather of every frame, the window product,
the transforms of ``fft``, one scatter-add for the overlap-add), so their gradients are the
ones torch computes, with no rule of their own.
"""
from __future__ import annotations

import warnings

import numpy as np

from gradcheck.ref import fft
from gradcheck.ref.complex_numbers import view_as_real
from gradcheck.ref.shapes import index_backward
from gradcheck.ref.tensors import Tensor, _make


def _window(window, n_fft: int, win_length: int, like: Tensor, call: str) -> Tensor:
    """The window zero-padded on both sides to n_fft (ones when none is given)."""
    if window is None:
        if call == "stft":
            warnings.warn("A window was not provided. A rectangular window will be applied,which "
                          "is known to cause spectral leakage. Other windows such as "
                          "torch.hann_window or torch.hamming_window are recommended to reduce "
                          "spectral leakage.To suppress this warning and use a rectangular "
                          "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.",
                          UserWarning, stacklevel=3)
        window = _make(np.ones(win_length, dtype=like._data.real.dtype))
    elif window._data.ndim != 1 or window._data.shape[0] != win_length:
        raise RuntimeError(f"{call}: expected a 1D window tensor of size equal to win_length="
                           f"{win_length}, but got window with size {list(window.shape)}")
    from gradcheck.ref.nn.padding import pad

    left = (n_fft - win_length) // 2
    right = n_fft - win_length - left
    return pad(window, (left, right)) if left or right else window


def _frame_index(length: int, n_fft: int, hop: int) -> np.ndarray:
    starts = np.arange(0, length - n_fft + 1, hop)
    return starts[:, None] + np.arange(n_fft)  # (frames, n_fft): one row per frame


def _lengths(call: str, n_fft: int, hop_length, win_length, length: int | None):
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if length is not None and not 0 < n_fft <= length:
        raise RuntimeError(f"{call}: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{call}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{call}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


def stft(input: Tensor, n_fft: int, hop_length: int | None = None,  # noqa: A002
         win_length: int | None = None, window: Tensor | None = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """torch.stft: the spectrum of each windowed frame, shape (batch?, freq, frames).

    >>> import gradcheck.ref as torch
    >>> torch.stft(torch.ones(8), 4, return_complex=True).shape
    torch.Size([3, 9])
    """
    complex_input = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None and not complex_input:
        raise RuntimeError("stft requires the return_complex parameter be given for real "
                           "inputs, and will further require that return_complex=True in a "
                           "future PyTorch release.")
    if align_to_window:
        raise NotImplementedError("torch.stft(align_to_window=True) is not supported in "
                                  "gradcheck.ref; leave it unset")
    if input._data.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input._data.ndim}D")
    signal = input if input._data.ndim == 2 else input.unsqueeze(0)
    if center:
        from gradcheck.ref.nn.padding import pad

        signal = pad(signal.unsqueeze(0), (n_fft // 2, n_fft // 2), pad_mode).squeeze(0)
    hop, win = _lengths("stft", n_fft, hop_length, win_length, signal._data.shape[-1])
    frames = signal[:, _make(_frame_index(signal._data.shape[-1], n_fft, hop))]
    frames = frames * _window(window, n_fft, win, signal, "stft")
    onesided = not complex_input if onesided is None else onesided
    if onesided and complex_input:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spectrum = fft.rfft(frames, norm=norm) if onesided else fft.fft(frames, norm=norm)
    spectrum = spectrum.transpose(1, 2)
    if input._data.ndim == 1:
        spectrum = spectrum.squeeze(0)
    if return_complex is False:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=2)
        return view_as_real(spectrum)
    return spectrum


def _overlap_add(frames: Tensor, index: np.ndarray, length: int) -> Tensor:
    """Sum the frames (batch, frames, n_fft) back into signals (batch, length)."""
    batch = frames._data.shape[0]
    rows = np.arange(batch)[:, None, None]
    return index_backward(frames, (batch, length), (rows, index[None]))


def istft(input: Tensor, n_fft: int, hop_length: int | None = None,  # noqa: A002
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """torch.istft: overlap-add of the inverse transforms, divided by the window envelope."""
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    call = "istft"
    hop, win = _lengths(call, n_fft, hop_length, win_length, None)
    spectra = input if input._data.ndim == 3 else input.unsqueeze(0)
    bins, count = spectra._data.shape[1], spectra._data.shape[2]
    onesided = bins != n_fft if onesided is None else onesided
    if onesided and bins != n_fft // 2 + 1:
        raise RuntimeError(f"{call}: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{bins}")
    if not onesided and bins != n_fft:
        raise RuntimeError(f"{call}: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got {bins}")
    norm = "ortho" if normalized else "backward"
    spectra = spectra.transpose(1, 2)
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = fft.ifft(spectra, norm=norm)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        frames = fft.irfft(spectra[..., :n_fft // 2 + 1], n=n_fft, norm=norm)
    window = _window(window, n_fft, win, frames, call)
    total = n_fft + hop * (count - 1)
    index = _frame_index(total, n_fft, hop)
    signal = _overlap_add(frames * window, index, total)
    # the envelope is recorded too: torch's gradient reaches the window through it
    envelope = _overlap_add((window * window).expand(1, count, n_fft), index, total)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    envelope = envelope[:, start:min(end, total)]
    smallest = np.abs(envelope._data).min() if envelope._data.size else 1.0
    if smallest < 1e-11:
        raise RuntimeError(f"{call}: window overlap add min: {smallest:g} (the window's "
                           "squares must overlap everywhere; use a smaller hop_length or a "
                           "window without zeros)")
    signal = signal[:, start:min(end, total)] / envelope
    if end > total:  # a longer ``length`` than the frames cover is padded with zeros
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        signal = fft.fit(signal, (1,), (end - start,))
    return signal.squeeze(0) if input._data.ndim == 2 else signal
