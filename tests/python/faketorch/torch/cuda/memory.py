# SPDX-License-Identifier: Apache-2.0
"""CUDA memory of the stand-in torch, behaving as PyTorch 2.11's allocators do
for everything leakwatch relies on. Device memory comes from the CPU stand-in
runtime ($LW_CUDART, tests/stubs/fake_cudart.c) through ctypes, so the shim
sees exactly the CUDA calls each backend makes.

Native backend (c10/cuda/CUDACachingAllocator.cpp):
  - sizes rounded up to 512 B (kMinBlockSize; round_size); requests up to
    1 MiB (kSmallSize) come from the small pool, whose segments are 2 MiB
    (kSmallBuffer); up to 10 MiB (kMinLargeAlloc) from 20 MiB segments
    (kLargeBuffer); larger ones get a segment rounded up to 2 MiB
    (kRoundLarge) (get_allocation_size). A segment is one cudaMalloc, kept in
    the cache when its blocks are freed (only empty_cache returns it).
  - memory_allocated = the bytes of allocated blocks ("allocated_bytes.all.
    current"), memory_reserved = the segments' bytes.
  - recordHistory(enabled, context, stacks, max_entries, clear_history):
    with enabled="all" every alloc / free_requested / free_completed /
    segment_alloc is a TraceEntry in a ring buffer of max_entries
    (RingBuffer::insertEntries overwrites the oldest); disabling clears it
    (DeviceCachingAllocator::recordHistory: `if (!enabled) alloc_trace->clear()`).
    Frames (context "alloc"/"all"/"state"; stacks="python") are the Python
    frames of the allocating thread, innermost first (torch/csrc/profiler/
    combined_traceback.cpp), as {"filename", "line", "name"}.
  - _snapshot() (torch/csrc/cuda/Module.cpp, _cuda_memorySnapshot): a dict
    with "segments" (address, total_size, stream, segment_type, allocated_size,
    active_size, blocks: size, requested_size, address, state, frames),
    "device_traces" (one list per device of {"action", "addr", "size",
    "stream", "time_us", "frames", "compile_context", "user_metadata"}),
    and "allocator_settings". time_us: Unix time in microseconds.
Async backend (c10/cuda/CUDAMallocAsyncAllocator.cpp), chosen by
"backend:cudaMallocAsync" in the allocator configuration: one
cudaMallocAsync per tensor (per-thread default stream: cudaMallocAsync_ptsz),
cudaFreeAsync when it dies, sizes not rounded; memory_allocated is the pool's
used memory. It raises, with PyTorch's own messages:
  recordHistory, checkPoolLiveAllocations, shareIpcHandle, getIpcDevPtr,
  attachOutOfMemoryObserver, attachAllocatorTraceTracker, createOrIncrefPool
  (MemPool / use_mem_pool), getCheckpointState, setCheckpointPoolState:
    "cudaMallocAsync does not yet support X. If you need it, please file an
     issue describing your use case."
  snapshot: "Calling snapshot with backend:cudaMallocAsync is not
    meaningful. (For backend:native, snapshot returns a detailed summary of
    all blocks tracked by the allocator, but the cudaMallocAsync backend does
    not track individual blocks.)"
and ignores native-only options with TORCH_WARN "backend:cudaMallocAsync
ignores max_split_size_mb,roundup_power2_divisions, and
garbage_collect_threshold." (c10/core/AllocatorConfig.cpp parseArgs).
"""
import ctypes
import os
import sys
import threading
import time
import warnings

kMinBlockSize = 512
kSmallSize = 1 << 20
kSmallBuffer = 2 << 20
kMinLargeAlloc = 10 << 20
kLargeBuffer = 20 << 20
kRoundLarge = 2 << 20

_vp = ctypes.c_void_p


class _Runtime:
    def __init__(self):
        rt = ctypes.CDLL(os.environ["LW_CUDART"])
        rt.cudaMalloc.argtypes = [ctypes.POINTER(_vp), ctypes.c_size_t]
        rt.cudaFree.argtypes = [_vp]
        rt.cudaMallocAsync_ptsz.argtypes = [ctypes.POINTER(_vp), ctypes.c_size_t, _vp]
        rt.cudaFreeAsync_ptsz.argtypes = [_vp, _vp]
        rt.cudaMemGetInfo.argtypes = [ctypes.POINTER(ctypes.c_size_t)] * 2
        rt.cudaMallocHost.argtypes = [ctypes.POINTER(_vp), ctypes.c_size_t]
        rt.cudaFreeHost.argtypes = [_vp]
        self.rt = rt

    def check(self, r, what):
        if r != 0:
            raise RuntimeError(f"CUDA error {r} in {what}")

    def malloc(self, n):
        p = _vp()
        self.check(self.rt.cudaMalloc(ctypes.byref(p), n), "cudaMalloc")
        return p.value

    def free(self, p):
        self.check(self.rt.cudaFree(p), "cudaFree")

    def malloc_async(self, n):
        p = _vp()
        self.check(self.rt.cudaMallocAsync_ptsz(ctypes.byref(p), n, None), "cudaMallocAsync")
        return p.value

    def free_async(self, p):
        self.check(self.rt.cudaFreeAsync_ptsz(p, None), "cudaFreeAsync")

    def mem_get_info(self):
        f, t = ctypes.c_size_t(), ctypes.c_size_t()
        self.check(self.rt.cudaMemGetInfo(ctypes.byref(f), ctypes.byref(t)), "cudaMemGetInfo")
        return f.value, t.value

    def host_alloc(self, n):
        p = _vp()
        self.check(self.rt.cudaMallocHost(ctypes.byref(p), n), "cudaMallocHost")
        return p.value

    def host_free(self, p):
        self.check(self.rt.cudaFreeHost(p), "cudaFreeHost")


_runtime = None


def runtime():
    global _runtime
    if _runtime is None:
        _runtime = _Runtime()
    return _runtime


# ---- the allocator configuration, read once as c10's static initializer does ----


def _tokens(conf):
    """AllocatorConfig::lexArgs: ',' ':' '[' ']' are tokens, spaces dropped."""
    out, buf = [], ""
    for c in conf:
        if c in ",:[]":
            if buf:
                out.append(buf)
                buf = ""
            out.append(c)
        elif c != " ":
            buf += c
    if buf:
        out.append(buf)
    return out


def _read_conf():
    # PyTorch 2.8-2.11 (c10/cuda/CUDAAllocatorConfig.h, instance()):
    # PYTORCH_CUDA_ALLOC_CONF, and PYTORCH_ALLOC_CONF only when it is unset.
    name, conf = "PYTORCH_CUDA_ALLOC_CONF", os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
    if conf is None:
        name, conf = "PYTORCH_ALLOC_CONF", os.environ.get("PYTORCH_ALLOC_CONF")
    backend, native_only, expandable = "native", False, False
    if conf is not None:
        if name == "PYTORCH_CUDA_ALLOC_CONF":
            print("[W AllocatorConfig.cpp:28] Warning: PYTORCH_CUDA_ALLOC_CONF is deprecated, "
                  "use PYTORCH_ALLOC_CONF instead (function operator())", file=sys.stderr)
        t = _tokens(conf)
        for i, tok in enumerate(t):
            if i + 2 < len(t) + 1 and i + 1 < len(t) and t[i + 1] == ":":
                value = t[i + 2] if i + 2 < len(t) else ""
                if tok == "backend":
                    if value not in ("native", "cudaMallocAsync"):
                        raise RuntimeError("Unknown allocator backend, options are native and "
                                           "cudaMallocAsync")
                    backend = value
                elif tok in ("max_split_size_mb", "roundup_power2_divisions",
                             "garbage_collection_threshold", "expandable_segments"):
                    native_only = True
                    if tok == "expandable_segments":
                        expandable = value == "True"
    if backend == "cudaMallocAsync" and native_only:
        warnings.warn("backend:cudaMallocAsync ignores max_split_size_mb,"
                      "roundup_power2_divisions, and garbage_collect_threshold.")
    return backend, conf or "", expandable


BACKEND, SETTINGS, EXPANDABLE = _read_conf()


def _not_supported(what):
    return RuntimeError(f"cudaMallocAsync does not yet support {what}. "
                        "If you need it, please file an issue describing your use case.")


def _python_frames(skip_torch=False):
    """The calling thread's Python frames, innermost first, as
    CapturedTraceback gathers them for stacks="python"."""
    f = sys._getframe(1)
    out = []
    while f is not None:
        out.append({"filename": f.f_code.co_filename, "line": f.f_lineno,
                    "name": f.f_code.co_name})
        f = f.f_back
    return out


def _now_us():
    return int(time.time() * 1e6)


class _Stat:
    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def add(self, n):
        self.current += n
        self.allocated += n
        self.peak = max(self.peak, self.current)

    def sub(self, n):
        self.current -= n
        self.freed += n

    def as_dict(self):
        return {"current": self.current, "peak": self.peak, "allocated": self.allocated,
                "freed": self.freed}


class _Block:
    __slots__ = ("seg", "offset", "size", "requested", "allocated", "frames")

    def __init__(self, seg, offset, size):
        self.seg, self.offset, self.size = seg, offset, size
        self.requested, self.allocated, self.frames = 0, False, []

    @property
    def addr(self):
        return self.seg.addr + self.offset


class _Segment:
    def __init__(self, addr, size, small, pool):
        self.addr, self.size, self.small, self.pool = addr, size, small, pool
        self.blocks = [_Block(self, 0, size)]


class NativeAllocator:
    name = "native"

    def __init__(self, device):
        self.device = device
        self.lock = threading.RLock()
        self.segments = []
        self.by_addr = {}
        self.allocated_bytes, self.reserved_bytes = _Stat(), _Stat()
        self.record = False
        self.context = None
        self.max_entries = sys.maxsize
        self.trace = []
        self.trace_next = 0
        self.skip = set()
        self.pool = (0, 0)  # the pool new allocations go to (graph capture: a private one)

    # -- history --

    def record_history(self, enabled, context, stacks, max_entries, clear_history,
                       skip_actions=()):
        with self.lock:
            self.skip = set(skip_actions or ())
            self.record = enabled == "all"
            self.context = context if enabled else None
            self.max_entries = max(1, max_entries)
            if not enabled or clear_history:
                self.trace, self.trace_next = [], 0

    def is_history_enabled(self):
        return self.record or self.context is not None

    def _event(self, action, addr, size, frames=None):
        if not self.record or action in self.skip:
            return
        e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": _now_us(),
             "compile_context": "", "user_metadata": ""}
        if frames:
            e["frames"] = frames
        if len(self.trace) < self.max_entries:
            self.trace.append(e)
        else:
            self.trace[self.trace_next] = e
            self.trace_next = (self.trace_next + 1) % self.max_entries

    def entries(self):
        return self.trace[self.trace_next:] + self.trace[:self.trace_next]

    # -- allocation --

    def malloc(self, nbytes):
        size = kMinBlockSize if nbytes < kMinBlockSize else \
            kMinBlockSize * ((nbytes + kMinBlockSize - 1) // kMinBlockSize)
        small = size <= kSmallSize
        frames = _python_frames()[1:] if self.context in ("alloc", "all", "state") else []
        with self.lock:
            best = None
            for seg in self.segments:
                if seg.small != small or seg.pool != self.pool:
                    continue
                for b in seg.blocks:
                    if not b.allocated and b.size >= size and (best is None or b.size < best.size):
                        best = b
            if best is None:
                alloc = kSmallBuffer if small else kLargeBuffer if size < kMinLargeAlloc else \
                    kRoundLarge * ((size + kRoundLarge - 1) // kRoundLarge)
                seg = _Segment(runtime().malloc(alloc), alloc, small, self.pool)
                self.segments.append(seg)
                self.reserved_bytes.add(alloc)
                self._event("segment_alloc", seg.addr, alloc, frames)
                best = seg.blocks[0]
            if best.size > size:
                seg = best.seg
                rest = _Block(seg, best.offset + size, best.size - size)
                seg.blocks.insert(seg.blocks.index(best) + 1, rest)
                best.size = size
            best.allocated, best.requested, best.frames = True, nbytes, frames
            self.by_addr[best.addr] = best
            self.allocated_bytes.add(size)
            self._event("alloc", best.addr, size, frames)
            return best.addr, size

    def free(self, addr):
        with self.lock:
            b = self.by_addr.pop(addr)
            b.allocated, b.frames = False, []
            self.allocated_bytes.sub(b.size)
            self._event("free_requested", addr, b.size)
            self._event("free_completed", addr, b.size)
            blocks = b.seg.blocks
            i = blocks.index(b)
            if i + 1 < len(blocks) and not blocks[i + 1].allocated:
                b.size += blocks.pop(i + 1).size
            if i > 0 and not blocks[i - 1].allocated:
                blocks[i - 1].size += blocks.pop(i).size

    def empty_cache(self):
        with self.lock:
            for seg in list(self.segments):
                if len(seg.blocks) == 1 and not seg.blocks[0].allocated:
                    self._event("segment_free", seg.addr, seg.size)
                    runtime().free(seg.addr)
                    self.reserved_bytes.sub(seg.size)
                    self.segments.remove(seg)

    def stats(self):
        z = _Stat().as_dict()
        return {
            "allocated_bytes": {"all": self.allocated_bytes.as_dict(), "small_pool": z,
                                "large_pool": z},
            "reserved_bytes": {"all": self.reserved_bytes.as_dict(), "small_pool": z,
                               "large_pool": z},
            "active_bytes": {"all": self.allocated_bytes.as_dict(), "small_pool": z,
                             "large_pool": z},
            "num_alloc_retries": 0,
            "num_ooms": 0,
        }

    def snapshot_segments(self):
        out = []
        with self.lock:
            for seg in self.segments:
                blocks = [{"address": b.addr, "size": b.size, "requested_size": b.requested,
                           "state": "active_allocated" if b.allocated else "inactive",
                           "frames": b.frames} for b in seg.blocks]
                used = sum(b.size for b in seg.blocks if b.allocated)
                out.append({"device": self.device, "address": seg.addr, "total_size": seg.size,
                            "stream": 0, "segment_type": "small" if seg.small else "large",
                            "segment_pool_id": seg.pool, "allocated_size": used,
                            "active_size": used, "requested_size": used, "blocks": blocks})
        return out

    # -- CUDA graphs: a private pool per capture (cudagraph trees) --

    def check_pool_live_allocations(self, pool, expected):
        with self.lock:
            live = {b.addr for seg in self.segments if seg.pool == pool for b in seg.blocks
                    if b.allocated}
            return live == set(expected)

    def share_ipc_handle(self, addr):
        return (b"cudaIpcMemHandle", 0)

    def create_or_incref_pool(self, pool):
        return None

    def attach_out_of_memory_observer(self, fn):
        return None

    def attach_allocator_trace_tracker(self, fn):
        return None


class AsyncAllocator:
    name = "cudaMallocAsync"

    def __init__(self, device):
        self.device = device
        self.pool = (0, 0)  # graph capture is accepted (beginAllocateToPool); the check is not
        self.lock = threading.RLock()  # reentrant for __del__ during a collection (see _alloc_lock)
        self.sizes = {}
        self.used = _Stat()

    def record_history(self, *args):
        raise _not_supported("recordHistory")

    def is_history_enabled(self):
        raise _not_supported("recordHistory")

    def malloc(self, nbytes):
        addr = runtime().malloc_async(nbytes)
        with self.lock:
            self.sizes[addr] = nbytes
            self.used.add(nbytes)
        return addr, nbytes

    def free(self, addr):
        with self.lock:
            self.used.sub(self.sizes.pop(addr))
        runtime().free_async(addr)

    def empty_cache(self):
        pass

    def stats(self):
        z = _Stat().as_dict()
        u = self.used.as_dict()
        return {"allocated_bytes": {"all": u, "small_pool": z, "large_pool": z},
                "reserved_bytes": {"all": u, "small_pool": z, "large_pool": z},
                "active_bytes": {"all": u, "small_pool": z, "large_pool": z},
                "num_alloc_retries": 0, "num_ooms": 0}

    def snapshot_segments(self):
        raise RuntimeError(
            "Calling snapshot with backend:cudaMallocAsync is not meaningful. (For "
            "backend:native, snapshot returns a detailed summary of all blocks tracked by the "
            "allocator, but the cudaMallocAsync backend does not track individual blocks.)")

    def check_pool_live_allocations(self, pool, expected):
        raise _not_supported("checkPoolLiveAllocations")

    def share_ipc_handle(self, addr):
        raise _not_supported("shareIpcHandle")

    def create_or_incref_pool(self, pool):
        raise _not_supported("createOrIncrefPool")

    def attach_out_of_memory_observer(self, fn):
        raise _not_supported("attachOutOfMemoryObserver")

    def attach_allocator_trace_tracker(self, fn):
        raise _not_supported("attachAllocatorTraceTracker")


_allocators = {}
# Reentrant: a tensor's __del__, run by the garbage collector while this
# thread holds the lock (a collection can start at any allocation), frees
# through allocator() again. A plain Lock deadlocked there (CPython 3.13).
_alloc_lock = threading.RLock()
initialized = False


def device_count():
    return int(os.environ.get("FAKETORCH_DEVICES", "1"))


def allocator(device):
    global initialized
    with _alloc_lock:
        a = _allocators.get(device)
        if a is None:
            a = _allocators[device] = (AsyncAllocator if BACKEND == "cudaMallocAsync"
                                       else NativeAllocator)(device)
            initialized = True
        return a


def _device(device):
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    idx = getattr(device, "index", None)
    return idx or 0


# ---- the public functions (torch/cuda/memory.py) ----


def memory_stats_as_nested_dict(device=None):
    if not initialized:
        return {}
    return allocator(_device(device)).stats()


def memory_allocated(device=None):
    return (memory_stats_as_nested_dict(device).get("allocated_bytes", {}).get("all", {})
            .get("current", 0))


def memory_reserved(device=None):
    return (memory_stats_as_nested_dict(device).get("reserved_bytes", {}).get("all", {})
            .get("current", 0))


def empty_cache():
    for a in list(_allocators.values()):
        a.empty_cache()


def get_allocator_backend():
    return BACKEND


def mem_get_info(device=None):
    return runtime().mem_get_info()


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                           device=None, clear_history=False, compile_context=False,
                           global_record_annotations=False, skip_actions=None, **kwargs):
    """skip_actions: TraceEntry actions not recorded (torch/cuda/memory.py,
    _record_memory_history_impl; "alloc", "free_requested", "free_completed",
    "segment_alloc", "segment_free", "oom", "snapshot")."""
    if isinstance(enabled, bool):  # the legacy signature
        enabled = "all" if enabled else None
    if BACKEND == "cudaMallocAsync":
        raise _not_supported("recordHistory")
    for d in range(device_count()):
        allocator(d).record_history(enabled, context, stacks, max_entries, clear_history,
                                    skip_actions)


def _snapshot(device=None, augment_with_fx_traces=False):
    segments, traces = [], []
    for d in range(device_count()):
        a = allocator(d)
        segments += a.snapshot_segments()
        traces.append(a.entries() if hasattr(a, "entries") else [])
    return {"segments": segments, "device_traces": traces,
            "allocator_settings": {"PYTORCH_ALLOC_CONF": SETTINGS,
                                   "expandable_segments": EXPANDABLE}}


def memory_snapshot(mempool_id=None, include_traces=True):
    return _snapshot()["segments"]


def _dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False):
    import pickle

    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


class MemPool:
    """torch.cuda.MemPool: a private pool (CUDACachingAllocator::
    createOrIncrefPool), refused by the async backend."""
    _next = [1]

    def __init__(self, allocator_=None):
        self.id = (0, MemPool._next[0])
        MemPool._next[0] += 1
        allocator(0).create_or_incref_pool(self.id)


class use_mem_pool:
    def __init__(self, pool, device=None):
        self.pool, self.device = pool, _device(device)

    def __enter__(self):
        a = allocator(self.device)
        self.saved, a.pool = a.pool, self.pool.id
        return self

    def __exit__(self, *exc):
        allocator(self.device).pool = self.saved
        return False
