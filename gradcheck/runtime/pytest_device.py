"""pytest plugin: ``--gradcheck-device=cpu|cuda`` picks the second device of parity tests.

Tests ask for the ``gradcheck_device`` fixture (the device name) or carry the
``gradcheck_gpu`` marker. With ``cuda`` on a machine that cannot run it, they are skipped with
the exact reason (torch built without CUDA, no GPU visible, ...); with ``cpu`` (the default)
``gradcheck_gpu`` tests are skipped because no GPU run was asked for. torch is imported only
when a test actually needs the device.
"""
from __future__ import annotations

import pytest

CHOICES = ("cpu", "cuda")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradcheck-device", "gradcheck GPU/CPU parity")
    group.addoption(
        "--gradcheck-device",
        action="store",
        default="cpu",
        choices=CHOICES,
        help="device for gradcheck parity tests: cpu (default) or cuda",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "gradcheck_gpu: needs --gradcheck-device=cuda and a usable CUDA GPU"
    )


def _skip_reason(device: str) -> str | None:
    if device == "cpu":
        return None
    from gradcheck.runtime.devices import TorchDevice

    reason = TorchDevice(device).unavailable_reason()
    return None if reason is None else f"--gradcheck-device={device}: {reason}"


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gradcheck_gpu") is None:
        return
    device = item.config.getoption("--gradcheck-device")
    if device == "cpu":
        pytest.skip("GPU parity test: run with --gradcheck-device=cuda on a machine with a GPU")
    reason = _skip_reason(device)
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture
def gradcheck_device(request: pytest.FixtureRequest) -> str:
    """The device chosen with --gradcheck-device; skips the test when it cannot run here."""
    device = request.config.getoption("--gradcheck-device")
    reason = _skip_reason(device)
    if reason is not None:
        pytest.skip(reason)
    return device
