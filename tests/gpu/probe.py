# SPDX-License-Identifier: Apache-2.0
"""One part of the GPU check (tests/gpu/check.py), run in its own process so
that a hang or a crash costs only that part. Prints one JSON object on its
last stdout line. Exit 0: ran; 1: failed; 3: the stand-in torch of a dry run
lacks an API this part needs (not a failure of leakwatch).

    python probe.py backend | compare STEPS | graph ALLOCS | snapshot | compile STEPS
"""
import ctypes
import json
import os
import sys
import time

MiB = 1 << 20
DRY = os.environ.get("LW_GPU_DRY") == "1"


def emit(obj, code=0):
    print(json.dumps(obj), flush=True)
    sys.exit(code)


try:
    import torch
except ImportError as e:
    emit({"error": f"import torch: {e}"}, 1)


def leakwatch_live():
    """Live bytes by kind from a report written now (leakwatch_dump), or None
    when the shim is not loaded."""
    path = os.environ.get("LEAKWATCH_REPORT")
    if not path or "LD_PRELOAD" not in os.environ:
        return None
    try:
        dump = ctypes.CDLL(None).leakwatch_dump
    except AttributeError:
        return None
    dump()
    try:
        with open(path) as f:
            rep = json.load(f)
    except (OSError, ValueError):
        return None
    kinds = rep.get("totals", {}).get("by_kind", {})
    out = {k: v.get("live_bytes", 0) for k, v in kinds.items()}
    out["mapped"] = rep.get("totals", {}).get("mapped_bytes", 0)
    out["unknown_frees"] = rep.get("totals", {}).get("unknown_free_count")
    return out


def backend():
    x = torch.empty(1024, device="cuda")
    del x
    get = getattr(torch.cuda, "get_allocator_backend", None) or torch.cuda.memory.get_allocator_backend
    emit(
        {
            "backend": get(),
            "PYTORCH_ALLOC_CONF": os.environ.get("PYTORCH_ALLOC_CONF"),
            "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
            "torch": getattr(torch, "__version__", "?"),
            "cuda": getattr(getattr(torch, "version", None), "cuda", None),
        }
    )


def compare(steps):
    """Each step keeps 1 MiB and frees a transient 8 MiB: the truth grows by
    1 MiB per step. One row per step: PyTorch's counters, the driver's used
    memory and leakwatch's live bytes."""
    kept, rows = [], []
    for step in range(steps):
        scratch = torch.empty(2 * MiB, dtype=torch.float32, device="cuda")
        kept.append(torch.empty(MiB // 4, dtype=torch.float32, device="cuda"))
        del scratch
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        rows.append(
            {
                "step": step,
                "allocated": torch.cuda.memory_allocated(),
                "reserved": torch.cuda.memory_reserved(),
                "driver_used": total - free,
                "leakwatch": leakwatch_live(),
            }
        )
    emit({"rows": rows, "backend": torch.cuda.get_allocator_backend()})


def graph(allocs):
    """A capture whose body allocates `allocs` intermediates, then replays."""
    static_in = torch.ones(4096, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = static_in
        for _ in range(3):
            y = y * 1.0001 + 1.0
    torch.cuda.current_stream().wait_stream(s)
    before = leakwatch_live()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = static_in
        for _ in range(allocs):
            y = y * 1.0001 + 1.0
        static_out = y
    captured = leakwatch_live()
    t0 = time.perf_counter()
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    replay_ms = (time.perf_counter() - t0) * 1e3 / 5
    after = leakwatch_live()
    value = float(static_out.sum().item()) if hasattr(static_out, "sum") else None
    del g, static_out, y
    torch.cuda.synchronize()
    emit(
        {
            "allocs": allocs,
            "replay_ms": round(replay_ms, 4),
            "value": value,
            "leakwatch_before": before,
            "leakwatch_captured": captured,
            "leakwatch_after_replay": after,
            "leakwatch_after_delete": leakwatch_live(),
            "allocated": torch.cuda.memory_allocated(),
            "reserved": torch.cuda.memory_reserved(),
        }
    )


def snapshot():
    mem = torch.cuda.memory
    mem._record_memory_history(enabled="all", stacks="python", max_entries=10000)
    xs = [torch.empty(k * 1024, device="cuda") for k in range(1, 65)]
    del xs[::2]
    snap = mem._snapshot()
    mem._record_memory_history(enabled=None)
    out = os.environ.get("LW_GPU_PART_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(snap, f, default=str)
    traces = snap.get("device_traces", [])
    emit(
        {
            "keys": sorted(snap.keys()),
            "segments": len(snap.get("segments", [])),
            "trace_events": sum(len(t) for t in traces),
            "leakwatch": leakwatch_live(),
        }
    )


def compile_steps(steps):
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    fn = torch.compile(model, mode="reduce-overhead")
    x = torch.randn(64, 256, device="cuda")
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        out = fn(x)
        out.sum().backward()
        opt.step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    emit({"steps": steps, "step_ms": [round(t, 3) for t in times], "leakwatch": leakwatch_live()})


def main():
    if len(sys.argv) < 2:
        emit({"error": __doc__}, 2)
    part, arg = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0
    fns = {
        "backend": backend,
        "compare": lambda: compare(arg or 20),
        "graph": lambda: graph(arg or 300),
        "snapshot": snapshot,
        "compile": lambda: compile_steps(arg or 5),
    }
    try:
        if not torch.cuda.is_available():
            emit({"error": "torch.cuda.is_available() is False"}, 1)
        fns[part]()
    except (AttributeError, ImportError, NotImplementedError, TypeError) as e:
        # A dry run's stand-in torch has only part of the API.
        emit({"error": f"{type(e).__name__}: {e}"}, 3 if DRY else 1)
    except Exception as e:  # noqa: BLE001 (reported, not hidden)
        emit({"error": f"{type(e).__name__}: {e}"}, 1)


if __name__ == "__main__":
    main()
