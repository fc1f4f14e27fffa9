# SPDX-License-Identifier: Apache-2.0
"""Real PyTorch (Debian trixie's 2.6 CUDA 12 build) on leakwatch's CPU stand-ins.

Plain Python, no pytest. Run inside the real-clients root with the stand-ins
first on the library path:

  sh scripts/in-real-root.sh /root/.cache/leakwatch/real-clients-amd64/root \
      LD_LIBRARY_PATH=$PWD/build/tests/lib python3 tests/real/torch_smoke.py

Kernels do nothing on the stand-ins (tensor values are meaningless), but
every allocation, free, segment and counter is PyTorch's own. Checks the seed
article's leak (total_loss += loss, loss_history.append(loss): one 512-byte
block per step), validation without no_grad, a DataLoader, AMP with
GradScaler and the allocator's history. Exits 0 when all hold.
"""
import os
import sys
import time
import warnings

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

STEPS = int(os.environ.get("TORCH_SMOKE_STEPS", "50"))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def model_and_opt():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()
    return model, torch.optim.Adam(model.parameters(), lr=1e-3), nn.CrossEntropyLoss()


def batch(n=32):
    return torch.randn(n, 64, device="cuda"), torch.randint(0, 10, (n,), device="cuda")


def seed_loop():
    """The seed's leak: every loss (and its graph root) kept alive."""
    model, opt, crit = model_and_opt()
    total_loss = 0
    loss_history = []
    allocated = []
    times = []
    for step in range(STEPS):
        t0 = time.perf_counter()
        x, y = batch()
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        total_loss += loss
        loss_history.append(loss)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        allocated.append(torch.cuda.memory_allocated())
        print(f"step {step:2d} memory_allocated {allocated[-1]}", flush=True)
    deltas = [b - a for a, b in zip(allocated[5:], allocated[6:])]
    print("per-step growth (steps 6..):", sorted(set(deltas)))
    # The native allocator rounds a kept scalar loss to one 512-byte block;
    # cudaMallocAsync counts what was asked for.
    want = 512 if torch.cuda.memory.get_allocator_backend() == "native" else 4
    check(all(d == want for d in deltas), f"the seed loop grows by {want} B per step")
    steady = sorted(times[5:])
    print(f"seed loop: median step {steady[len(steady) // 2] * 1e3:.2f} ms, "
          f"min {steady[0] * 1e3:.2f} ms, max {steady[-1] * 1e3:.2f} ms")
    return model, crit, loss_history


def validate_without_no_grad(model, crit, batches=20):
    """Every forward keeps its graph: memory grows per batch."""
    outputs = []
    before = torch.cuda.memory_allocated()
    model.eval()
    for _ in range(batches):
        x, y = batch()
        out = model(x)
        outputs.append(crit(out, y))
    grew = torch.cuda.memory_allocated() - before
    print(f"validation without no_grad: +{grew} B over {batches} batches")
    check(grew > 0, "validation without no_grad keeps graphs")
    model.train()
    return outputs


def dataloader_epoch(model, crit):
    x = torch.randn(256, 64)
    y = torch.randint(0, 10, (256,))
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n = 0
    for xb, yb in loader:
        xb, yb = xb.cuda(non_blocking=True), yb.cuda(non_blocking=True)
        opt.zero_grad()
        loss = crit(model(xb), yb)
        loss.backward()
        opt.step()
        n += 1
    check(n == 8, "the DataLoader gave 8 batches")
    print(f"DataLoader: {n} batches")


def amp_steps(model, crit):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()
    for _ in range(5):
        x, y = batch()
        opt.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = crit(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print(f"AMP: 5 GradScaler steps, scale {scaler.get_scale()}")


def graph_capture(model):
    """A CUDA graph of a forward pass: captured (not empty) and replayed."""
    static_x = torch.zeros(32, 64, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        model(static_x)  # warm-up outside the capture, as PyTorch asks
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.cuda.graph(graph):
            static_y = model(static_x)
    empty = [w for w in caught if "Graph is empty" in str(w.message)]
    check(not empty, "the captured graph has nodes")
    graph.replay()
    print(f"CUDA graph: captured and replayed, output {tuple(static_y.shape)}")


def history():
    if torch.cuda.memory.get_allocator_backend() != "native":
        print("snapshot: skipped (the cudaMallocAsync backend records no history)")
        return
    torch.cuda.memory._record_memory_history(
        enabled="all", context="all", stacks="python", max_entries=1000)
    kept = [torch.empty(1024, device="cuda") for _ in range(4)]
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    traces = snap.get("device_traces", [[]])
    allocs = [e for e in traces[0] if e.get("action") == "alloc"]
    print(f"snapshot: {len(snap.get('segments', []))} segments, "
          f"{len(traces[0])} trace events, {len(allocs)} allocs")
    check(len(allocs) >= 4, "the allocation history recorded the 4 tensors")
    frames = [f for e in allocs for f in e.get("frames", [])]
    check(any(f.get("filename", "").endswith("torch_smoke.py") for f in frames),
          "the history has this file's Python frames")
    del kept


def main():
    check(torch.cuda.is_available(), "torch.cuda.is_available()")
    if not torch.cuda.is_available():
        return 1
    props = torch.cuda.get_device_properties(0)
    print(f"torch {torch.__version__}, {torch.cuda.device_count()} device(s): {props}")
    check((props.major, props.minor) == (9, 0), "capability 9.0")
    check(props.multi_processor_count == 132, "132 SMs")
    model, crit, _kept = seed_loop()
    _outs = validate_without_no_grad(model, crit)
    dataloader_epoch(model, crit)
    amp_steps(model, crit)
    graph_capture(model)
    history()
    print(f"memory_allocated {torch.cuda.memory_allocated()}, "
          f"memory_reserved {torch.cuda.memory_reserved()}, "
          f"backend {torch.cuda.memory.get_allocator_backend()}")
    print("torch_smoke:", "FAILED " + "; ".join(failures) if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
