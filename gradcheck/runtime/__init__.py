"""Run-time accumulation checks (placeholder)."""
