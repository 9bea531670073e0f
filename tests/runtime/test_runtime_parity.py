"""check_parity against a simulated second device (no GPU in CI), and for real on a GPU."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcheck.runtime import DeviceUnavailable, SimulatedDevice, check_parity
from gradcheck.runtime.devices import RefDevice, register_device, unregister_device

torch = pytest.importorskip("torch")


def layer(x, w):
    return ((x @ w).tanh() * 3.0).sum(dim=1)


def _inputs(seed=1, rows=16):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((rows, 8)), rng.standard_normal((8, 4))]


def test_a_faithful_device_passes_with_no_spread():
    report = check_parity(layer, _inputs(), devices=(SimulatedDevice(),))
    assert report.passed and report.problems == []
    assert report.spread[("sim", "float32")] == 0.0
    assert 0.0 < report.worst_ratio[("sim", "float32")] <= 1.0


def test_the_flags_in_effect_are_reported():
    report = check_parity(layer, _inputs(), devices=("cpu",))
    assert report.flags["torch.backends.cuda.matmul.allow_tf32"] == \
        torch.backends.cuda.matmul.allow_tf32
    assert report.flags["torch.are_deterministic_algorithms_enabled()"] == \
        torch.are_deterministic_algorithms_enabled()
    assert "allow_tf32" in report.summary()


@given(index=st.integers(0, 15), size=st.floats(1e-4, 1.0), sign=st.sampled_from([-1, 1]),
       seed=st.integers(0, 100))
def test_a_planted_output_error_is_caught_where_it_is(index, size, sign, seed):
    inputs = _inputs(seed)
    device = SimulatedDevice(output_error=(index, sign * size))
    report = check_parity(layer, inputs, devices=(device,))
    assert not report.passed
    problem, = report.problems
    assert (problem.kind, problem.quantity, problem.index) == ("accuracy", "output", index)


def test_an_error_the_size_of_the_cpus_worst_passes_where_the_cpu_was_exact():
    # Another summation order lands elsewhere: as accurate overall is what parity asks, not the
    # CPU's luck at each element.
    def wiggly(x, w):  # float32 loses digits in the sine's large argument: errors of many ulp
        return ((x @ w) * 300.0).sin().sum(dim=1)

    inputs = _inputs(seed=3, rows=64)
    exact = wiggly(*[torch.as_tensor(x) for x in inputs]).numpy()
    cpu = wiggly(*[torch.as_tensor(x, dtype=torch.float32) for x in inputs]).double().numpy()
    errors = np.abs(cpu - exact)
    lucky = int(np.argmin(errors))
    assert errors[lucky] * 100 < errors.max()
    device = SimulatedDevice(output_error=(lucky, float(errors.max())))
    assert check_parity(wiggly, inputs, devices=(device,)).passed
    device = SimulatedDevice(output_error=(lucky, float(10 * errors.max())))
    assert not check_parity(wiggly, inputs, devices=(device,)).passed


def test_a_planted_gradient_error_names_the_input_and_element():
    device = SimulatedDevice(grad_error=(1, 5, 1e-3))
    report = check_parity(layer, _inputs(), devices=(device,))
    problem, = report.problems
    assert (problem.quantity, problem.index) == ("grad[1]", 5)
    assert "allowed error" in problem.message


def test_a_nondeterministic_gradient_is_caught():
    device = SimulatedDevice(grad_noise=1e-9)  # far below the accuracy bound
    report = check_parity(layer, _inputs(), devices=(device,))
    assert report.spread[("sim", "float32")] > 0.0
    assert [p.kind for p in report.problems] == ["nondeterminism"]
    assert report.problems[0].severity == "warning" and report.passed
    strict = check_parity(layer, _inputs(), devices=(device,), require_deterministic=True)
    assert not strict.passed and strict.problems[0].severity == "error"


def test_a_registered_device_is_found_by_name():
    register_device("torch", "sim-bad", lambda: SimulatedDevice(name="sim-bad",
                                                                output_error=(0, 0.5)))
    try:
        report = check_parity(layer, _inputs(), devices=("cpu", "sim-bad"))
    finally:
        unregister_device("torch", "sim-bad")
    assert [p.device for p in report.problems] == ["sim-bad"]
    with pytest.raises(ValueError, match="unknown device 'sim-bad'"):
        check_parity(layer, _inputs(), devices=("sim-bad",))


def test_the_reference_engine_has_the_same_parity_logic():
    def engine_layer(x, w):
        return ((x @ w).tanh() * 3.0).sum(dim=1)

    good = check_parity(engine_layer, _inputs(), framework="ref",
                        devices=(SimulatedDevice(RefDevice("cpu")),))
    bad = check_parity(engine_layer, _inputs(), framework="ref",
                       devices=(SimulatedDevice(RefDevice("cpu"), output_error=(2, 1e-3)),))
    assert good.passed and not bad.passed and bad.problems[0].index == 2


def test_without_a_gpu_cuda_is_refused_with_the_reason():
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here")
    with pytest.raises(DeviceUnavailable) as info:
        check_parity(layer, _inputs())
    assert info.value.device == "cuda"
    assert "CUDA" in info.value.reason


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="runs"):
        check_parity(layer, _inputs(), devices=("cpu",), runs=1)
    with pytest.raises(ValueError, match="factor"):
        check_parity(layer, _inputs(), devices=("cpu",), factor=0.5)


@pytest.mark.gradcheck_gpu
def test_real_gpu_matches_cpu(gradcheck_device):
    report = check_parity(layer, _inputs(rows=256), devices=("cpu", gradcheck_device),
                          dtypes=("float32", "float64"))
    assert report.passed, report.summary()


def test_the_engine_on_cuda_needs_cupy_and_says_so():
    reason = RefDevice("cuda").unavailable_reason()
    if reason is None:
        pytest.skip("CuPy reaches a GPU here")
    with pytest.raises(DeviceUnavailable, match="CuPy"):
        check_parity(layer, _inputs(), framework="ref", devices=("cuda",))
