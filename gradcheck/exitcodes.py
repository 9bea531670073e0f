"""Exit codes of every ``gradcheck`` command, defined once (ruff's convention)."""

CLEAN = 0  # nothing found, every check passed
FINDINGS = 1  # lint findings, or a failed check
ERROR = 2  # a usage error, or a file that could not be checked
INTERRUPTED = 130  # Ctrl-C (SIGINT), as a shell reports a process that it ended
