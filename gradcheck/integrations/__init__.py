"""Trainer integrations: each module imports its framework, so import only the one you use."""
