# SPDX-License-Identifier: Apache-2.0
"""An offloading loop that keeps the pinned host buffer it copies each
step's output into (torch.empty(N, pin_memory=True), kept in a list): a
pinned host leak, device memory flat. Plain PyTorch, run on the CPU
stand-in torch (tests/python/faketorch); no line here calls leakwatch.

    torch_offload.py [fixed]

fixed: a ring of 4 buffers allocated once and reused. STEPS: steps (120)."""
import os
import sys

import torch
from torch import nn, optim

STEPS = int(os.environ.get("STEPS", "120"))
FIXED = "fixed" in sys.argv[1:]


def offload(model, opt, steps):
    buffers, ring = [], []
    for i in range(steps):
        x = torch.randn(64, 128).cuda()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if FIXED:
            if len(ring) < 4:
                ring.append(torch.empty(16384, pin_memory=True))
            buf = ring[i % 4]
        else:
            buf = torch.empty(16384, pin_memory=True)  # LEAK-PINNED
            buffers.append(buf)
    return len(buffers)


model = nn.Sequential(nn.Linear(128, 64)).cuda()
offload(model, optim.SGD(model.parameters(), lr=0.01), STEPS)
print(f"trained {STEPS} steps")
