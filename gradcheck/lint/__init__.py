"""The lint front end: files, config, formats, fixes (placeholder)."""
