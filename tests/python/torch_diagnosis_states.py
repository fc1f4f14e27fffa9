# SPDX-License-Identifier: Apache-2.0
"""The diagnosis window's states other than "done", in plain PyTorch on
the CPU stand-in torch (tests/python/faketorch):

    torch_diagnosis_states.py unavailable|recording

unavailable  PyTorch refuses to record its allocation history
             (torch.cuda.memory._record_memory_history raises RuntimeError,
             as under the cudaMallocAsync backend): the report's
             torch.diagnosis says "unavailable", with the error.
recording    the job ends two steps after the window opened, fewer than a
             window needs: the report's torch.diagnosis still says
             "recording", with the steps the window was to record.

STEPS: steps at most (400)."""
import os
import sys

import torch
from torch import nn, optim

STEPS = int(os.environ.get("STEPS", "400"))
STATE = sys.argv[1]

if STATE == "unavailable":
    def refuse(*args, **kwargs):
        raise RuntimeError("cudaMallocAsync does not yet support recordHistory")

    torch.cuda.memory._record_memory_history = refuse

model = nn.Sequential(nn.Linear(128, 64)).cuda()
opt = optim.SGD(model.parameters(), lr=0.01)
kept, after = [], 0
for i in range(STEPS):
    loss = model(torch.randn(64, 128).cuda()).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    kept.append(loss.detach())  # grows step after step
    # The helper, under the name the library loads it by (leakwatch/__init__.py).
    helper = getattr(sys.modules.get("_leakwatch_helper._torch"), "_helper", None)
    if STATE == "recording" and getattr(helper, "window", None) is not None:
        after += 1
        if after == 2:
            break
print(f"trained {i + 1} steps")
