"""Reference engine (placeholder)."""
