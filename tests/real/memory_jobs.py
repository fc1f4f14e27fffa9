# SPDX-License-Identifier: Apache-2.0
"""Jobs for the anatomy of GPU memory, the pinned host leak and the
out-of-memory post-mortem (issue 40), plain PyTorch that never calls
leakwatch, run on the stand-ins (a small device: FAKE_CUDA_MEM_BYTES).

    memory_jobs.py JOB [fixed]

JOB:
  pinned      an offloading loop that keeps the pinned host buffer it
              copies each step's activations into (torch.empty(N,
              pin_memory=True), kept in a list); fixed: a ring of 4 buffers
  adam        an fp32 MLP trained with Adam for STEPS steps; prints
              "params: P" (the parameters' count)
  amp         the adam job's model trained under torch.autocast (bf16):
              weights, gradients and Adam's state stay fp32
  lora        a frozen fp32 MLP (the base) with a small trainable adapter
              (LoRA-like), Adam on the adapter only; prints "base: B" and
              "adapter: A" (parameter counts)
  oom-model   a model too large for the device once Adam's state is added
  oom-batch   a model that fits, trained on batches that grow until one
              does not
  oom-leak    a training loop that keeps each step's output on the device
  oom-outside 768 MiB taken by another library (the CUDA runtime called
              through ctypes, outside PyTorch's allocator), then training
  oom-frag    tensors of alternating sizes, every other one freed, then one
              larger than any hole (fragmentation)
The OOM jobs print "oom at step N" and exit 1 when PyTorch raises
torch.cuda.OutOfMemoryError."""
import os
import sys

import torch
from torch import nn, optim

JOB = sys.argv[1]
FIXED = "fixed" in sys.argv[2:]
STEPS = int(os.environ.get("STEPS", "200"))
# PRINT_ALLOC=1 (pinned): "alloc STEP DEVICE_BYTES PINNED_BUFFERS" after each
# step: torch.cuda.memory_allocated() and the pinned buffers alive (weakly
# counted), to compare a run under leakwatch with a bare one step for step.
PRINT_ALLOC = os.environ.get("PRINT_ALLOC") == "1"
dev = torch.device("cuda")


def mlp(width, depth):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers).to(dev)


def train_step(model, opt, batch, width):
    x = torch.randn(batch, width, device=dev)
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=False)
    loss.backward()
    opt.step()
    return loss


def pinned():
    model = mlp(256, 2)
    opt = optim.SGD(model.parameters(), lr=0.01)
    kept, ring = [], []
    import weakref

    alive = weakref.WeakSet()
    for i in range(STEPS):
        loss = train_step(model, opt, 64, 256)
        if FIXED:
            if len(ring) < 4:
                ring.append(torch.empty(65536, pin_memory=True))
            buf = ring[i % 4]
        else:
            buf = torch.empty(65536, pin_memory=True)  # LEAK-PINNED
            kept.append(buf)
        buf[:1].copy_(loss.detach().reshape(1))
        if PRINT_ALLOC:
            alive.add(buf)
            del buf, loss
            print("alloc", i, torch.cuda.memory_allocated(), len(alive), flush=True)


def adam():
    model = mlp(512, 4)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    print("params:", sum(p.numel() for p in model.parameters()), flush=True)
    for _ in range(STEPS):
        train_step(model, opt, 32, 512)
    return model, opt  # kept to the end, as a script's globals are


def amp():
    model = mlp(512, 4)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    print("params:", sum(p.numel() for p in model.parameters()), flush=True)
    for _ in range(STEPS):
        x = torch.randn(32, 512, device=dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().square().mean()
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
    return model, opt


class _Lora(nn.Module):
    def __init__(self, width, rank):
        super().__init__()
        self.base = mlp(width, 4)
        for p in self.base.parameters():
            p.requires_grad_(False)  # frozen: reachable only through the module
        self.down = nn.Linear(width, rank, bias=False).to(dev)
        self.up = nn.Linear(rank, width, bias=False).to(dev)

    def forward(self, x):
        return self.base(x) + self.up(self.down(x))


def lora():
    model = _Lora(512, 8)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = optim.Adam(trainable, lr=1e-3)
    print("base:", sum(p.numel() for p in model.base.parameters()), flush=True)
    print("adapter:", sum(p.numel() for p in trainable), flush=True)
    for _ in range(STEPS):
        train_step(model, opt, 32, 512)
    return model, opt


def oom(run):
    try:
        run()
    except torch.cuda.OutOfMemoryError as e:
        print("oom:", str(e).splitlines()[0], flush=True)
        sys.exit(1)
    print("no oom", flush=True)


def oom_model():
    # 4 x 4096x4096 fp32 weights: 256 MiB; with gradients and Adam's two
    # moments, 1 GiB: more than the device.
    model = mlp(4096, 4)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    for i in range(STEPS):
        print("step", i, flush=True)
        train_step(model, opt, 8, 4096)


def oom_batch():
    model = mlp(1024, 4)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    batch = 64
    for i in range(STEPS):
        print("step", i, "batch", batch, flush=True)
        for _ in range(5):
            train_step(model, opt, batch, 1024)
        batch *= 2


def oom_leak():
    model = mlp(256, 2)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    kept = []
    for i in range(100000):
        x = torch.randn(256, 256, device=dev)
        out = model(x)
        loss = out.square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        kept.append(out.detach() * 1.0)  # LEAK-OUTPUTS: 256 KiB a step


def oom_outside():
    import ctypes

    torch.cuda.init()
    rt = ctypes.CDLL("libcudart.so.12")
    rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    held = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(held), 768 << 20) == 0  # LEAK-OUTSIDE
    model = mlp(1024, 4)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    for i in range(STEPS):
        print("step", i, flush=True)
        train_step(model, opt, 8192, 1024)


def oom_frag():
    model = mlp(256, 2)
    opt = optim.SGD(model.parameters(), lr=0.01)
    for _ in range(20):
        train_step(model, opt, 16, 256)
    # Blocks of 512 KiB, four to each 2 MiB segment of PyTorch's small pool,
    # until the device is nearly full; then three of each four freed: most
    # of the memory is reserved but unallocated, in 1.5 MiB holes that no
    # segment can give back, and a 256 MiB tensor fits in none.
    small = []
    while torch.cuda.mem_get_info()[0] > 48 * 1024 * 1024:
        small.append(torch.empty(128 * 1024, device=dev))  # 512 KiB
    small = small[::4]  # LEAK-FRAG: every fourth kept
    big = torch.empty(64 * 1024 * 1024, device=dev)  # 256 MiB
    return big, small


if __name__ == "__main__":
    if JOB == "pinned":
        pinned()
    elif JOB == "adam":
        kept = adam()
    elif JOB == "amp":
        kept = amp()
    elif JOB == "lora":
        kept = lora()
    elif JOB.startswith("oom-"):
        oom({"oom-model": oom_model, "oom-batch": oom_batch, "oom-leak": oom_leak,
             "oom-frag": oom_frag, "oom-outside": oom_outside}[JOB])
    else:
        sys.exit(f"unknown job {JOB}")
    print("done", flush=True)
