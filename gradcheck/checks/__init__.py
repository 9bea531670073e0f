"""Gradient checkers (placeholder)."""
