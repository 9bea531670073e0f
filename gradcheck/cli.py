"""The ``gradcheck`` command: a thin click group over the Python API.

Subcommands are imported only when invoked, so ``gradcheck lint`` never pays for numpy,
torch or the engine.
"""
from __future__ import annotations

import importlib

import click

# command name -> "module:attribute" of the click command
_COMMANDS = {
    "lint": "gradcheck.lint.cli:lint_command",
    "rule": "gradcheck.lint.cli:rule_command",
    "rules": "gradcheck.lint.cli:rules_command",
    "run": "gradcheck.runtime.cli:run_command",
    "semantics": "gradcheck.runtime.cli:semantics_command",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = _COMMANDS.get(name)
        if target is None:
            return None
        module, attribute = target.split(":")
        return getattr(importlib.import_module(module), attribute)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gradcheck")
def main() -> None:
    """Make gradient bugs hard to ship."""
