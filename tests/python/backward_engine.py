# SPDX-License-Identifier: Apache-2.0
"""Memory allocated in backward() on a thread with no Python frame, as
PyTorch's autograd engine does: the stand-in torch's engine is replaced by
tests/python/pyprobe.so's probe_frameless_call ($LW_PYPROBE), which runs
cudaMalloc (through $LW_CUDART) on a new thread that has a Python thread
state and no frame, while this thread waits. Each backward keeps a new
2 MiB buffer (an extension caching a workspace per call): leakwatch's own
series grows while PyTorch's tensor counters do not, and the site must name
the line that called backward()."""
import ctypes
import os

import torch
from torch import nn, optim

STEPS = int(os.environ.get("STEPS", "120"))
probe = ctypes.CDLL(os.environ["LW_PYPROBE"])
probe.probe_frameless_call.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
rt = ctypes.CDLL(os.environ["LW_CUDART"])
cuda_malloc = ctypes.cast(rt.cudaMalloc, ctypes.c_void_p).value


def native_engine(roots, retain_graph):
    assert probe.probe_frameless_call(cuda_malloc, 2 << 20) == 0


torch.autograd._engine_execute = native_engine

model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
opt = optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
for _ in range(STEPS):
    x, y = torch.randn(32, 64).cuda(), torch.randint(10, (32,)).cuda()
    loss = criterion(model(x), y)
    loss.backward()  # LEAK-ENGINE
    opt.step()
    opt.zero_grad()
print(f"trained {STEPS} steps")
