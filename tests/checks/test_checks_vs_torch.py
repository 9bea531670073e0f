"""torch.autograd.gradcheck's documented weaknesses, side by side with ours on the same input.

Each test first asserts torch's actual behaviour (skipping if this torch no longer shows it),
then asserts ours."""
import warnings

import numpy as np
import pytest

from gradcheck.checks import GradcheckResult, check_grad
from gradcheck.checks.planted import ROWS, torch_op

torch = pytest.importorskip("torch")


def _torch_gradcheck(fn, inputs, **kwargs) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.autograd.gradcheck(fn, inputs, raise_exception=False, **kwargs)


# y = 2x; the backward's entry 417 (of 1000) is 2.5 instead of 2.
_one_entry_25_percent_off = torch_op(ROWS["one entry of 1000 25% off"], buggy=True)


def test_torch_fast_mode_misses_one_entry_25_percent_wrong_ours_does_not():
    x = torch.randn(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(0),
                    requires_grad=True)
    if not _torch_gradcheck(_one_entry_25_percent_off, (x,), fast_mode=True):
        pytest.skip("this torch's fast mode catches the 25% entry")
    for seed in range(3):
        ours = check_grad(_one_entry_25_percent_off, x, mode="fast", seed=seed,
                          raise_on_failure=False)
        assert not ours.passed and ours.worst().index == (417,)
        assert ours.rechecked_blocks == [("output", "input")]


def test_torch_fails_float32_ours_passes():
    x = torch.randn(10, generator=torch.Generator().manual_seed(0), requires_grad=True)
    if _torch_gradcheck(torch.tanh, (x,)):
        pytest.skip("this torch passes float32 tanh")
    assert check_grad(torch.tanh, x).passed
    assert check_grad(torch.tanh, x, mode="fast").passed


def test_torch_false_alarm_at_relu_zero_ours_reports_a_kink():
    x = torch.tensor([0.0, 1.0, -1.0], dtype=torch.float64, requires_grad=True)
    if _torch_gradcheck(torch.relu, (x,)):
        pytest.skip("this torch passes relu at 0")
    result = check_grad(torch.relu, x, nondifferentiable="ignore")
    assert result.passed and result.nondifferentiable == [("input", (0,))]


def test_torch_returns_bare_false_ours_returns_a_report():
    x = torch.randn(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(1),
                    requires_grad=True)
    assert _torch_gradcheck(_one_entry_25_percent_off, (x,)) is False
    ours = check_grad(_one_entry_25_percent_off, x, raise_on_failure=False)
    assert isinstance(ours, GradcheckResult) and not ours
    assert "input[417]" in str(ours) and "2.5" in str(ours)


def test_torch_fixed_step_fails_large_values_ours_scales_the_step():
    # With x ~ 1e7, torch's absolute eps=1e-6 loses ~8 digits to cancellation in f(x+eps)-f(x-eps).
    x = torch.tensor([1.2345e7, -2.5e7, 3.3e7], dtype=torch.float64, requires_grad=True)
    fn = lambda x: torch.sin(x / 1e7) * x
    if _torch_gradcheck(fn, (x,)):
        pytest.skip("this torch passes large values")
    assert check_grad(fn, x).passed
    assert np.isfinite(check_grad(fn, x, mode="fast").max_rel_error)
