"""Session-wide test settings shared by every test directory."""
import os

from hypothesis import HealthCheck, settings

# CI runs on 2 cores; keep property tests broad but bounded, and the same from run to run (a
# red CI names a change, not a draw). Set HYPOTHESIS_PROFILE=thorough locally for a deeper,
# random search; what it finds becomes an explicit example.
settings.register_profile(
    "ci", max_examples=40, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
