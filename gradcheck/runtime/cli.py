"""The run-time commands: ``gradcheck semantics`` and ``gradcheck run``.

Exit codes come from ``gradcheck.exitcodes``. ``semantics``: 0 when every semantic passes, 1 when
any fails, 2 when the framework cannot be loaded. ``run``: the script's own status when it
fails (130 after Ctrl-C, as python), else 1 when the guard found a problem and 0 when it found
none; 2 for a usage error.
"""
from __future__ import annotations

import os

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
    metavar="[FILE:LINE=]K",
    multiple=True,
    help="Backward passes per optimizer step: K for every optimizer, FILE:LINE=K for the one "
         "built at that line (repeat the option). Default: the framework's setting, else "
         "unknown (inferred per optimizer where it matters).",
)
@click.option(
    "--action",
    type=click.Choice(["warn", "raise"]),
    default="warn",
    show_default=True,
    help="warn: keep training and report at exit; raise: stop at the first problem.",
)
@click.option("-m", "module", metavar="MODULE", default=None,
              help="Run a module as a script, as python -m does (e.g. torch.distributed.run).")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run_command(accumulation_steps: tuple[str, ...], action: str, module: str | None,
                args: tuple[str, ...]) -> None:
    """Run SCRIPT [ARGS]... (or -m MODULE [ARGS]...) with every parameter and optimizer guarded.

    Gradient bugs are reported once each at exit. The exit status is the script's own when it
    fails (130 after Ctrl-C), else 1 (GRADCHECK_EXIT_CODE if set) when the guard found a problem
    and 0 when it found none.
    """
    from gradcheck.runtime.launch import run_module, run_script
    from gradcheck.runtime.session import parse_accumulation_steps

    steps = ",".join(accumulation_steps)
    try:
        parse_accumulation_steps(steps)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--accumulation-steps") from None
    if module is None and not args:
        raise click.UsageError("pass a script to run (or -m MODULE)")
    if module is None and not os.path.isfile(args[0]):
        raise click.BadParameter(f"no file {args[0]!r}; pass the path of a Python script",
                                 param_hint="SCRIPT")
    try:
        if module is None:
            status = run_script(args[0], args[1:], accumulation_steps=steps, action=action)
        else:
            status = run_module(module, args, accumulation_steps=steps, action=action)
    except (ModuleNotFoundError, ValueError) as exc:
        click.echo(f"gradcheck run: error: {exc}", err=True)
        raise SystemExit(exitcodes.ERROR) from None
    except KeyboardInterrupt:  # while the report is gathered, after the script ended
        raise SystemExit(130) from None
    raise SystemExit(status)
