"""``torch.utils.cpp_extension``: building C++/CUDA extensions against torch's headers is not
possible for a numpy engine; the builders raise NotImplementedError naming themselves. The
toolkit locations answer as on a machine without CUDA or ROCm.

>>> from gradcheck.ref.utils import cpp_extension
>>> cpp_extension.CUDA_HOME is None
True
"""
from __future__ import annotations

from gradcheck.ref.standins import module_fallback, unsupported

_WHY = "C++/CUDA extensions compile against torch itself; use PyTorch to build them"
__getattr__ = module_fallback("torch.utils.cpp_extension", _WHY)
CUDA_HOME = None
ROCM_HOME = None
BuildExtension = unsupported("torch.utils.cpp_extension.BuildExtension", _WHY)
CppExtension = unsupported("torch.utils.cpp_extension.CppExtension", _WHY)
CUDAExtension = unsupported("torch.utils.cpp_extension.CUDAExtension", _WHY)
load = unsupported("torch.utils.cpp_extension.load", _WHY)
load_inline = unsupported("torch.utils.cpp_extension.load_inline", _WHY)
include_paths = unsupported("torch.utils.cpp_extension.include_paths", _WHY)
