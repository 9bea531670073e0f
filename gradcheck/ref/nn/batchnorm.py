"""Batch normalisation: ``batch_norm`` and ``BatchNorm1d/2d``, with torch's running statistics.

In training the batch mean and biased variance normalise the input, and the running mean and
the *unbiased* variance are blended in with ``momentum`` (a cumulative average when momentum
is None). In eval the running statistics are used. The statistics update runs under no_grad,
as in torch, so it never enters the graph.

Example:
    >>> import gradcheck.ref as torch
    >>> bn = BatchNorm1d(2)
    >>> y = bn(torch.tensor([[1.0, 2.0], [3.0, 6.0]]))
    >>> [round(v, 3) for v in bn.running_mean.tolist()]
    [0.2, 0.4]
"""
from __future__ import annotations

from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import apply
from gradcheck.ref.fused import FUSED, batch_stats, on_numpy
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.normalization import channel_affine
from gradcheck.ref.nn.parameter import Parameter
from gradcheck.ref.tensors import _make

Tensor = Any


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) over the batch and spatial dims."""
    dims = (0,) + tuple(range(2, input.dim()))
    shape = (1, -1) + (1,) * (input.dim() - 2)
    if training:
        count = input.numel() // input.shape[1]
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
        params = tuple(p for p in (weight, bias) if p is not None)
        fused = on_numpy(input, *params)
        with torch.no_grad():  # the statistics are constants to the fused row's rule
            if fused:
                mean, var = (_make(a) for a in batch_stats(input._data, dims))
            else:
                mean = input.mean(dims, keepdim=True)
                var = input.var(dims, keepdim=True, unbiased=False)
            if running_mean is not None and fused and on_numpy(running_mean, running_var):
                _blend(running_mean, mean._data.reshape(-1) * momentum, momentum)
                _blend(running_var, var._data.reshape(-1) * (momentum * count / (count - 1)),
                       momentum)
            elif running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.reshape(-1) * momentum)
                running_var.mul_(1 - momentum).add_(var.reshape(-1) * (momentum * count /
                                                                       (count - 1)))
        if fused:  # one node with the affine, numpy forward and backward (fused.py)
            return apply(FUSED["batch_norm"], input, *params, dims=dims, eps=eps,
                         affine=(weight is not None, bias is not None), mean=mean._data,
                         var=var._data, aux=[], unchecked=(len(params),) if bias is not None
                         else ())
        # one node (torch's NativeBatchNormBackward0) instead of a dozen elementwise ones
        out = apply(TABLE["batch_norm"], input, mean, var, dims=dims, eps=eps)
    else:
        out = (input - running_mean.reshape(shape)) * (running_var + eps).rsqrt().reshape(shape)
    return channel_affine(out, weight, bias)


def _blend(running: Tensor, scaled_new, momentum: float) -> None:
    """``running.mul_(1 - momentum).add_(scaled_new)`` on the arrays (the same two steps)."""
    data = running._data
    data *= 1 - momentum
    data += scaled_new.astype(data.dtype, copy=False)
    running._vc[0] += 2


class _BatchNorm(Module):
    _dims: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(torch.ones(num_features, dtype=dtype, device=device))
            self.bias = Parameter(torch.zeros(num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", torch.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", torch.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in self._dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._dims)} input (got "
                             f"{input.dim()}D input)")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or self.running_mean is None
        return batch_norm(input, self.running_mean if not self.training or
                          self.track_running_stats else None,
                          self.running_var if not self.training or self.track_running_stats
                          else None, self.weight, self.bias, use_batch, momentum, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


def _batchnorm_load_from_state_dict(self: _BatchNorm, state_dict: dict, prefix: str,
                                    local_metadata: dict, *args: Any) -> None:
    """Checkpoints of torch before version 2 of the batch norms lack ``num_batches_tracked``:
    torch fills in the module's current count (0 for a new one), and so does the engine."""
    version = local_metadata.get("version", None)
    key = prefix + "num_batches_tracked"
    if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
        state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                           else torch.tensor(0, dtype=torch.long))
    Module._load_from_state_dict(self, state_dict, prefix, local_metadata, *args)


_BatchNorm._load_from_state_dict = _batchnorm_load_from_state_dict


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) inputs."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) inputs.

    Example:
        >>> import gradcheck.ref as torch
        >>> BatchNorm2d(3)(torch.randn(2, 3, 4, 4)).shape
        torch.Size([2, 3, 4, 4])
    """

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) inputs."""

    _dims = (5,)
