"""A method judged where the script calls it (`gan = Gan(...); gan.fit()`) knows the models
and optimizers its class built under `self`, as when it is judged on its own: a reset of the
generator (`self.generator.zero_grad()`) leaves the discriminator's optimizer alone. The
program is the shape fixture; the tests vary who runs the method and whether the
discriminator is reset."""
from __future__ import annotations

from pathlib import Path

import pytest

from lint_rules import EVERY_FORM, check_source

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "lint" / "shapes" / \
    "bad_gan_method_run_from_main_discriminator_never_reset.py"
FIRST_D_PASS = "                scores = self.discriminator(real)\n"


def variant(run_from_main: bool, reset_d: bool) -> str:
    text = FIXTURE.read_text(encoding="utf-8")
    if not run_from_main:
        text = text[:text.index('if __name__ == "__main__":')]
    if reset_d:
        text = text.replace(FIRST_D_PASS, "                self.discriminator.zero_grad()\n"
                            + FIRST_D_PASS, 1)
    return text


def lint(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source(source, "gan.py", strict=True, select=EVERY_FORM)]


@pytest.mark.parametrize("run_from_main", [False, True])
def test_the_discriminator_never_reset_is_found_whoever_runs_the_method(run_from_main: bool) -> None:
    # the generator's loss goes through the discriminator: its gradients reach opt_d
    assert lint(variant(run_from_main, reset_d=False)) == [("GC002", 27)]


@pytest.mark.parametrize("run_from_main", [False, True])
def test_the_correct_loop_is_silent_whoever_runs_the_method(run_from_main: bool) -> None:
    assert lint(variant(run_from_main, reset_d=True)) == []
