"""The pytest plugin, driven through pytester: options, marker, header, summary, xdist."""
import re

import numpy  # noqa: F401 - in-process runs must not import numpy a second time
import pytest

import gradcheck.checks  # noqa: F401 - same reason

pytest_plugins = ["pytester"]

# Other areas' plugins are not under test here; keep the inner runs independent of them.
ISOLATE = ("-p", "no:gradcheck-device", "-p", "no:gradcheck-lint", "-p", "no:randomly")

TESTS = '''
import numpy as np
import pytest

def cos_vjp(g, x):
    return (g * np.cos(x),)

def test_right(gradcheck):
    result = gradcheck(np.sin, np.linspace(0, 1, 5), vjp=cos_vjp)
    assert result.mode == MODE_EXPECTED

@pytest.mark.gradcheck(mode="full", rtol=1e-2)
def test_marker_overrides(gradcheck):
    result = gradcheck(np.sin, np.array([0.3]), vjp=lambda g, x: (1.001 * g * np.cos(x),))
    assert result.mode == "full" and result.passed

def test_wrong(gradcheck):
    gradcheck(np.sin, np.array([0.3, 0.4]), vjp=lambda g, x: (-g * np.cos(x),))

def test_seed_is_the_sessions(gradcheck):
    print("SEED", gradcheck.options["seed"])

def rounds_inside(x):  # float32 arithmetic on float64 input: no step resolves its gradient
    return np.sin(x).astype(np.float32).astype(np.float64)

def test_unresolved(gradcheck):
    gradcheck(rounds_inside, np.array([0.3, 1.1]), vjp=cos_vjp)

@pytest.mark.gradcheck(allow_inconclusive=True)
def test_unresolved_allowed(gradcheck):
    assert gradcheck(rounds_inside, np.array([0.3, 1.1]), vjp=cos_vjp).verdict == "inconclusive"
'''


def _write(pytester, mode="full"):
    pytester.makepyfile(test_ops=TESTS.replace("MODE_EXPECTED", repr(mode)))


def test_fixture_marker_header_and_summary(pytester):
    _write(pytester, mode="fast")
    result = pytester.runpytest_inprocess("--gradcheck-mode=fast", "--gradcheck-seed=1234",
                                          "-s", *ISOLATE)
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines([
        "gradcheck: mode=fast seed=1234 (repeat with --gradcheck-seed=1234)",
        "*GradientMismatch*",
        "*GradientInconclusive*",
        "*= gradcheck =*",
        ("5 gradient check(s), 1 failure(s), 2 inconclusive; worst relative error 2 "
         "(*test_wrong); slowest check *s (*); seed 1234"),
    ])
    assert "SEED 1234" in result.stdout.str()


def test_a_fresh_seed_is_printed_and_used(pytester):
    _write(pytester)
    result = pytester.runpytest_inprocess("-s", *ISOLATE)
    header = re.search(r"gradcheck: mode=full seed=(\d+)", result.stdout.str())
    assert header and f"SEED {header.group(1)}" in result.stdout.str()


def test_marker_is_registered(pytester):
    result = pytester.runpytest_inprocess("--markers", *ISOLATE)
    result.stdout.fnmatch_lines(
        ["@pytest.mark.gradcheck(mode=None, atol=None, rtol=None, allow_inconclusive=False*"])


def test_bad_mode_is_rejected_by_name(pytester):
    result = pytester.runpytest_inprocess("--gradcheck-mode=slow", *ISOLATE)
    assert result.ret != 0
    assert "--gradcheck-mode" in result.stderr.str() and "'slow'" in result.stderr.str()


def test_summary_adds_up_across_xdist_workers(pytester):
    pytest.importorskip("xdist")
    _write(pytester)
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "2", "--gradcheck-seed=7",
                                           *ISOLATE)
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines([
        "gradcheck: mode=full seed=7*",
        "5 gradient check(s), 1 failure(s), 2 inconclusive; worst relative error 2 *; seed 7",
    ])


def test_inconclusive_fails_with_its_own_message_unless_allowed(pytester):
    _write(pytester)
    result = pytester.runpytest_inprocess("-k", "unresolved", *ISOLATE)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*GradientInconclusive: gradient check INCONCLUSIVE*",
                                 "*pass allow_inconclusive=True to accept that*"])
    assert "GradientMismatch: gradient check" not in result.stdout.str()
    allowed = pytester.runpytest_inprocess("-k", "unresolved",
                                           "--gradcheck-allow-inconclusive", *ISOLATE)
    allowed.assert_outcomes(passed=2)
