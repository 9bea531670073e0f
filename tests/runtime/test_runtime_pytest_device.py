"""The --gradcheck-device option: GPU tests skip with the reason when no GPU can run them."""
from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TESTS = """
import pytest

def test_uses_the_device(gradcheck_device):
    assert gradcheck_device in ("cpu", "cuda")

@pytest.mark.gradcheck_gpu
def test_marked_gpu():
    pass
"""


def test_cpu_runs_the_fixture_and_skips_marked_gpu_tests(pytester):
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*--gradcheck-device=cuda*"])


def test_cuda_without_a_gpu_skips_with_the_reason(pytester):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here")
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("--gradcheck-device=cuda", "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*--gradcheck-device=cuda: *CUDA*"])


def test_an_unknown_device_is_a_usage_error(pytester):
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("--gradcheck-device=tpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
