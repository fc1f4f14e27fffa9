# SPDX-License-Identifier: Apache-2.0
"""One part of the GPU check (tests/gpu/check.py), run in its own process so
that a hang or a crash costs only that part. Prints one JSON object on its
last stdout line. Exit 0: ran; 1: failed; 3: the stand-in torch of a dry run
lacks an API this part needs (not a failure of leakwatch).

    python probe.py backend | compare STEPS | graph ALLOCS | snapshot | compile STEPS | ipc MIB
"""
import ctypes
import json
import os
import subprocess
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
    out["imported"] = rep.get("totals", {}).get("imported", {}).get("live_bytes")
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


class IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


def runtime_library():
    """The CUDA runtime this process uses: torch's (found in the process's
    mappings once CUDA is up), or the stand-in of a dry run."""
    if DRY and os.environ.get("LW_CUDART"):
        return os.environ["LW_CUDART"]
    torch.zeros(1, device="cuda")
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "/libcudart.so" in path:
                return path
    return "libcudart.so"


# The exporter: a second process that allocates, sends its IPC handle and
# keeps the memory until told to go. The runtime only: no torch.
EXPORTER = r"""
import ctypes, sys
rt = ctypes.CDLL(sys.argv[1])
p = ctypes.c_void_p()
h = ctypes.create_string_buffer(64)
if rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(int(sys.argv[2]))) or rt.cudaIpcGetMemHandle(h, p):
    sys.exit(1)
print(h.raw.hex(), flush=True)
sys.stdin.readline()
"""


def ipc(mib):
    """Another process's memory opened here (cudaIpcOpenMemHandle): leakwatch
    must count it as imported, never as this process's device memory; and
    what the real driver answers to a process opening its own handle."""
    path = runtime_library()
    rt = ctypes.CDLL(path)
    rt.cudaIpcOpenMemHandle.argtypes = [ctypes.POINTER(ctypes.c_void_p), IpcHandle, ctypes.c_uint]
    rt.cudaIpcCloseMemHandle.argtypes = [ctypes.c_void_p]
    size = mib * MiB
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LEAKWATCH_REPORT")}
    child = subprocess.Popen([sys.executable, "-c", EXPORTER, path, str(size)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env, text=True)
    try:
        line = child.stdout.readline().strip()
        if len(line) != 128:
            emit({"error": "the exporter sent no handle", "runtime": path}, 1)
        handle = IpcHandle()
        ctypes.memmove(ctypes.byref(handle), bytes.fromhex(line), 64)
        # This process's own handle first (it also starts leakwatch): the
        # driver refuses it (notes: "invalid device context", 201).
        own, own_h, again = ctypes.c_void_p(), IpcHandle(), ctypes.c_void_p()
        rt.cudaMalloc(ctypes.byref(own), ctypes.c_size_t(MiB))
        rt.cudaIpcGetMemHandle(ctypes.byref(own_h), own)
        own_result = rt.cudaIpcOpenMemHandle(ctypes.byref(again), own_h, 1)
        rt.cudaFree(own)
        before = leakwatch_live()
        ptr = ctypes.c_void_p()
        opened = rt.cudaIpcOpenMemHandle(ctypes.byref(ptr), handle, 1)
        while_open = leakwatch_live()
        closed = rt.cudaIpcCloseMemHandle(ptr) if opened == 0 else None
        after = leakwatch_live()
    finally:
        try:
            child.stdin.write("done\n")
            child.stdin.close()
        except OSError:
            pass
        child.wait(timeout=30)
    problems = []
    if opened != 0:
        problems.append(f"cudaIpcOpenMemHandle returned {opened}")
    if "LD_PRELOAD" in os.environ and (before is None or while_open is None):
        problems.append("no report from leakwatch_dump")
    elif before is not None and while_open is not None and opened == 0:
        if (while_open.get("imported") or 0) - (before.get("imported") or 0) < size:
            problems.append("the import is not counted as imported")
        if while_open.get("device") != before.get("device"):
            problems.append("the import changed the device live bytes")
        if after and (after.get("imported") or 0) != (before.get("imported") or 0):
            problems.append("the close did not end the import")
    emit(
        {
            "runtime": path,
            "open_result": opened,
            "close_result": closed,
            "own_handle_open_result": own_result,
            "leakwatch_before": before,
            "leakwatch_open": while_open,
            "leakwatch_closed": after,
            "problems": problems,
        },
        1 if problems else 0,
    )


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
        "ipc": lambda: ipc(arg or 64),
    }
    try:
        # ipc needs only the CUDA runtime (a dry run's stand-in torch has no torch.cuda).
        if not (part == "ipc" and DRY) and not torch.cuda.is_available():
            emit({"error": "torch.cuda.is_available() is False"}, 1)
        fns[part]()
    except (AttributeError, ImportError, NotImplementedError, TypeError) as e:
        # A dry run's stand-in torch has only part of the API.
        emit({"error": f"{type(e).__name__}: {e}"}, 3 if DRY else 1)
    except Exception as e:  # noqa: BLE001 (reported, not hidden)
        emit({"error": f"{type(e).__name__}: {e}"}, 1)


if __name__ == "__main__":
    main()
