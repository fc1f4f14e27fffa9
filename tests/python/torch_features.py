# SPDX-License-Identifier: Apache-2.0
"""PyTorch features that the cudaMallocAsync backend refuses, used as a job
would: on the CPU stand-in torch (tests/integration/test_torch.c) and on a
real GPU (tests/gpu/run.sh). Prints "FEATURE ok" and exits 0 when the
feature worked, or prints PyTorch's error and exits 1.

    torch_features.py FEATURE [STEPS]

FEATURE:
  compile   torch.compile(mode="reduce-overhead") of a training step: CUDA
            graphs through cudagraph trees (checkPoolLiveAllocations)
  snapshot  the memory-snapshot recipe: _record_memory_history(max_entries=
            100000), train, _dump_snapshot(), _record_memory_history(None);
            the user's own recording must hold through leakwatch's window
  ipc       a CUDA tensor through torch.multiprocessing (shareIpcHandle)
  mempool   torch.cuda.MemPool + use_mem_pool
The training loop keeps every step's loss (a leak), so leakwatch's window
opens while the feature is in use."""
import os
import pickle
import sys
import tempfile

import torch
from torch import nn, optim

FEATURE = sys.argv[1]
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 120

model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()
opt = optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
kept = []


def train_step(x, y):
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def train(step_fn):
    for _ in range(STEPS):
        x, y = torch.randn(32, 64).cuda(), torch.randint(10, (32,)).cuda()
        kept.append(step_fn(x, y))


try:
    if FEATURE == "compile":
        fwd = torch.compile(model, mode="reduce-overhead")
        warm = fwd(torch.randn(32, 64).cuda())
        train(train_step)
    elif FEATURE == "snapshot":
        torch.cuda.memory._record_memory_history(max_entries=100000)
        train(train_step)
        path = os.path.join(tempfile.mkdtemp(), "snapshot.pickle")
        torch.cuda.memory._dump_snapshot(path)
        with open(path, "rb") as f:
            snap = pickle.load(f)
        allocs = sum(e["action"] == "alloc" for e in snap["device_traces"][0])
        # Still recording: nobody turned the user's history off.
        assert torch._C._cuda_isHistoryEnabled(), "the user's recording was turned off"
        assert allocs >= STEPS, f"only {allocs} allocations in the user's trace"
        torch.cuda.memory._record_memory_history(enabled=None)
    elif FEATURE == "ipc":
        train(train_step)
        from torch.multiprocessing.reductions import reduce_tensor

        reduce_tensor(kept[-1].detach())
    elif FEATURE == "mempool":
        pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(pool):
            buf = torch.empty(1024, device="cuda")
        train(train_step)
    else:
        sys.exit(f"unknown feature {FEATURE}")
except RuntimeError as e:
    print(f"{FEATURE} failed: {e}")
    sys.stdout.flush()
    sys.exit(1)
print(f"{FEATURE} ok")
