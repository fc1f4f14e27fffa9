# SPDX-License-Identifier: Apache-2.0
"""leakwatch's PyTorch helper, with no change to the job's code or to its
allocator. Installed at interpreter start by the shim's auto-start
(leakwatch/_autostart/sitecustomize.py), before torch can be imported.

It does five things:

1. Steps. torch.optim.optimizer.register_optimizer_step_post_hook (PyTorch
   >= 2.0, torch/optim/optimizer.py) runs a hook after every
   Optimizer.step() of every optimizer; GradScaler.step (torch/amp/
   grad_scaler.py) calls optimizer.step() only when no gradient is inf/NaN
   (_maybe_opt_step), so a skipped update runs no hook. The helper turns
   those calls into one mark per training iteration (LEAKWATCH_TORCH_STEPS=
   iteration, the default): an optimizer that has already stepped in the
   current iteration starts the next one, and the optimizer seen last before
   that repetition closes each iteration from then on (k optimizers: k calls,
   one mark; gradient accumulation: one optimizer.step() per update, one
   mark; GradScaler.step(opt) counts as opt's step whether or not it ran
   optimizer.step()). LEAKWATCH_TORCH_STEPS=optimizer marks every
   optimizer.step() instead.

2. Counters. At each mark it reads PyTorch's own counters for every device
   its allocator has used -- the bytes held by live tensors (what
   torch.cuda.memory_allocated(d) returns: "allocated_bytes.all.current" of
   torch._C._cuda_memoryStats(d), read directly to skip memory_stats'
   flattening and sorting) and the reserved bytes -- and hands them to the
   library (leakwatch_torch_counters). The driver's free memory is read at
   most once a second per device (torch.cuda.mem_get_info), for the
   out-of-memory projection; never while a stream is being captured.

3. Diagnosis window. When the library sees the tensor series of a device
   grow (the return value of leakwatch_torch_counters), the helper records
   PyTorch's allocation history for LEAKWATCH_TORCH_WINDOW steps
   (torch.cuda.memory._record_memory_history(enabled="all", context="alloc",
   stacks="python", max_entries=LEAKWATCH_TORCH_MAX_ENTRIES)), takes
   torch.cuda.memory._snapshot(), and turns recording off again. The
   allocations made in the window and still live at its end, grouped by
   Python stack, are the leaking sites (leakwatch_torch_info("sites")),
   each with the first frame in the user's own code as the place to look.
   A user who is already recording (torch._C._cuda_isHistoryEnabled()) is
   left alone: the helper only reads the snapshot, never turns recording on
   or off.

4. Backward. torch.autograd.backward and grad are wrapped (Tensor.backward
   looks the former up at each call, torch/_tensor.py): the library is told
   which thread waits in backward and from where (leakwatch_torch_backward),
   so that allocations made on autograd's engine threads, which carry no
   Python frame of the job, take that thread's stack; during a window the
   wrapper also notes each call's time and caller, so history sites made in
   backward are labelled "in backward, called from FILE:LINE".

5. Backend check (LEAKWATCH_TORCH_MODE=tensors). The backend in effect
   after import is torch.cuda.memory.get_allocator_backend(); when it is
   not cudaMallocAsync the switch did not take (a job that sets its own
   allocator configuration before importing torch, a PyTorch version that
   reads another variable): said once, and the helper works as in segments
   mode. The report's torch.backend records it either way.

Nothing here imports torch: the hooks are installed when the job imports
it. A failure in the helper never reaches the job (every entry point
catches its own exceptions and turns itself off).
"""

import bisect
import inspect
import json
import os
import sys
import sysconfig
import threading
import time
import traceback

import leakwatch

OPTIM = "torch.optim.optimizer"
AUTOGRAD = "torch.autograd"
SCALERS = ("torch.amp.grad_scaler", "torch.cuda.amp.grad_scaler")
TARGETS = (OPTIM, AUTOGRAD) + SCALERS

SITE_ID_BASE = 1 << 30  # ids of sites from PyTorch's history, apart from the library's
MAX_SITES = 20


def _env_int(name, default, lo, hi):
    try:
        v = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return v if lo <= v <= hi else default


def _steps_mode():
    v = os.environ.get("LEAKWATCH_TORCH_STEPS", "iteration").strip().lower()
    if v in ("0", "false", "no", "off"):
        return None
    return "optimizer" if v == "optimizer" else "iteration"


class _Lib:
    """The library's PyTorch entry points, through the global symbol scope."""

    def __init__(self):
        import ctypes

        self.counters = self.info = self.backward = None
        try:
            lib = ctypes.CDLL(None)
            c = lib.leakwatch_torch_counters
            c.restype = ctypes.c_int
            c.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_longlong]
            i = lib.leakwatch_torch_info
            i.restype = ctypes.c_int
            i.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
            b = lib.leakwatch_torch_backward
            b.restype = None
            b.argtypes = [ctypes.c_int]
            self.counters, self.info, self.backward = c, i, b
        except (OSError, AttributeError, TypeError):
            pass

    def tell(self, field, obj, message=None):
        if self.info is None:
            return -1
        text = json.dumps(obj, separators=(",", ":"), allow_nan=False, default=str)
        return self.info(field.encode(), text.encode(), message.encode() if message else None)


# ---- what counts as the user's own code ----


def _library_roots():
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            p = sysconfig.get_paths().get(key)
        except Exception:
            p = None
        if p:
            roots.add(os.path.realpath(p))
    for p in sys.path:
        if p and os.path.basename(p) in ("site-packages", "dist-packages"):
            roots.add(os.path.realpath(p))
    here = os.path.dirname(os.path.realpath(__file__))
    roots.add(here)  # leakwatch itself
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        roots.add(os.path.dirname(os.path.realpath(torch.__file__)))
    return tuple(sorted(roots))


def _user_code():
    """LEAKWATCH_USER_CODE (as src/base/where.h reads it): path prefixes (with
    a '/') or package names, separated by ':' or ','."""
    value = os.environ.get("LEAKWATCH_USER_CODE", "")
    return [e for e in value.replace(",", ":").split(":") if e]


_USER_CODE = _user_code()


def _is_user_file(path, roots, cache={}):
    r = cache.get(path)
    if r is None:
        if not path or path.startswith("<") or not os.path.isabs(path) and not os.path.exists(path):
            r = False
        else:
            real = os.path.realpath(path)
            r = not any(real == root or real.startswith(root + os.sep) for root in roots)
            for e in _USER_CODE:
                if ("/" in e and (path.startswith(e) or real.startswith(e))) or \
                        ("/" not in e and f"/{e}/" in real):
                    r = True
        cache[path] = r
    return r


def _frame_json(f):
    line = f.get("line")
    return {
        "kind": "python",
        "function": f.get("name"),
        "file": f.get("filename"),
        "line": line if isinstance(line, int) and line > 0 else None,
        "module": None,
        "address": None,
        "offset": None,
    }


def _label(f):
    """As the library labels a frame (src/base/where.c): "train.py:27 in train"."""
    return f"{os.path.basename(f.get('filename') or '?')}:{f.get('line')} in {f.get('name')}"


def _where(frames, look):
    """The place to look in the report's shape (a site's "where"): the first
    frame in the user's own code, else the innermost Python frame."""
    k, why = None, None
    if look is not None:
        k, why = frames.index(look), "user code"
    elif frames:
        k, why = 0, "innermost Python frame"
    if k is None:
        return None
    f = frames[k]
    line = f.get("line")
    return {"frame": k, "label": _label(f), "file": f.get("filename"),
            "line": line if isinstance(line, int) and line > 0 else None,
            "function": f.get("name"), "why": why}


def _short(f):
    return f"{os.path.basename(f.get('filename') or '?')}:{f.get('line')}"


# ---- the diagnosis window ----


def _call_accepted(fn, impl, **kw):
    """Calls fn with the keyword arguments that this PyTorch version's
    implementation (impl, or fn itself) accepts, the others dropped: the
    signatures of torch.cuda.memory's private functions change between
    versions, and an argument a version lacks raises TypeError."""
    try:
        params = inspect.signature(impl or fn).parameters
    except (TypeError, ValueError):
        params = {}
    if params and not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        kw = {k: v for k, v in kw.items() if k in params}
    return fn(**kw)


class _Window:
    def __init__(self, torch, device, steps, max_entries, lib, first_step):
        self.torch, self.device, self.steps, self.max_entries = torch, device, steps, max_entries
        self.lib, self.first_step = lib, first_step
        self.marks = []  # time (us) at each step mark in the window
        self.backward_calls = []  # (start_us, end_us, caller frames innermost first)
        self.ours = False
        self.start_us = time.time() * 1e6
        mem = torch.cuda.memory
        enabled = getattr(torch._C, "_cuda_isHistoryEnabled", None)
        self.user_recording = bool(enabled()) if enabled is not None else False
        if not self.user_recording:
            # clear_history: the window's events only (the user is not
            # recording; older events are also dropped by time in analyse).
            # Frames for allocations only (context="alloc"), and where
            # PyTorch has skip_actions (2.10+), no events the analysis does
            # not use: more steps fit in max_entries. Each argument is passed
            # only where this version's signature has it (2.6 has neither
            # clear_history nor skip_actions).
            _call_accepted(mem._record_memory_history,
                           getattr(mem, "_record_memory_history_impl", None),
                           enabled="all", context="alloc", stacks="python",
                           max_entries=max_entries, clear_history=True,
                           skip_actions=["free_requested", "segment_alloc", "segment_free",
                                         "snapshot"])
            self.ours = True


    def mark(self):
        self.marks.append(time.time() * 1e6)
        return len(self.marks) >= self.steps

    def close(self, step_now):
        """Takes the trace, turns recording off (if ours), returns the
        window's summary and its sites."""
        try:
            snap = self.torch.cuda.memory._snapshot()
        finally:
            if self.ours:
                self.torch.cuda.memory._record_memory_history(enabled=None)
        return self.analyse(snap, step_now)

    def analyse(self, snap, step_now):
        traces = snap.get("device_traces") or []
        trace = traces[self.device] if self.device < len(traces) else []
        times = [e.get("time_us") for e in trace if isinstance(e.get("time_us"), (int, float))]
        now = time.time() * 1e6
        # time_us is Unix time in microseconds (c10's ApproximateClock
        # converter); a trace on another clock is taken whole.
        comparable = bool(times) and abs(times[-1] - now) < 86400e6
        start = self.start_us if comparable else float("-inf")
        live = {}
        events = 0
        for e in trace:
            t = e.get("time_us", 0)
            if comparable and t < start:
                continue
            events += 1
            action = e.get("action")
            if action == "alloc":
                live[e.get("addr")] = e
            elif action in ("free_requested", "free_completed"):
                live.pop(e.get("addr"), None)
        truncated = len(trace) >= self.max_entries
        roots = _library_roots()
        marks = self.marks if comparable else []
        if truncated and marks:
            # The ring buffer kept only the newest events: the window is the
            # steps they cover.
            first = next((e.get("time_us", 0) for e in trace), 0)
            marks = [m for m in marks if m >= first]
        groups = {}
        for e in live.values():
            frames = e.get("frames") or []
            note = None
            t = e.get("time_us", 0)
            if not any(_is_user_file(f.get("filename"), roots) for f in frames):
                # Autograd's threads have no frame of the job: the backward()
                # running then names it.
                for s, end, caller in self.backward_calls:
                    if comparable and s <= t <= end:
                        look = next((f for f in caller if _is_user_file(f["filename"], roots)),
                                    None)
                        note = "in backward, called from " + (_short(look) if look else "?")
                        frames = frames + [{"filename": "<autograd engine>", "line": 0,
                                            "name": "backward"}] + caller
                        break
            key = (note,) + tuple((f.get("filename"), f.get("line"), f.get("name"))
                                  for f in frames)
            g = groups.get(key)
            if g is None:
                g = groups[key] = {"frames": frames, "note": note, "bytes": 0, "count": 0,
                                   "steps": set()}
            g["bytes"] += int(e.get("size") or 0)
            g["count"] += 1
            g["steps"].add(bisect.bisect_left(marks, t) if marks else 0)
        n = max(len(marks) if marks else len(self.marks), 1)
        sites = []
        for g in groups.values():
            steps = sorted(g["steps"])
            # Kept from allocations spread over the window, not one step's
            # worth still alive at its end.
            spread = steps[-1] - steps[0] if steps else 0
            if not (len(steps) >= 3 and spread >= n / 3) and marks:
                continue
            if not marks and g["count"] < 3:
                continue
            look = next((f for f in g["frames"] if _is_user_file(f.get("filename"), roots)), None)
            sites.append({
                "id": 0,
                "source": "pytorch_history",
                "kind": "pytorch_allocator",
                "device": self.device,
                "leak": True,
                "bytes_per_step": g["bytes"] / n,
                "live_bytes": g["bytes"],
                "live_count": g["count"],
                "alloc_count": g["count"],
                "alloc_bytes": g["bytes"],
                "free_count": 0,
                "failed_alloc_count": 0,
                "pooled": False,
                "window_steps_seen": len(steps),
                "place_to_look": {"file": look.get("filename"), "line": look.get("line"),
                                  "function": look.get("name")} if look else None,
                "where": _where(g["frames"], look),
                "note": g["note"],
                "frames": [_frame_json(f) for f in g["frames"]],
            })
        sites.sort(key=lambda s: -s["bytes_per_step"])
        sites = sites[:MAX_SITES]
        for i, s in enumerate(sites):
            s["id"] = SITE_ID_BASE + i
            s["rank"] = i + 1
        summary = {
            "device": self.device,
            "first_step": self.first_step,
            "last_step": step_now,
            "steps": len(self.marks),
            "recorded_by": "user" if self.user_recording else "leakwatch",
            "max_entries": self.max_entries,
            "events": events,
            "truncated": truncated,
            "steps_covered": len(marks) if marks else len(self.marks),
            "live_at_end": len(live),
            "sites": len(sites),
            "backward_calls": len(self.backward_calls),
        }
        return summary, sites


class _Helper:
    def __init__(self):
        self.lib = _Lib()
        self.mode = _steps_mode() or "iteration"
        self.window_steps = _env_int("LEAKWATCH_TORCH_WINDOW", 32, 0, 100000)
        self.max_entries = _env_int("LEAKWATCH_TORCH_MAX_ENTRIES", 100000, 1000, 100000000)
        self.lock = threading.Lock()
        self.mark_lock = threading.Lock()
        self.seen = []  # optimizers (ids) stepped in the current iteration
        self.closer = None  # the optimizer (id) that closes an iteration, once learnt
        self.in_scaler = threading.local()
        self.steps = 0
        self.optimizer_calls = 0
        self.skipped = 0
        self.devices = set()
        self.free_at = {}
        self.window = None
        self.windows = []
        self.next_window_at = 0
        self.windows_left = 2
        self.backend_checked = False
        self.async_backend = False
        self.off = False
        self.sites_told = 0

    # -- steps --

    def optimizer_step(self, optimizer, skipped=False):
        if getattr(self.in_scaler, "depth", 0):
            return  # GradScaler.step reports it once it returns
        if leakwatch.manual_steps:
            return
        with self.lock:
            self.optimizer_calls += 1
            self.skipped += bool(skipped)
            if self.mode == "optimizer":
                marks = 1
            else:
                marks = self._iteration(id(optimizer))
        for _ in range(marks):
            self.mark()

    def _iteration(self, key):
        """How many iterations end with this optimizer's step (0, 1 or 2)."""
        if self.closer is None:
            if key not in self.seen:
                self.seen.append(key)
                return 0
            # The first repetition: the previous optimizer closed the first
            # iteration, and closes every one from now on.
            self.closer = self.seen[-1]
            self.seen = [key]
            if key == self.closer:
                self.seen = []
                return 2
            return 1
        marks = 0
        if key in self.seen:  # the closer did not step this time: the iteration ended anyway
            marks += 1
            self.seen = []
        self.seen.append(key)
        if key == self.closer:
            marks += 1
            self.seen = []
        return marks

    def mark(self, manual=False):
        if not manual:
            leakwatch._auto_step()
        self.steps += 1
        # One thread at a time reads the counters and drives the window; a
        # mark from another thread meanwhile only counts. After an error of
        # its own the helper only marks steps.
        if self.off or not self.mark_lock.acquire(blocking=False):
            return
        try:
            self.after_mark()
        except Exception as e:  # never break the job
            self.off = True
            self._close_window_quietly()
            self.lib.tell("diagnosis", {"state": "off", "error": f"{type(e).__name__}: {e}"})
        finally:
            self.mark_lock.release()

    # -- counters and the window --

    def after_mark(self):
        torch = sys.modules.get("torch")
        if torch is None or self.lib.counters is None:
            return
        cuda = getattr(torch, "cuda", None)
        if cuda is None or not cuda.is_initialized():
            return
        if not self.backend_checked:
            self.check_backend(torch)
        capturing = cuda.is_current_stream_capturing()
        stats_of = getattr(torch._C, "_cuda_memoryStats", None)
        growing = []
        now = time.monotonic()
        for d in range(cuda.device_count()):
            if stats_of is not None:
                st = stats_of(d)
                allocated = st["allocated_bytes"]["all"]["current"]
                reserved = st["reserved_bytes"]["all"]["current"]
            else:
                allocated, reserved = cuda.memory_allocated(d), cuda.memory_reserved(d)
            if d not in self.devices:
                if not reserved and not allocated:
                    continue  # never used by PyTorch's allocator: no context to touch
                self.devices.add(d)
            free = -1
            if not capturing and now >= self.free_at.get(d, 0):
                self.free_at[d] = now + 1.0
                free = cuda.mem_get_info(d)[0]
            if self.lib.counters(d, allocated, reserved, free):
                growing.append(d)
        if capturing:
            return
        if self.window is not None:
            if self.window.mark():
                self.close_window()
        elif growing and self.may_open():
            self.open_window(torch, growing[0])

    def may_open(self):
        return (self.window_steps > 0 and not self.async_backend and self.windows_left > 0
                and self.steps >= self.next_window_at)

    def open_window(self, torch, device):
        try:
            self.window = _Window(torch, device, self.window_steps, self.max_entries, self.lib,
                                  self.steps)
        except RuntimeError as e:
            # e.g. "cudaMallocAsync does not yet support recordHistory": no window.
            self.windows_left = 0
            self.lib.tell("diagnosis", {"state": "unavailable", "error": str(e)})
            return
        self.windows_left -= 1
        self.lib.tell("diagnosis", {"state": "recording", "device": device,
                                    "first_step": self.steps, "window": self.window_steps})

    def close_window(self):
        w, self.window = self.window, None
        summary, sites = w.close(self.steps)
        summary["state"] = "done"
        self.windows.append(summary)
        if not sites:
            # Nothing kept across the window (growth outside tensors, or too
            # slow to show in it): one more try, later and longer.
            self.next_window_at = self.steps + 4 * self.window_steps
            self.window_steps *= 2
        else:
            self.windows_left = 0
        self.lib.tell("diagnosis", {**summary, "windows": self.windows})
        if sites and len(sites) >= self.sites_told:
            top = sites[0]
            where = top["where"]["label"] if top["where"] else "?"
            label = f"{where}{' (' + top['note'] + ')' if top['note'] else ''}"
            self.lib.tell("sites", sites, label)
            self.lib.tell("answer", {"site": top["id"], "where": top["where"]})
            self.sites_told = len(sites)

    def _close_window_quietly(self):
        w, self.window = self.window, None
        if w is None:
            return
        try:
            if w.ours:
                w.torch.cuda.memory._record_memory_history(enabled=None)
        except Exception:
            pass

    def at_exit(self):
        """An open window at the end of the job is closed with what it has."""
        if self.window is None or self.off:
            return
        try:
            if len(self.window.marks) >= 4:
                self.close_window()
            else:
                self._close_window_quietly()
        except Exception:
            self._close_window_quietly()

    def check_backend(self, torch):
        self.backend_checked = True
        try:
            backend = torch.cuda.memory.get_allocator_backend()
        except Exception as e:
            backend = f"unknown ({type(e).__name__})"
        requested = os.environ.get("LEAKWATCH_TORCH_MODE", "segments")
        self.async_backend = backend == "cudaMallocAsync"
        info = {"in_effect": backend, "requested_mode": requested,
                "mode": "tensors" if self.async_backend else "segments",
                "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
                "PYTORCH_ALLOC_CONF": os.environ.get("PYTORCH_ALLOC_CONF"),
                "torch_version": getattr(torch, "__version__", None)}
        message = None
        if requested == "tensors" and not self.async_backend:
            info["fell_back"] = True
            message = (f"LEAKWATCH_TORCH_MODE=tensors did not take: PyTorch's allocator backend "
                       f"is {backend} (the job's own allocator settings, read when torch was "
                       f"imported, win); working as in segments mode")
        self.lib.tell("backend", info, message)


_helper = None


def _get_helper():
    global _helper
    if _helper is None:
        _helper = _Helper()
        leakwatch._after_step = _after_manual_step
        import atexit

        atexit.register(_at_exit)
    return _helper


def _after_manual_step():
    """leakwatch.step() from the job: counters and window as for our own marks."""
    h = _helper
    if h is not None and not h.off:
        h.mark(manual=True)


def _at_exit():
    h = _helper
    if h is None:
        return
    try:
        torch = sys.modules.get("torch")
        if not h.backend_checked and not h.off and torch is not None:
            h.check_backend(torch)
        h.at_exit()
        h.lib.tell("steps", {"mode": h.mode, "marks": h.steps,
                             "optimizer_calls": h.optimizer_calls,
                             "skipped_by_grad_scaler": h.skipped})
    except Exception:
        pass


def _on_optimizer_step(optimizer, args, kwargs):
    try:
        _get_helper().optimizer_step(optimizer)
    except Exception:
        pass


def _wrap_scaler(module):
    """GradScaler.step(optimizer): one step attempt for that optimizer,
    whether or not it ran optimizer.step() (torch/amp/grad_scaler.py,
    _maybe_opt_step skips it when a gradient is inf/NaN)."""
    cls = getattr(module, "GradScaler", None)
    step = cls.__dict__.get("step") if cls is not None else None
    if step is None or getattr(step, "_leakwatch", False):
        return

    def wrapped(self, optimizer, *args, **kwargs):
        h = _get_helper()
        local = h.in_scaler
        local.depth = getattr(local, "depth", 0) + 1
        before = h.optimizer_calls
        hooks_before = _optimizer_hook_calls[0]
        try:
            return step(self, optimizer, *args, **kwargs)
        finally:
            local.depth -= 1
            try:
                skipped = _optimizer_hook_calls[0] == hooks_before
                if h.optimizer_calls == before:
                    h.optimizer_step(optimizer, skipped=skipped)
            except Exception:
                pass

    wrapped._leakwatch = True
    wrapped.__wrapped__ = step
    wrapped.__name__, wrapped.__qualname__, wrapped.__doc__ = (
        step.__name__, step.__qualname__, step.__doc__)
    cls.step = wrapped


def _wrap_autograd(module):
    """torch.autograd.backward and grad (Tensor.backward looks the former up
    at each call, torch/_tensor.py): the library learns which thread waits in
    backward and from where (leakwatch_torch_backward), and an open
    diagnosis window when each call ran and who made it."""
    for name in ("backward", "grad"):
        original = getattr(module, name, None)
        if original is None or getattr(original, "_leakwatch", False):
            continue

        def wrapped(*args, __original=original, **kwargs):
            h = _helper
            lib = h.lib if h is not None else None
            window = h.window if h is not None else None
            caller = traceback.extract_stack(sys._getframe(1)) if window is not None else None
            start = time.time() * 1e6
            if lib is not None and lib.backward is not None:
                lib.backward(1)
            try:
                return __original(*args, **kwargs)
            finally:
                if lib is not None and lib.backward is not None:
                    lib.backward(0)
                if caller is not None:
                    frames = [{"filename": fs.filename, "line": fs.lineno, "name": fs.name}
                              for fs in reversed(caller)]
                    window.backward_calls.append((start, time.time() * 1e6, frames))

        wrapped._leakwatch = True
        wrapped.__wrapped__ = original
        wrapped.__name__ = getattr(original, "__name__", name)
        wrapped.__qualname__ = getattr(original, "__qualname__", name)
        wrapped.__doc__ = getattr(original, "__doc__", None)
        setattr(module, name, wrapped)


# Post-hook calls seen, including those swallowed inside GradScaler.step.
_optimizer_hook_calls = [0]


def _counting_hook(optimizer, args, kwargs):
    _optimizer_hook_calls[0] += 1
    _on_optimizer_step(optimizer, args, kwargs)


_counting_hook._leakwatch = True


def _register_counting(module):
    register = getattr(module, "register_optimizer_step_post_hook", None)
    if register is None:
        return False
    hooks = getattr(module, "_global_optimizer_post_hooks", None)
    if hooks is not None and any(getattr(h, "_leakwatch", False) for h in list(hooks.values())):
        return True
    register(_counting_hook)
    return True


def _after_import(name, module):
    if name == OPTIM:
        _register_counting(module)
    elif name == AUTOGRAD:
        _get_helper()
        _wrap_autograd(module)
    else:
        _wrap_scaler(module)


class _Finder:
    _leakwatch = True

    def find_spec(self, name, path=None, target=None):
        if name not in TARGETS:
            return None
        spec = None
        for finder in sys.meta_path:
            if getattr(finder, "_leakwatch", False):
                continue
            find = getattr(finder, "find_spec", None)
            if find is not None:
                spec = find(name, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = getattr(loader, "exec_module", None)
        if run is None or getattr(run, "_leakwatch", False):
            return spec

        def exec_module(module):
            run(module)
            try:
                _after_import(name, module)
            except Exception:  # never break the job's import of torch
                pass

        exec_module._leakwatch = True
        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            pass  # a loader that takes no attributes: no automatic steps
        return spec


def install():
    """Idempotent; works whether torch is imported later (the usual case, from
    sitecustomize) or already was."""
    if _steps_mode() is None:
        return
    if not any(getattr(f, "_leakwatch", False) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    for name in TARGETS:
        module = sys.modules.get(name)
        if module is not None:
            _after_import(name, module)


def uninstall():
    """Takes everything install() put in place away again (leakwatch attach
    --detach): the finder, the optimizer hook, the wrapped autograd and
    GradScaler functions; the helper stops (no exit work)."""
    global _helper
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "_leakwatch", False)]
    optim = sys.modules.get(OPTIM)
    hooks = getattr(optim, "_global_optimizer_post_hooks", None) if optim is not None else None
    if hooks is not None:
        for key, hook in list(hooks.items()):
            if getattr(hook, "_leakwatch", False):
                hooks.pop(key, None)
    autograd = sys.modules.get(AUTOGRAD)
    for name in ("backward", "grad"):
        f = getattr(autograd, name, None) if autograd is not None else None
        if getattr(f, "_leakwatch", False):
            setattr(autograd, name, f.__wrapped__)
    for scaler in SCALERS:
        cls = getattr(sys.modules.get(scaler), "GradScaler", None)
        step = cls.__dict__.get("step") if cls is not None else None
        if getattr(step, "_leakwatch", False):
            cls.step = step.__wrapped__
    if _helper is not None:
        _helper.off = True
    _helper = None
