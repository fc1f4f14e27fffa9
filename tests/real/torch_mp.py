# SPDX-License-Identifier: Apache-2.0
"""A training job built on torch.multiprocessing: a producer process (spawn)
makes each batch on the GPU and shares it with the trainer through a
torch.multiprocessing Queue (CUDA IPC: the trainer maps the producer's
memory); the trainer has the seed's leak (total_loss += loss;
loss_history.append(loss)). Plain PyTorch: no line calls leakwatch.

    torch_mp.py [fixed]

Environment: STEPS (default 400). The last line gives
torch.cuda.memory_allocated()'s growth per step in the trainer."""
import os
import sys

import torch
import torch.multiprocessing as mp
from torch import nn, optim

FIXED = "fixed" in sys.argv[1:]
STEPS = int(os.environ.get("STEPS", "400"))


def producer(queue, steps, done):
    """Makes each batch on the GPU and hands it over; keeps running until the
    trainer is done with them (a CUDA tensor shared by IPC must outlive its
    use in the other process)."""
    for _ in range(steps):
        queue.put((torch.randn(64, 128, device="cuda"), torch.randint(10, (64,), device="cuda")))
    queue.put(None)
    done.wait()
    # The trainer has let go of every batch: free the blocks shared with it
    # now, as PyTorch's documentation of CUDA IPC asks. Left for exit, they
    # are freed by a destructor of libtorch_cuda that runs after PyTorch's own
    # kernel-launch registry is destroyed and reads its freed memory
    # (pytorch/pytorch#131066): a crash or not, by the heap's state at exit,
    # with or without leakwatch (tests/real/test_torch_multiprocessing.py).
    torch.cuda.ipc_collect()


def train(queue):
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    total_loss = 0.0
    loss_history = []
    first = None
    i = 0
    while True:
        batch = queue.get()
        if batch is None:
            break
        inputs, targets = batch
        del batch
        outputs = model(inputs)
        loss = criterion(outputs, targets)  # LEAK-MP
        loss.backward()
        opt.step()
        opt.zero_grad()
        if FIXED:
            total_loss += loss.item()
            loss_history.append(loss.item())
        else:
            total_loss += loss
            loss_history.append(loss)
        del inputs, targets, outputs, loss
        if i == 10:
            first = (i, torch.cuda.memory_allocated())
        last = (i, torch.cuda.memory_allocated())
        i += 1
    return total_loss, loss_history, first, last


def main():
    ctx = mp.get_context("spawn")
    queue = ctx.Queue(maxsize=8)
    done = ctx.Event()
    worker = ctx.Process(target=producer, args=(queue, STEPS, done))
    worker.start()
    total, history, first, last = train(queue)
    done.set()
    worker.join()
    print(f"trained {len(history)} steps; producer exit {worker.exitcode}")
    if first and last[0] > first[0]:
        print(f"allocated per step: {(last[1] - first[1]) / (last[0] - first[0]):.1f}")


if __name__ == "__main__":
    main()
