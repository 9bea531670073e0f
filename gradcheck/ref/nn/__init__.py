"""Placeholder; filled in by the nn/optim/data work."""
