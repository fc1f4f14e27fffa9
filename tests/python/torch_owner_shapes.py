# SPDX-License-Identifier: Apache-2.0
"""Owners of other shapes than the seed's (issue 31), in plain PyTorch:

    torch_owner_shapes.py SHAPE

  attr     Trainer.fit: self.history["loss"].append(loss)
  closure  a list in a closure's cell: keep = make_keeper(); keep(out)
  hidden   a list that is a function's default argument (no name leads to it)"""
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
    _kept.append(x)


class Trainer:
    def __init__(self):
        self.history = {"loss": []}

    def fit(self, steps):
        keep = make_keeper()
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
            else:
                stash(outputs)


Trainer().fit(160)
