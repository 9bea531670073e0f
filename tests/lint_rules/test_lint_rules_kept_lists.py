"""GC004 `append` (a preview form) needs evidence that the receiver is a list: an object of a
class the analysis cannot read (a metric library's running average, whose `append` may
detach), a parameter the caller hands in or a loop target is unknown, so it stays silent."""
from __future__ import annotations

import pytest

from lint_rules import EVERY_FORM, check_source

PROGRAM = '''\
import collections

import torch
from torch import nn
from metrics_lib import CumulativeAverage

{prelude}

def train(model, loader, history, epochs=2):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    {binding}
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            {keep}
    return model
'''


def appended(binding: str, keep: str, prelude: str = "") -> list[tuple[str, str, int]]:
    source = PROGRAM.format(binding=binding, keep=keep, prelude=prelude)
    return [(f.code, f.pattern, f.line) for f in
            check_source(source, "train.py", strict=True, select=EVERY_FORM)]


@pytest.mark.parametrize(("binding", "keep"), [
    ("losses = []", "losses.append(loss)"),
    ("losses = list()", "losses.append({'loss': loss})"),
    ("recent = collections.deque(maxlen=None)", "recent.append(loss)"),
    ("train_losses, val_losses = [], []", "train_losses.append(loss)"),
    ("curves = {'train': [], 'val': []}", "curves['train'].append(loss)"),
    ("curves = collections.defaultdict(list)", "curves['train'].append(loss)"),
    ("per_head = [[] for _ in range(3)]", "per_head[0].append(loss)"),
])
def test_a_list_this_file_builds_keeps_every_graph(binding: str, keep: str) -> None:
    assert appended(binding, keep) == [("GC004", "append", 18)]


def test_a_module_level_list_is_a_list_too() -> None:
    assert appended("pass", "LOSSES.append(loss)", prelude="LOSSES = []") == \
        [("GC004", "append", 18)]


@pytest.mark.parametrize(("binding", "keep"), [
    ("running = CumulativeAverage()", "running.append(loss)"),  # may detach: cannot read it
    ("pass", "history.append(loss)"),  # the caller's object
    ("pass", "model.history.append(loss)"),  # an attribute this file never assigns
    ("losses = []", "losses[-1].append(loss)"),  # an entry of a list of unknown entries
    ("losses = []\n    losses = CumulativeAverage()", "losses.append(loss)"),  # rebound
])
def test_a_receiver_of_unknown_kind_stays_silent(binding: str, keep: str) -> None:
    assert appended(binding, keep) == []


def test_an_attribute_is_a_list_only_if_every_assignment_makes_one() -> None:
    trainer = '''\
import torch


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.losses = {value}

    def fit(self, loader):
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = self.model(x, y)
            loss.backward()
            self.optimizer.step()
            self.losses.append(loss)
'''
    found = check_source(trainer.format(value="[]"), "trainer.py", strict=True, select=EVERY_FORM)
    assert [(f.code, f.pattern, f.line) for f in found] == [("GC004", "append", 16)]
    meter = trainer.format(value="Meter()").replace("import torch", "import torch\nfrom meters import Meter")
    assert check_source(meter, "trainer.py", strict=True, select=EVERY_FORM) == []
