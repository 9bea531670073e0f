"""``gradcheck semantics``: print the accumulation-semantics table for one framework.

Exit codes come from ``gradcheck.exitcodes``: 0 when every semantic passes, 1 when any fails,
2 when the framework cannot be loaded.
"""
from __future__ import annotations

import click

from gradcheck import exitcodes


@click.command("semantics")
@click.option(
    "--framework",
    type=click.Choice(["torch", "ref"]),
    default="torch",
    show_default=True,
    help="Which framework to hold against the reference engine's semantics.",
)
@click.option("--verbose", "-v", is_flag=True, help="Also print every observation.")
def semantics_command(framework: str, verbose: bool) -> None:
    """Check PyTorch's gradient-accumulation semantics on FRAMEWORK, one row per rule."""
    from gradcheck.runtime.semantics import run_semantics

    try:
        report = run_semantics(framework)
    except ValueError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(exitcodes.ERROR) from exc
    click.echo(report.table())
    if verbose:
        for row in report.rows:
            click.echo(f"\n{row.name}\n  observed: {row.observed}\n  engine:   {row.expected}")
    raise SystemExit(exitcodes.CLEAN if report.passed else exitcodes.FINDINGS)
