"""Which autodiff framework a module's gradient code belongs to.

The rules know PyTorch's semantics: `.grad` accumulates across `backward()` until a reset.
Other frameworks spell their code alike and mean something else: NVIDIA Warp's
`tape.backward(loss)` fills a tape that `tape.zero()` clears, JAX and TensorFlow return
gradients instead of accumulating them. A module that imports one of those and nothing of
PyTorch's is another framework's code, so the analysis says nothing about it (unknown means
benign), rather than reading its calls with PyTorch's meaning.
"""
from __future__ import annotations

from collections.abc import Iterable

# top-level packages of autodiff frameworks whose gradients are not PyTorch's
OTHER_FRAMEWORKS = frozenset({
    "warp", "warp_nn", "jax", "flax", "optax", "tensorflow", "keras", "paddle", "mindspore",
    "mxnet", "oneflow", "jittor", "mlx", "chainer",
})
# packages whose use makes a module code with PyTorch's gradient semantics, whatever else
# it imports (tinygrad's `.grad` accumulates across `backward()` the same way)
PYTORCH_FAMILY = frozenset({
    "torch", "torchvision", "torchaudio", "torchtext", "lightning", "pytorch_lightning",
    "accelerate", "deepspeed", "transformers", "timm", "fairseq", "apex", "tinygrad",
})


def another_frameworks_code(modules: Iterable[str]) -> bool:
    """Whether a module importing ``modules`` (dotted names, absolute imports only) imports
    another autodiff framework and nothing with PyTorch's gradient semantics."""
    packages = {module.partition(".")[0] for module in modules}
    return not packages.isdisjoint(OTHER_FRAMEWORKS) and packages.isdisjoint(PYTORCH_FAMILY)
