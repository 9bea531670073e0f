"""A cheap text test that lets the linter skip files that cannot contain a finding.

Parsing with libcst is ~100x slower than a regex scan, so most of a large tree (model
code, utilities) should never reach the parser.
"""
from __future__ import annotations

import re

_TRIGGERS = re.compile(r"backward|zero_grad|\.grad\b|\.step\(")


def could_have_findings(source: str) -> bool:
    """False only when no rule could possibly fire on ``source``."""
    return _TRIGGERS.search(source) is not None
