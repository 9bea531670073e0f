"""``torch.utils.tensorboard.SummaryWriter``: logging that training scripts do on the side.

The engine cannot write TensorBoard's event files (torch builds them with its own protobuf
writer), so the writer appends one JSON line per logged value to ``<log_dir>/scalars.jsonl``
and says so once, with a warning. Training is unaffected; only the log format differs.

>>> import json, os, tempfile, warnings
>>> with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     writer = SummaryWriter(folder)
...     writer.add_scalar("loss", 0.5, 1); writer.close()
...     json.loads(open(os.path.join(folder, "scalars.jsonl")).read())["value"]
0.5
"""
from __future__ import annotations

import json
import os
import time
import warnings
from typing import Any

_WARNED: list = []


def _number(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


class SummaryWriter:
    """Scalars (and text) as JSON lines; images, histograms and graphs are accepted and not
    written."""

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step: Any = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        if not _WARNED:
            _WARNED.append(True)
            warnings.warn("gradcheck.ref's SummaryWriter writes scalars as JSON lines "
                          "(scalars.jsonl), not TensorBoard event files", UserWarning,
                          stacklevel=2)
        self.log_dir = log_dir or os.path.join("runs", time.strftime("%b%d_%H-%M-%S") + comment)
        os.makedirs(self.log_dir, exist_ok=True)
        self._file = open(os.path.join(self.log_dir, "scalars.jsonl"), "a")  # noqa: SIM115

    def get_logdir(self) -> str:
        return self.log_dir

    def _write(self, record: dict) -> None:
        self._file.write(json.dumps(record) + "\n")

    def add_scalar(self, tag: str, scalar_value: Any, global_step: Any = None,
                   walltime: float | None = None, **kwargs: Any) -> None:
        self._write({"tag": tag, "value": _number(scalar_value), "step": _number(global_step),
                     "time": walltime or time.time()})

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step: Any = None,
                    walltime: float | None = None) -> None:
        for tag, value in tag_scalar_dict.items():
            self.add_scalar(f"{main_tag}/{tag}", value, global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: Any = None,
                 walltime: float | None = None) -> None:
        self._write({"tag": tag, "text": text_string, "step": _number(global_step)})

    def _not_written(self, *args: Any, **kwargs: Any) -> None:
        """Accepted; only scalars and text are written by this writer."""

    add_image = add_images = add_histogram = add_graph = add_figure = add_embedding = \
        add_hparams = add_pr_curve = add_audio = add_video = add_mesh = _not_written

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# torch's module layout: torch.utils.tensorboard.writer.SummaryWriter
writer = __import__("types").SimpleNamespace(SummaryWriter=SummaryWriter)
summary = __import__("importlib").import_module(f"{__name__}.summary")
