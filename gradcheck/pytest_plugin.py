"""pytest plugin ``gradcheck``: a fixture, a marker, two options and a terminal summary.

    def test_my_op(gradcheck):
        gradcheck(my_op, (x, w))                      # session settings

    @pytest.mark.gradcheck(mode="full", rtol=1e-4)    # per-test settings
    def test_my_other_op(gradcheck): ...

``--gradcheck-mode=full|fast`` and ``--gradcheck-seed=N`` set the session defaults; the seed is
printed in the report header so that a failing run can be repeated exactly. Under pytest-xdist
the controller hands its seed to every worker and adds up the workers' statistics.

A check whose finite differences cannot resolve the gradient (verdict "inconclusive") fails
the test with its own message, ``GradientInconclusive``, unless the marker or the call says
``allow_inconclusive=True`` (or the session runs with ``--gradcheck-allow-inconclusive``).

Hooks appear in the order pytest calls them.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import pytest

SEED_KEY = "gradcheck_seed"
STATS_KEY = "gradcheck_stats"
MARKER = (
    "gradcheck(mode=None, atol=None, rtol=None, allow_inconclusive=False, **options): "
    "per-test settings for the gradcheck fixture (any check_grad keyword)"
)
_SEED = pytest.StashKey[int]()


@dataclass
class SessionStats:
    """What the terminal summary reports; plain data so xdist can ship it between processes."""

    checks: int = 0
    failures: int = 0
    inconclusive: int = 0
    worst_rel_error: float = 0.0
    worst_test: str = ""
    slowest_seconds: float = 0.0
    slowest_test: str = ""

    def record(self, test: str, verdict: str, rel_error: float, seconds: float) -> None:
        self.checks += 1
        self.failures += verdict == "failed"
        self.inconclusive += verdict == "inconclusive"
        if rel_error >= self.worst_rel_error:
            self.worst_rel_error, self.worst_test = rel_error, test
        if seconds >= self.slowest_seconds:
            self.slowest_seconds, self.slowest_test = seconds, test

    def merge(self, other: dict) -> None:
        self.checks += other["checks"]
        self.failures += other["failures"]
        self.inconclusive += other.get("inconclusive", 0)
        if other["worst_rel_error"] >= self.worst_rel_error and other["checks"]:
            self.worst_rel_error, self.worst_test = other["worst_rel_error"], other["worst_test"]
        if other["slowest_seconds"] >= self.slowest_seconds and other["checks"]:
            self.slowest_seconds = other["slowest_seconds"]
            self.slowest_test = other["slowest_test"]


_STATS = pytest.StashKey[SessionStats]()


class GradcheckFixture:
    """The object behind the ``gradcheck`` fixture: ``check_grad`` with layered settings."""

    def __init__(self, defaults: dict, marker_options: dict, stats: SessionStats, test: str):
        self.options = {**defaults, **marker_options}
        self.stats = stats
        self.test = test

    def __call__(self, fn: Callable, inputs: Any, **overrides: Any):
        from gradcheck.checks import check_grad

        from gradcheck.checks import GradientInconclusive, GradientMismatch

        options = {**self.options, **overrides}
        raise_on_failure = options.pop("raise_on_failure", True)
        allow_inconclusive = options.pop("allow_inconclusive", False)
        started = time.perf_counter()
        result = check_grad(fn, inputs, raise_on_failure=False, **options)
        self.stats.record(self.test, result.verdict, result.max_rel_error,
                          time.perf_counter() - started)
        if raise_on_failure and result.verdict == "failed":
            raise GradientMismatch(result)
        if raise_on_failure and result.verdict == "inconclusive" and not allow_inconclusive:
            raise GradientInconclusive(result)
        return result


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradcheck", "gradient checks (gradcheck fixture)")
    group.addoption(
        "--gradcheck-mode", action="store", choices=("full", "fast"), default="full",
        dest="gradcheck_mode", help="check mode for the gradcheck fixture (default: full)",
    )
    group.addoption(
        "--gradcheck-seed", action="store", type=int, default=None, dest="gradcheck_seed",
        help="seed of the fast-mode probes (default: a fresh one, printed in the header)",
    )
    group.addoption(
        "--gradcheck-allow-inconclusive", action="store_true", default=False,
        dest="gradcheck_allow_inconclusive",
        help="let checks the finite differences cannot resolve pass (default: they fail)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None and SEED_KEY in worker_input:
        seed = worker_input[SEED_KEY]
    elif config.option.gradcheck_seed is not None:
        seed = config.option.gradcheck_seed
    else:
        seed = random.Random().randrange(2**31)
    config.stash[_SEED] = seed
    config.stash[_STATS] = SessionStats()
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(), "gradcheck-xdist")


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.stash[_SEED]
    return (f"gradcheck: mode={config.option.gradcheck_mode} seed={seed} "
            f"(repeat with --gradcheck-seed={seed})")


@pytest.fixture
def gradcheck(request: pytest.FixtureRequest) -> GradcheckFixture:
    """``check_grad`` with the session's mode and seed and the test's marker overrides."""
    config = request.config
    defaults = {"mode": config.option.gradcheck_mode, "seed": config.stash[_SEED],
                "allow_inconclusive": config.option.gradcheck_allow_inconclusive}
    marker = request.node.get_closest_marker("gradcheck")
    marker_options = dict(marker.kwargs) if marker else {}
    return GradcheckFixture(defaults, marker_options, config.stash[_STATS], request.node.nodeid)


def pytest_sessionfinish(session: pytest.Session) -> None:
    worker_output = getattr(session.config, "workeroutput", None)
    if worker_output is not None:
        worker_output[STATS_KEY] = asdict(session.config.stash[_STATS])


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    stats = config.stash[_STATS]
    if not stats.checks:
        return
    terminalreporter.section("gradcheck")
    terminalreporter.write_line(
        f"{stats.checks} gradient check(s), {stats.failures} failure(s), "
        f"{stats.inconclusive} inconclusive; "
        f"worst relative error {stats.worst_rel_error:.3g} ({stats.worst_test}); "
        f"slowest check {stats.slowest_seconds:.3f}s ({stats.slowest_test}); "
        f"seed {config.stash[_SEED]}"
    )


class _XdistHooks:
    """Registered only when pytest-xdist is present, since pytest rejects unknown hooks."""

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[SEED_KEY] = node.config.stash[_SEED]

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        found = getattr(node, "workeroutput", {}).get(STATS_KEY)
        if found:
            node.config.stash[_STATS].merge(found)

