"""The run-time commands: ``gradcheck semantics`` and ``gradcheck run``.

Exit codes come from ``gradcheck.exitcodes``. ``semantics``: 0 when every semantic passes, 1 when
any fails, 2 when the framework cannot be loaded. ``run``: the script's own status when it
fails, else 1 when the guard found a problem and 0 when it found none.
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


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "--accumulation-steps",
    type=click.IntRange(min=1),
    default=None,
    help="Backward passes per optimizer step (default: the framework's setting, else unknown).",
)
@click.option(
    "--action",
    type=click.Choice(["warn", "raise"]),
    default="warn",
    show_default=True,
    help="warn: keep training and report at exit; raise: stop at the first problem.",
)
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run_command(accumulation_steps: int | None, action: str, script: str, args: tuple) -> None:
    """Run SCRIPT with every torch optimizer guarded; report gradient bugs at exit."""
    from gradcheck.runtime.launch import run_script

    raise SystemExit(
        run_script(script, args, accumulation_steps=accumulation_steps, action=action)
    )
