"""Which autodiff framework a module's gradient code belongs to.

The rules know PyTorch's semantics: `.grad` accumulates across `backward()` until a reset.
Other frameworks spell their code alike and mean something else: NVIDIA Warp's
`tape.backward(loss)` fills a tape that `tape.zero()` clears, JAX and TensorFlow return
gradients instead of accumulating them. A module that imports one of those and nothing of
PyTorch's is another framework's code, so the analysis says nothing about it (unknown means
benign), rather than reading its calls with PyTorch's meaning.
"""
from __future__ import annotations

import ast

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


def another_frameworks_code(tree: ast.Module) -> bool:
    """Whether ``tree`` imports another autodiff framework and nothing with PyTorch's
    gradient semantics."""
    imported = _imported_packages(tree)
    return not imported.isdisjoint(OTHER_FRAMEWORKS) and imported.isdisjoint(PYTORCH_FAMILY)


def _imported_packages(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if type(node) is ast.Import:
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif type(node) is ast.ImportFrom and not node.level and node.module:
            found.add(node.module.partition(".")[0])
    return found
