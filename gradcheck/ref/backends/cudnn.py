"""``torch.backends.cudnn``: flags that scripts set; there is no cuDNN here."""
import contextlib

deterministic = False
benchmark = False
enabled = True
allow_tf32 = True


def is_available() -> bool:
    return False


def version() -> None:
    return None


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, deterministic: bool = False,
          allow_tf32: bool = True, **kwargs):
    yield
