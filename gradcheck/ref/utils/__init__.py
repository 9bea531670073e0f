"""`gradcheck.ref.utils`: the torch.utils subset the reference engine provides."""
from gradcheck.ref.utils import _pytree, checkpoint, collect_env, cpp_extension, data  # noqa: F401
from gradcheck.ref.utils import benchmark, hooks, tensorboard  # noqa: F401
from gradcheck.ref.utils import _import_utils  # noqa: F401

__all__ = ["checkpoint", "data", "model_zoo"]


def swap_tensors(t1, t2) -> None:
    """Swap everything two tensors are (data, grad, graph, version counter, attributes, class),
    in place, as torch's ``swap_tensors``."""
    from gradcheck.ref.tensors import Tensor

    if not (isinstance(t1, Tensor) and isinstance(t2, Tensor)):
        raise RuntimeError(f"Expected t1 and t2 to be Tensors, but got {type(t1).__name__} "
                           f"and {type(t2).__name__}")
    names = [n for n in Tensor.__slots__ if n not in ("__weakref__", "__dict__")]
    for name in names:
        first, second = getattr(t1, name, None), getattr(t2, name, None)
        object.__setattr__(t1, name, second)
        object.__setattr__(t2, name, first)
    first, second = dict(t1.__dict__), dict(t2.__dict__)
    t1.__dict__.clear(), t1.__dict__.update(second)
    t2.__dict__.clear(), t2.__dict__.update(first)
    if type(t1) is not type(t2):
        t1.__class__, t2.__class__ = type(t2), type(t1)


def __getattr__(name: str):
    # model_zoo reads the hub, which needs the whole engine: imported on first use
    if name == "model_zoo":
        import importlib

        return importlib.import_module("gradcheck.ref.utils.model_zoo")
    raise AttributeError(f"module 'torch.utils' has no attribute '{name}'")
