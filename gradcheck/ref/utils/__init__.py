"""`gradcheck.ref.utils`: the torch.utils subset the reference engine provides."""
from gradcheck.ref.utils import _pytree, checkpoint, collect_env, cpp_extension, data  # noqa: F401
from gradcheck.ref.utils import benchmark, hooks, tensorboard  # noqa: F401

__all__ = ["checkpoint", "data", "model_zoo"]


def __getattr__(name: str):
    # model_zoo reads the hub, which needs the whole engine: imported on first use
    if name == "model_zoo":
        import importlib

        return importlib.import_module("gradcheck.ref.utils.model_zoo")
    raise AttributeError(f"module 'torch.utils' has no attribute '{name}'")
