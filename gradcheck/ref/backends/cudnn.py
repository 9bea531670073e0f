"""``torch.backends.cudnn``: flags that scripts set; there is no cuDNN here."""

deterministic = False
benchmark = False
enabled = True
allow_tf32 = True


def is_available() -> bool:
    return False


def version() -> None:
    return None
