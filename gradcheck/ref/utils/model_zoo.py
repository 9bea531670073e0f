"""``torch.utils.model_zoo``: the old name of ``torch.hub.load_state_dict_from_url``."""
from gradcheck.ref.hub import load_state_dict_from_url as load_url  # noqa: F401

try:  # torch.hub's progress bar: tqdm when installed, else a silent stand-in
    from tqdm import tqdm  # noqa: F401
except ImportError:  # pragma: no cover - tqdm is optional
    class tqdm:  # noqa: N801 - torch's name
        """A progress bar that shows nothing (tqdm is not installed)."""

        def __init__(self, total=None, disable=False, unit=None, unit_scale=None,
                     unit_divisor=None, **kwargs):
            self.total, self.n = total, 0

        def update(self, n=1):
            self.n += n

        def close(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()
