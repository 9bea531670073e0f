"""pytest plugin: the gradcheck fixture, marker and options (placeholder)."""
