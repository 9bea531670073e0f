"""``torch.fx._symbolic_trace``: the one query libraries import from it."""


def is_fx_tracing() -> bool:
    """Nothing is ever being traced here."""
    return False
