"""pytest --gradcheck-device (placeholder)."""
