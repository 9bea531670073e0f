"""``InstanceNorm1d/2d/3d`` (each sample and channel normalised over its own spatial dims),
``SyncBatchNorm`` (batch norm whose statistics would span processes; with one process it is
batch norm), and ``LocalResponseNorm``.

Example:
    >>> import gradcheck.ref as torch
    >>> y = InstanceNorm1d(2)(torch.tensor([[[1.0, 3.0], [2.0, 2.0]]]))
    >>> [round(v, 4) for v in y[0, 0].tolist()]
    [-1.0, 1.0]
"""
from __future__ import annotations

from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.nn.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.normalization import channel_affine

Tensor = Any


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) over the spatial dims; running statistics, when given,
    average the per-instance statistics over the batch, as torch does."""
    dims = tuple(range(2, input.dim()))
    if use_input_stats:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, keepdim=True, unbiased=False)
        if running_mean is not None:
            count = input.numel() // (input.shape[0] * input.shape[1])
            with torch.no_grad():
                running_mean.mul_(1 - momentum).add_(mean.mean(0).reshape(-1) * momentum)
                unbiased = var.mean(0).reshape(-1) * (count / max(count - 1, 1))
                running_var.mul_(1 - momentum).add_(unbiased * momentum)
        out = (input - mean) * (var + eps).rsqrt()
    else:
        shape = (1, -1) + (1,) * (input.dim() - 2)
        out = (input - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
    return channel_affine(out, weight, bias)


class _InstanceNorm(_BatchNorm):
    _spatial = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        batched = self._spatial + 2
        if input.dim() not in (batched - 1, batched):
            raise ValueError(f"expected {batched - 1}D or {batched}D input (got {input.dim()}D "
                             "input)")
        if input.dim() == batched - 1:
            return self.forward(input.unsqueeze(0)).squeeze(0)
        use_stats = self.training or not self.track_running_stats
        return instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                             use_stats, 0.1 if self.momentum is None else self.momentum,
                             self.eps)


class InstanceNorm1d(_InstanceNorm):
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    _spatial = 3


class SyncBatchNorm(_BatchNorm):
    """Batch norm over inputs of any rank; statistics are this process's (world size 1)."""

    _dims = (2, 3, 4, 5)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """Replace every BatchNorm*d in ``module`` by a SyncBatchNorm with the same state."""
        if isinstance(module, (BatchNorm1d, BatchNorm2d, BatchNorm3d)):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            if module.affine:
                with torch.no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.train(module.training)
            return converted
        for name, child in module.named_children():
            module.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return module


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta (torch's
    padding: size // 2 before, (size - 1) // 2 after)."""
    squared = (input * input).unsqueeze(1)
    pad = [0, 0] * (input.dim() - 2) + [size // 2, (size - 1) // 2]
    squared = torch.nn.functional.pad(squared, pad)
    window = squared.unfold(2, size, 1).mean(-1).squeeze(1)
    return input / (window * alpha + k) ** beta


class LocalResponseNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)
