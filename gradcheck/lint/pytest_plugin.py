"""pytest --gradcheck-lint (placeholder)."""
