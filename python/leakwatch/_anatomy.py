# SPDX-License-Identifier: Apache-2.0
"""What fills the device, by role, and why it ran out (issue 40): the
PyTorch helper's part.

Roles. The optimizers and modules alive in the job (found through the
garbage collector's list of objects, at the moments below only: never per
step) give each device's weights (every parameter of every module, frozen
ones too -- a LoRA base -- and every parameter an optimizer holds),
gradients (their .grad) and optimizer state (the tensors of
optimizer.state, Adam's moments; its step counters live on the CPU unless
capturable or fused). Each storage is counted once
(untyped_storage().data_ptr(): views and tied weights share one). With
PyTorch's counters (allocated, reserved, their peaks) and the driver's free
and total memory they go to the library (leakwatch_torch_anatomy), which
adds activations, the cache, memory outside PyTorch and the leak.

When. At steps 1, 2, 4, 8, ... up to 1024, then every 1024 steps, each
once the job has run 399 times as long as the previous sample took since it
ended (a sample walks every object of the job: about 60 ms with PyTorch
imported; at most 0.25 % of the job's time, and no stall in its first steps,
whose pace the library measures); at the job's exit; and at out-of-memory: PyTorch's out-of-memory observer
(torch._C._cuda_attach_out_of_memory_observer, called by the caching
allocator after it freed its cache and still failed, before it raises
torch.cuda.OutOfMemoryError) hands the failing device and request over,
and the library writes its post-mortem report then.

Nothing here runs on the job's per-step path beyond one comparison; every
entry point catches its own errors. LEAKWATCH_TORCH_ANATOMY=0 turns all of
it off."""

import gc
import os
import sys
import time

# A sample may start once the job ran this many times as long as the
# previous one took, since it ended: at most 0.25 % of the job's time (1 %
# was 10 us of a 1 ms step, half of what leakwatch may add to it: issue 44).
BUDGET = 399

SAMPLE = 0
OOM = 1
OBSERVING = 2

# The values handed over, in this order (include/leakwatch.h).
FIELDS = ("weights", "gradients", "optimizer_state", "allocated", "reserved", "peak_allocated",
          "peak_reserved", "device_free", "device_total", "request")


def _enabled():
    v = os.environ.get("LEAKWATCH_TORCH_ANATOMY", "1").strip().lower()
    return v not in ("0", "false", "no", "off")


class _State:
    fn = None
    next_at = 1
    not_before = 0.0  # time.monotonic() of the next sample allowed
    observing = False
    off = not _enabled()


_s = _State()


def _lib():
    if _s.fn is None:
        import ctypes

        try:
            f = ctypes.CDLL(None).leakwatch_torch_anatomy
            f.restype = ctypes.c_int
            f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_longlong),
                          ctypes.c_int]
            _s.fn = f
        except (OSError, AttributeError, TypeError):
            _s.fn = False
    return _s.fn or None


def _tell(device, event, values):
    fn = _lib()
    if fn is None:
        return
    import ctypes

    arr = (ctypes.c_longlong * len(FIELDS))(*[int(values.get(k, -1)) for k in FIELDS])
    fn(device, event, arr, len(FIELDS))


def roles(torch):
    """{device index: {"weights", "gradients", "optimizer_state"}} in bytes,
    each storage once."""
    optimizer_type = getattr(getattr(torch, "optim", None), "Optimizer", None)
    module_type = getattr(getattr(torch, "nn", None), "Module", None)
    tensor_type = torch.Tensor
    optimizers, modules = [], []
    for o in gc.get_objects():
        # type(o), not isinstance: a module proxy's __class__ may warn.
        t = type(o)
        if optimizer_type is not None and issubclass(t, optimizer_type):
            optimizers.append(o)
        elif module_type is not None and issubclass(t, module_type):
            modules.append(o)
    seen = set()
    out = {}

    def add(t, role):
        if not isinstance(t, tensor_type) or not t.is_cuda:
            return
        try:
            st = t.untyped_storage()
            ptr, size = st.data_ptr(), st.nbytes()
        except Exception:
            return
        d = t.device.index or 0
        if not ptr or (d, ptr) in seen:
            return
        seen.add((d, ptr))
        r = out.setdefault(d, {"weights": 0, "gradients": 0, "optimizer_state": 0})
        r[role] += size

    params = []
    for opt in optimizers:
        for group in getattr(opt, "param_groups", ()):
            params.extend(group.get("params", ()))
    for m in modules:
        params.extend(getattr(m, "_parameters", {}).values())
    for p in params:
        add(p, "weights")
    for p in params:
        if p is not None:
            add(p.grad, "gradients")
    for opt in optimizers:
        for state in list(getattr(opt, "state", {}).values()):
            if isinstance(state, dict):
                for v in state.values():
                    add(v, "optimizer_state")
    return out


def _counters(torch, d):
    cuda = torch.cuda
    stats_of = getattr(torch._C, "_cuda_memoryStats", None)
    if stats_of is not None:
        st = stats_of(d)
        a, r = st["allocated_bytes"]["all"], st["reserved_bytes"]["all"]
        v = {"allocated": a["current"], "reserved": r["current"], "peak_allocated": a["peak"],
             "peak_reserved": r["peak"]}
    else:
        v = {"allocated": cuda.memory_allocated(d), "reserved": cuda.memory_reserved(d),
             "peak_allocated": cuda.max_memory_allocated(d),
             "peak_reserved": cuda.max_memory_reserved(d)}
    return v


def sample(torch, event=SAMPLE, device=None, request=-1, free=None, total=None):
    """Hands every used device's roles and counters to the library (or the
    one device of an out-of-memory, with its request)."""
    cuda = torch.cuda
    if not cuda.is_initialized():
        return
    by_device = roles(torch)
    devices = [device] if device is not None else range(cuda.device_count())
    for d in devices:
        v = _counters(torch, d)
        if device is None and not v["reserved"] and not v["allocated"]:
            continue  # never used by PyTorch's allocator: no context to touch
        v.update(by_device.get(d, {"weights": 0, "gradients": 0, "optimizer_state": 0}))
        if free is None or total is None:
            if not cuda.is_current_stream_capturing():
                v["device_free"], v["device_total"] = cuda.mem_get_info(d)
        else:
            v["device_free"], v["device_total"] = free, total
        v["request"] = request
        _tell(d, event, v)


NEVER = float("inf")


def after_mark(torch, steps):
    """The sparse schedule: steps 1, 2, 4, ..., 1024, then every 1024, at
    most 0.25 % of the job's time (BUDGET). Returns when it may have work
    again: the first step, and the time.monotonic() before which it has none
    (a step due waits for the budget). The helper calls it no sooner (two
    comparisons a step instead of a call)."""
    if _s.off:
        return NEVER, NEVER
    if steps < _s.next_at:
        return _s.next_at, _s.not_before
    t0 = time.monotonic()
    if t0 < _s.not_before:
        return steps, _s.not_before  # due, over the budget until then
    _s.next_at = steps * 2 if steps < 1024 else steps + 1024
    try:
        sample(torch)
    except Exception:
        _s.off = True
    t1 = time.monotonic()
    _s.not_before = t1 + BUDGET * (t1 - t0)
    return (NEVER, NEVER) if _s.off else (_s.next_at, _s.not_before)


def at_exit():
    torch = sys.modules.get("torch")
    if _s.off or torch is None:
        return
    try:
        sample(torch)
    except Exception:
        pass


def _observer(device, alloc, device_total, device_free):
    """PyTorch's out-of-memory observer (the allocator's lock released, the
    GIL held): the post-mortem, then PyTorch raises its error."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    try:
        sample(torch, OOM, device, alloc, device_free, device_total)
    except Exception:
        pass


def _attach():
    torch = sys.modules.get("torch")
    try:
        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
        if attach is None or _s.observing:
            return
        attach(_observer)
        _s.observing = True
        fn = _lib()
        if fn is not None:
            import ctypes

            fn(-1, OBSERVING, (ctypes.c_longlong * 1)(0), 0)
    except Exception:
        pass  # e.g. "cudaMallocAsync does not yet support attachOutOfMemoryObserver"


def install(cuda_module):
    """Once torch.cuda is importable: the observer is attached when CUDA
    initialises (torch.cuda._lazy_call), or now if it already has."""
    if _s.off or _s.observing or cuda_module is None:
        return
    lazy = getattr(cuda_module, "_lazy_call", None)
    try:
        if lazy is not None:
            lazy(_attach)
    except Exception:
        pass
