"""``torch.version``: what this build is. The engine has no CUDA or ROCm toolkit behind it
(CuPy is found at run time), so ``cuda`` and ``hip`` are None, as on a CPU build.

>>> from gradcheck.ref import version
>>> version.cuda is None, version.__version__.startswith("2.")
(True, True)
"""
__version__ = "2.13.0+gradcheck.ref"
cuda = None
hip = None
debug = False
git_version = "unknown"
