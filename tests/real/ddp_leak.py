# SPDX-License-Identifier: Apache-2.0
"""DistributedDataParallel over gloo on CUDA tensors, two ranks, the leak of
a job that logs on rank 0 only: `if rank == 0: history.append(loss)` keeps
each step's loss (and the memory under it) alive on rank 0; rank 1 keeps
nothing. Plain PyTorch: no line calls leakwatch.

    ddp_leak.py spawn [fixed]     # torch.multiprocessing.spawn, as PyTorch's
                                  # DDP tutorial does: no RANK variable is set
    ddp_leak.py env [fixed]       # started by torchrun: RANK, WORLD_SIZE

The ranks meet through a FileStore (init_method file://DDP_STORE): Debian's
PyTorch 2.6 has no libuv, which TCP rendezvous asks for by default.
Environment: STEPS (default 400), DDP_STORE (a file path, required), WORLD
(spawn: the number of ranks, default 2). Each rank's last line gives
torch.cuda.memory_allocated()'s growth per step."""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn, optim
from torch.nn.parallel import DistributedDataParallel as DDP

FIXED = "fixed" in sys.argv[2:]
STEPS = int(os.environ.get("STEPS", "400"))


def train(rank, world, store):
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    torch.manual_seed(rank)
    model = DDP(nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10)).cuda())
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    history = []
    first = None
    for step in range(STEPS):
        x = torch.randn(64, 128, device="cuda")
        y = torch.randint(10, (64,), device="cuda")
        opt.zero_grad(set_to_none=True)
        loss = criterion(model(x), y)  # LOSS-DDP: where the kept loss is made
        loss.backward()
        opt.step()
        if rank == 0 and not FIXED:
            history.append(loss)  # LEAK-DDP: rank 0 logs its losses
        if step == 10:
            first = torch.cuda.memory_allocated()
    grown = (torch.cuda.memory_allocated() - first) / (STEPS - 11)
    print(f"rank {rank} of {world} trained {STEPS} steps", flush=True)
    print(f"rank {rank} allocated per step: {grown}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main():
    how = sys.argv[1] if len(sys.argv) > 1 else "spawn"
    store = os.environ["DDP_STORE"]
    if how == "env":
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), store)
    else:
        world = int(os.environ.get("WORLD", "2"))
        mp.spawn(train, args=(world, store), nprocs=world, join=True)


if __name__ == "__main__":
    main()
