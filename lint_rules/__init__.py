"""Training-loop lint rules (importable without the rest of gradcheck).

>>> from lint_rules import check_source
>>> check_source("loss.backward()\\noptimizer.zero_grad()\\noptimizer.step()\\n")[0].code
'GC001'
"""
from lint_rules.check import EVERY_FORM, check_source
from lint_rules.finding import Edit, Finding, Fix, LintSyntaxError
from lint_rules.rules import RULES, rule_by_code_or_name

__all__ = [
    "EVERY_FORM",
    "RULES",
    "Edit",
    "Finding",
    "Fix",
    "LintSyntaxError",
    "check_source",
    "rule_by_code_or_name",
]
