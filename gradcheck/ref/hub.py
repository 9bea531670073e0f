"""``torch.hub``: download checkpoints into the hub cache and load them (torch's zip format is
read by ``gradcheck.ref.load``), and load models from a local hub repository's
``hubconf.py``. The cache is torch's: ``$TORCH_HOME/hub`` (default ``~/.cache/torch/hub``),
so weights torch already downloaded are found without a network.

Loading from GitHub (``source="github"``) would have to import a repository written for
torch; it raises NotImplementedError naming the call, with the local alternative.

>>> import os
>>> get_dir().endswith(os.path.join("torch", "hub"))
True
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.request
from typing import Any
from urllib.parse import urlparse  # noqa: F401  (torch.hub.urlparse)

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_hub_dir: list = []


def _get_torch_home() -> str:
    """``$TORCH_HOME``, else ``$XDG_CACHE_HOME/torch`` (default ``~/.cache/torch``)."""
    return os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(
        os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")))


def get_dir() -> str:
    if _hub_dir:
        return _hub_dir[0]
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d: str) -> None:
    _hub_dir[:] = [os.path.expanduser(d)]


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Download ``url`` to ``dst`` (through a temporary file), checking the SHA256 prefix."""
    digest = hashlib.sha256()
    folder = os.path.dirname(os.path.abspath(dst))
    with tempfile.NamedTemporaryFile(delete=False, dir=folder) as tmp:
        with urllib.request.urlopen(url) as response:  # noqa: S310 - torch does the same
            while chunk := response.read(1 << 16):
                tmp.write(chunk)
                digest.update(chunk)
    if hash_prefix is not None and not digest.hexdigest().startswith(hash_prefix):
        os.remove(tmp.name)
        raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                           f'"{digest.hexdigest()}")')
    shutil.move(tmp.name, dst)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None, weights_only: bool = False) -> Any:
    """The checkpoint at ``url``, from the hub cache (downloaded into it when missing)."""
    from gradcheck.ref.serialization import load

    model_dir = model_dir or os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        sys.stderr.write(f'Downloading: "{url}" to {cached}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress)
    return load(cached, map_location=map_location)


def _hubconf(repo_or_dir: str, source: str):
    if source != "local":
        raise NotImplementedError(
            f"torch.hub.load('{repo_or_dir}', source='{source}') is not available in "
            "gradcheck.ref: clone the repository and pass its folder with source='local'")
    spec = importlib.util.spec_from_file_location("hubconf", os.path.join(repo_or_dir,
                                                                          "hubconf.py"))
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, repo_or_dir)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_or_dir)
    return module


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github",
         trust_repo: Any = None, force_reload: bool = False, verbose: bool = True,
         skip_validation: bool = False, **kwargs: Any) -> Any:
    """Call the entry point ``model`` of the repository's ``hubconf.py``."""
    return getattr(_hubconf(repo_or_dir, source), model)(*args, **kwargs)


def list(github: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo: Any = None, verbose: bool = True, source: str = "github") -> Any:
    module = _hubconf(github, source)
    return [name for name in dir(module) if callable(getattr(module, name))
            and not name.startswith("_")]


def help(github: str, model: str, force_reload: bool = False,  # noqa: A001
         skip_validation: bool = False, trust_repo: Any = None, source: str = "github") -> str:
    return getattr(_hubconf(github, source), model).__doc__
