# SPDX-License-Identifier: Apache-2.0
"""Owners of other shapes than the seed's (issue 31), in plain PyTorch:

    torch_owner_shapes.py SHAPE

  attr     Trainer.fit: self.history["loss"].append(loss)
  closure  a list in a closure's cell: keep = make_keeper(); keep(out)
  default  a list that is a function's default argument: stash(x, _kept=[])
  partial  a list bound by functools.partial: keep = partial(record, store)
  classattr  a class attribute: Registry.kept.append(x)
  nested   containers four deep: self.state["runs"][0]["outs"].append(x)
  hidden   a list only a library module's attribute leads to (no name of the
           user's code does)"""
import functools
import json
import sys

import torch
from torch import nn, optim

SHAPE = sys.argv[1]
model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
opt = optim.SGD(model.parameters(), lr=0.01)
criterion = nn.CrossEntropyLoss()


def make_keeper():
    hidden = []

    def keep(x):
        hidden.append(x)  # OWNER-CLOSURE

    return keep


def stash(x, _kept=[]):
    _kept.append(x)  # OWNER-DEFAULT


def record(store, x):
    store.append(x)  # OWNER-PARTIAL


class Registry:
    kept = []


def hide(x):
    json._leakwatch_test_kept.append(x)


json._leakwatch_test_kept = []


class Trainer:
    def __init__(self):
        self.history = {"loss": []}
        self.state = {"runs": [{"outs": []}]}

    def fit(self, steps):
        keep = make_keeper()
        keep_partial = functools.partial(record, [])
        for _ in range(steps):
            outputs = model(torch.randn(64, 128).cuda())
            loss = criterion(outputs, torch.randint(10, (64,)).cuda())  # LEAK-LOSS
            loss.backward()
            opt.step()
            opt.zero_grad()
            if SHAPE == "attr":
                self.history["loss"].append(loss)  # OWNER-ATTR
            elif SHAPE == "closure":
                keep(outputs)
            elif SHAPE == "default":
                stash(outputs)
            elif SHAPE == "partial":
                keep_partial(outputs)
            elif SHAPE == "classattr":
                Registry.kept.append(outputs)  # OWNER-CLASSATTR
            elif SHAPE == "nested":
                self.state["runs"][0]["outs"].append(outputs)  # OWNER-NESTED
            else:
                hide(outputs)


Trainer().fit(160)
