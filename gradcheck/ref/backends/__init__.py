"""``torch.backends``: the switches scripts flip at the top (``cudnn.benchmark = True``, ...).
They have no effect on a numpy engine; ``import torch.backends.cudnn`` works as in torch.

>>> from gradcheck.ref.backends import cudnn
>>> cudnn.is_available()
False
"""
from types import SimpleNamespace

from gradcheck.ref.backends import cudnn  # noqa: F401

mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                                              allow_bf16_reduced_precision_reduction=True),
                       is_built=lambda: False)
mkldnn = SimpleNamespace(is_available=lambda: False, enabled=False)
openmp = SimpleNamespace(is_available=lambda: False)
