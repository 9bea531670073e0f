"""Training-loop lint rules (importable without the rest of gradcheck)."""
from lint_rules.finding import Edit, Finding, Fix, LintSyntaxError

__all__ = ["Edit", "Finding", "Fix", "LintSyntaxError"]
