"""``torch.fx.passes``: graph passes; ``split_utils.getattr_recursive`` is here."""
