"""``torch.backends``: the switches scripts flip at the top (``cudnn.benchmark = True``,
``cuda.matmul.allow_tf32 = True``, ``opt_einsum.enabled``). They answer as a CPU build of torch
does and change nothing on a numpy engine; ``import torch.backends.cudnn`` works as in torch.

>>> import gradcheck.ref as torch
>>> torch.backends.cudnn.is_available(), torch.backends.mps.is_available()
(False, False)
>>> with torch.backends.cuda.sdp_kernel(enable_flash=False):
...     torch.backends.cuda.flash_sdp_enabled()
False
"""
import contextlib
from types import SimpleNamespace

from gradcheck.ref.backends import cuda, cudnn  # noqa: F401


def _unavailable():
    return False


def _no_mps(*args, **kwargs):
    raise RuntimeError("Cannot execute isOnMacOSorNewer() without MPS backend.")


mps = SimpleNamespace(is_available=_unavailable, is_built=_unavailable,
                      is_macos13_or_newer=_unavailable, is_macos_or_newer=_no_mps)
mkldnn = SimpleNamespace(is_available=_unavailable, enabled=False, flags=contextlib.nullcontext)
mkl = SimpleNamespace(is_available=_unavailable)
openmp = SimpleNamespace(is_available=_unavailable)
nnpack = SimpleNamespace(is_available=_unavailable, flags=contextlib.nullcontext,
                         set_flags=lambda *args, **kwargs: None)
opt_einsum = SimpleNamespace(is_available=lambda: True, enabled=True, strategy="auto")
cpu = SimpleNamespace(get_cpu_capability=lambda: "DEFAULT")
mha = SimpleNamespace(get_fastpath_enabled=lambda: True, set_fastpath_enabled=lambda v: None)
quantized = SimpleNamespace(engine="none", supported_engines=["none"])
