# SPDX-License-Identifier: Apache-2.0
"""leakwatch's PyTorch helper, with no change to the job's code or to its
allocator. Installed at interpreter start by the shim's auto-start
(leakwatch/_autostart/sitecustomize.py), before torch can be imported.

It does six things:

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

2. Counters. At a mark it reads PyTorch's own counters for every device
   its allocator has used -- the bytes held by live tensors (what
   torch.cuda.memory_allocated(d) returns: "allocated_bytes.all.current" of
   torch._C._cuda_memoryStats(d), read directly to skip memory_stats'
   flattening and sorting; PyTorch 2.6 has no cheaper call that gives them)
   and the reserved bytes -- and hands them to the library
   (leakwatch_torch_counters). The read costs tens of microseconds (it builds
   the allocator's whole statistics dictionary), so it is timed, and the next
   one waits until READ_BUDGET times that cost has passed: at most 0.25 % of
   the job's time, every step of a step slower than that, fewer points (each
   at its own step number) for faster ones. The first ALWAYS_READ marks are
   all read (a short job keeps every point; the detector needs 24). A
   device PyTorch's allocator has not used yet is looked at on the first
   UNUSED_FIRST reads, then at every UNUSED_EVERY-th (each look builds its
   statistics dictionary too): a device taken into use later is seen
   within that many reads. The driver's free memory is read at
   most once a second per device (torch.cuda.mem_get_info), for the
   out-of-memory projection; never while a stream is being captured.

3. Diagnosis window. When the library sees the tensor series of a device
   grow (the return value of leakwatch_torch_counters), the helper records
   PyTorch's allocation history for LEAKWATCH_TORCH_WINDOW steps
   (torch.cuda.memory._record_memory_history(enabled="all", context="alloc",
   stacks="python", max_entries=LEAKWATCH_TORCH_MAX_ENTRIES)), takes
   torch.cuda.memory._snapshot(), and turns recording off again. The
   allocations made in the window and still live at its end, grouped by
   Python stack, are the leaking sites (leakwatch_torch_values("sites"),
   values by their report paths: the library shapes the JSON and says the
   labels and owner sentences), each with the first frame in the user's own
   code as the place to look.
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

6. Steps without an optimizer (_ModuleSteps). A job that never calls
   optimizer.step() (an inference server, an evaluation or generation loop)
   gets a step per call of its outermost nn.Module: global forward hooks
   find the first call not nested in another module's call of a module with
   parameters, then give way to a forward pre-hook on that module alone. A
   backward, an optimizer step or leakwatch.step() turns them off. The
   counters and the window follow these marks; the report's growth.step_unit
   says "module_call" (leakwatch_torch_step_unit).

Nothing here imports torch: the hooks are installed when the job imports
it. A failure in the helper never reaches the job (every entry point
catches its own exceptions and turns itself off).
"""

import array
import bisect
import collections
import functools
import inspect
import itertools
import linecache
import os
import re
import sys
import sysconfig
import threading
import time
import traceback
import types

# The leakwatch package this module belongs to, whatever its name: the
# library's auto-start and attach load it as _leakwatch_helper (never as
# "leakwatch", which may be the job's own module), a job as leakwatch.
leakwatch = sys.modules[__name__.rpartition(".")[0]]

OPTIM = "torch.optim.optimizer"
AUTOGRAD = "torch.autograd"
NN_MODULE = "torch.nn.modules.module"
SCALERS = ("torch.amp.grad_scaler", "torch.cuda.amp.grad_scaler")
TARGETS = (OPTIM, AUTOGRAD, NN_MODULE) + SCALERS

# The counters' read (point 2) takes at most 1/READ_BUDGET of the job's time,
# after the first ALWAYS_READ marks (all read: a short job keeps every point).
# 0.25 %: a read costs 12-20 us, so on a 1 ms step 1 % was 6-10 us a step,
# half of what leakwatch may add to it (issue 44); past the first marks the
# detector's bins hold many points each, so one every few steps loses
# nothing it uses, and a step of 5 ms or more is still read at every mark.
READ_BUDGET = 400
ALWAYS_READ = 200
# Under leakwatch's test clock (LEAKWATCH_TEST_CLOCK=1, tests only) every
# mark is read: a run's points then do not depend on the machine's speed or
# load (the budget itself is tested on a clock of its own,
# tests/python/counter_budget.py).
READ_EVERY_MARK = os.environ.get("LEAKWATCH_TEST_CLOCK") == "1"
# Devices not used yet (point 2): looked at on the first UNUSED_FIRST reads,
# then at every UNUSED_EVERY-th.
UNUSED_FIRST = 8
UNUSED_EVERY = 16

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

        self.counters = self.backward = None
        self.backward_enter = self.backward_leave = None
        try:
            lib = ctypes.CDLL(None)
            # Short calls that never wait for the GIL: made without releasing it.
            c = ctypes.PyDLL(None).leakwatch_torch_counters
            c.restype = ctypes.c_int
            c.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_longlong]
            b = lib.leakwatch_torch_backward
            b.restype = None
            b.argtypes = [ctypes.c_int]
            self.counters, self.backward = c, b
            self.backward_enter = functools.partial(b, 1)
            self.backward_leave = functools.partial(b, 0)
        except (OSError, AttributeError, TypeError):
            pass
        fast = leakwatch._builtins()
        if fast is not None and self.backward is not None:
            self.backward_enter, self.backward_leave = fast[1], fast[2]
        self.step_unit = None
        try:
            u = ctypes.CDLL(None).leakwatch_torch_step_unit
            u.restype = ctypes.c_int
            u.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
            self.step_unit = u
        except (OSError, AttributeError, TypeError):
            pass
        self.values = None
        try:
            v = ctypes.CDLL(None).leakwatch_torch_values_packed
            v.restype = ctypes.c_int
            v.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t,
                          ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                          ctypes.POINTER(ctypes.c_double), ctypes.c_char_p, ctypes.c_size_t,
                          ctypes.c_int, ctypes.c_char_p]
            self.values = v
        except (OSError, AttributeError, TypeError):
            pass
        self.host_blocks = None
        try:
            h = ctypes.CDLL(None).leakwatch_torch_host_blocks
            h.restype = ctypes.c_int
            h.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int,
                          ctypes.POINTER(ctypes.c_uint)]
            self.host_blocks = h
        except (OSError, AttributeError, TypeError):
            pass

    HOST_BLOCKS = 65536  # blocks handed over at most

    def pinned_leak_blocks(self):
        """(site id, [(address, size), ...]) of the leaking site that holds
        pinned host memory (leakwatch_torch_host_blocks), or None."""
        if self.host_blocks is None:
            return None
        import ctypes

        pairs = (ctypes.c_ulonglong * (2 * self.HOST_BLOCKS))()
        site = ctypes.c_uint(0)
        n = self.host_blocks(pairs, self.HOST_BLOCKS, ctypes.byref(site))
        if n <= 0:
            return None
        return site.value, [(pairs[2 * k], pairs[2 * k + 1]) for k in range(n)]

    # Where each section's values lie in the report (leakwatch_torch_values).
    SECTIONS = {"sites": "sites", "diagnosis": "torch.diagnosis", "backend": "torch.backend",
                "steps": "torch.steps", "host_owner": "sites"}

    def tell(self, section, obj, message=None, site=0):
        """Hands obj (dicts, lists, numbers, strings, booleans, None) to the
        library as values by their report paths (leakwatch_torch_values_packed):
        the library shapes the JSON and composes the labels and the owner
        sentences. host_owner: obj is the members of the library's site
        `site`. Returns the library's answer, or -1 when it lacks the entry."""
        if self.values is None:
            return -1
        import ctypes

        try:  # never a failure of the job's: called from its handlers too
            paths, cells, nums, texts = _pack(self.SECTIONS[section],
                                              [obj] if section == "host_owner" else obj)
            n = len(nums)
            c = (ctypes.c_int * len(cells)).from_buffer(cells) if n else None
            x = (ctypes.c_double * n).from_buffer(nums) if n else None
            texts = b"".join(texts)
            blob = b"\0".join(paths) + b"\0"
            return self.values(section.encode(), site, blob, len(blob), len(paths), c, x, texts,
                               len(texts), n, message.encode() if message else None)
        except Exception:
            return -1


_PATHS = {}  # (path, key) -> "path.key", (path, None) -> "path[]": the same few paths again


def _text_bytes(s):
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "replace")


def _pack(root, obj):
    """obj's plain values, by path ("sites[].owners[].count", one position
    per "[]"; an empty list or dict as the container itself), packed for
    leakwatch_torch_values_packed: (the distinct paths, 6 ints per value:
    the path's number, its 3 positions, its type, its text's length or -1;
    a number per value; the texts end to end). Array appends in one
    function, not a ctypes structure or a call per value: a window's sites
    are thousands of values."""
    ids, paths, texts = {}, [], []
    cells, nums = array.array("i"), array.array("d")
    put, num, text, get, join = cells.extend, nums.append, texts.append, ids.get, _PATHS.get
    containers = (dict, list, tuple)

    def leaf(path, i0, i1, i2, v):
        pid = get(path)
        if pid is None:
            pid = ids[path] = len(paths)
            paths.append(path.encode())
        t = type(v)
        if t is str:
            b = _text_bytes(v)
            put((pid, i0, i1, i2, 3, len(b)))
            num(0.0)
            text(b)
            return
        if v is None:
            put((pid, i0, i1, i2, 0, -1))
            num(0.0)
            return
        if t is bool:
            put((pid, i0, i1, i2, 1, -1))
            num(1.0 if v else 0.0)
            return
        if t in containers:  # empty: the container itself
            put((pid, i0, i1, i2, 5 if t is dict else 4, -1))
            num(0.0)
            return
        if isinstance(v, (int, float)):
            try:
                x = float(v)
            except OverflowError:
                x = float("inf")
            put((pid, i0, i1, i2, 2 if x - x == 0 else 0, -1))  # not finite: null
            num(x)
            return
        leaf(path, i0, i1, i2, str(v))

    def walk(path, v, i0, i1, i2):
        t = type(v)
        if t is dict and v:
            for k, x in v.items():
                sub = join((path, k))
                if sub is None:
                    sub = _PATHS[(path, k)] = f"{path}.{k}"
                tx = type(x)
                if tx is str:  # the most common leaves, here without a call
                    pid = get(sub)
                    if pid is not None:
                        try:
                            b = x.encode("utf-8", "surrogateescape")
                        except UnicodeEncodeError:
                            b = x.encode("utf-8", "replace")
                        put((pid, i0, i1, i2, 3, len(b)))
                        num(0.0)
                        text(b)
                        continue
                elif x is None:
                    pid = get(sub)
                    if pid is not None:
                        put((pid, i0, i1, i2, 0, -1))
                        num(0.0)
                        continue
                if tx in containers and x:
                    walk(sub, x, i0, i1, i2)
                else:
                    leaf(sub, i0, i1, i2, x)
        elif (t is list or t is tuple) and v:
            sub = join((path, None))
            if sub is None:
                sub = _PATHS[(path, None)] = path + "[]"
            for i, x in enumerate(v):
                if i0 < 0:
                    walk(sub, x, i, -1, -1)
                elif i1 < 0:
                    walk(sub, x, i0, i, -1)
                else:
                    walk(sub, x, i0, i1, i)
        else:
            leaf(path, i0, i1, i2, v)

    walk(root, obj, -1, -1, -1)
    return paths, cells, nums, texts


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
    """LEAKWATCH_USER_CODE (as src/vocab/where.h reads it): path prefixes (with
    a '/') or package names, separated by ':' or ','."""
    value = os.environ.get("LEAKWATCH_USER_CODE", "")
    return [e for e in value.replace(",", ":").split(":") if e]


_USER_CODE = _user_code()


# ---- the one rule of "user code" (src/base/where.c, lw_frame_classify) ----
# The library decides (leakwatch_user_code) whenever it is loaded, so the
# helper names the frame the reports name. Without it (the helper imported
# in a process without the library) the copy below, which follows where.c
# line by line; tests/unit/test_where.c checks that both agree on the same
# paths (tests/python/user_code_rule.py).


def _under_python_lib(p):
    """"/lib/python3.11/" and the like: the standard library and every
    package installed under it."""
    q = p.find("python")
    while q >= 0:
        if q >= 5 and p[q - 5:q] in ("/lib/", "lib64") and p[q + 6:q + 7].isdigit():
            return True
        q = p.find("python", q + 1)
    return False


def _has_component(p, name):
    q = p.find(name)
    while q >= 0:
        if q == 0 or p[q - 1] == "/":
            rest = p[q + len(name):]
            if rest.startswith("/") or rest == ".py":
                return True
        q = p.find(name, q + 1)
    return False


def _entry_matches(e, path):
    if not path or not e:
        return False
    if "/" in e:
        return path.startswith(e)
    if _has_component(path, e):
        return True
    b = os.path.basename(path)
    if b.startswith(e) and b[len(e):len(e) + 1] in ("", ".", "-"):
        return True
    n = len(e) + 3
    return b.startswith("lib" + e) and b[n:n + 1] in (".", "-", "_") and len(b) > n


def _leakwatch_python(p):
    b = os.path.basename(p)
    d = p[:len(p) - len(b)]
    return d.endswith("leakwatch/") and (d == "leakwatch/" or d.endswith("/leakwatch/")) and \
        b in ("__init__.py", "__main__.py", "_torch.py")


def _user_code_rule(path, user_code=None):
    """1 when a Python frame in path is user code, as where.c decides."""
    for e in _USER_CODE if user_code is None else user_code:
        if _entry_matches(e, path):
            return True
    if not path:
        return False
    if path.startswith("<"):
        return False
    if "/site-packages/" in path or "/dist-packages/" in path or _under_python_lib(path):
        return False
    if _leakwatch_python(path):
        return False
    if _has_component(path, "torch"):
        return False
    return True


_c_rule = [None, None]  # the library's function; when it was last looked for


def _c_user_code(path):
    """The library's decision (None: the library is not loaded; it is looked
    for again at most once a second, as leakwatch attach loads it later)."""
    fn, at = _c_rule
    now = time.monotonic()
    if fn is None and (at is None or now - at >= 1.0):
        try:
            import ctypes
            fn = ctypes.CDLL(None).leakwatch_user_code
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_char_p]
        except Exception:
            fn = None
        _c_rule[:] = [fn, now]
    if fn is None or path is None:
        return None
    try:
        return bool(fn(os.fsencode(path)))
    except Exception:
        return None


def _is_user_file(path, roots=None, cache={}):
    """Whether a frame in path is the user's own code: the library's rule
    (where.c), or its copy here until the library is there. roots: unused
    (kept for callers)."""
    r = cache.get(path)
    if r is None:
        r = _c_user_code(path)
        if r is not None:
            cache[path] = r
        else:
            r = _user_code_rule(path)
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
    # Its label is the library's, from file, line and function (where.c).
    return {"frame": k, "file": f.get("filename"),
            "line": line if isinstance(line, int) and line > 0 else None,
            "function": f.get("name"), "why": why}


def _short(f):
    return f"{os.path.basename(f.get('filename') or '?')}:{f.get('line')}"


# ---- who keeps the leak alive ----

_SKIP_TYPES = (str, bytes, bytearray, int, float, complex, bool, type(None), type,
               types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
               types.CodeType, types.FrameType, range, memoryview)
_SCALARS = frozenset((str, bytes, int, float, complex, bool, type(None)))
_GROWS = (r"\b{name}(\s*\[[^\]]*\])*\s*(\.\s*(append|extend|add|insert|appendleft|update|"
          r"setdefault)\s*\(|\+=|\[[^\]]*\]\s*=)")


_FORMAT_BYTES = []  # the library's leakwatch_format_bytes, looked up once (None: absent)


def _fmt_bytes(n):
    """A size as the library prints it (leakwatch_format_bytes: the one copy
    of the rule, src/vocab/fmt.c); the exact count of bytes where the library
    is not loaded."""
    import ctypes

    if not _FORMAT_BYTES:
        f = None
        try:
            f = ctypes.CDLL(None).leakwatch_format_bytes
            f.restype = ctypes.c_int
            f.argtypes = [ctypes.c_double, ctypes.c_char_p, ctypes.c_size_t]
        except (OSError, AttributeError, TypeError):
            f = None
        _FORMAT_BYTES.append(f)
    f = _FORMAT_BYTES[0]
    if f is not None:
        buf = ctypes.create_string_buffer(48)
        try:
            if f(float(n), buf, len(buf)) > 0:
                return buf.value.decode("ascii", "replace")
        except (ctypes.ArgumentError, TypeError, ValueError, OverflowError):
            pass
    try:
        return f"{int(n):,} B"
    except (TypeError, ValueError, OverflowError):
        return "?"


def _node_name(node):
    n = getattr(node, "name", None)
    try:
        return n() if callable(n) else str(n or type(node).__name__)
    except Exception:
        return type(node).__name__


class _Root:
    """One name the user wrote: a local of a frame or a global of a module."""

    __slots__ = ("name", "scope", "function", "file", "line", "code", "value", "holders",
                 "tensors", "bytes", "blocks", "saved_alive", "saved_freed", "graph_nodes",
                 "node_names", "passes", "scalars", "with_graph", "graph_root", "tensor_names")

    def __init__(self, name, scope, function, file, line, code, value):
        self.name, self.scope, self.function = name, scope, function
        self.file, self.line, self.code, self.value = file, line, code, value
        self.holders = {}  # path -> [tensors, bytes, kind]
        self.tensors = self.bytes = self.saved_alive = self.saved_freed = 0
        self.graph_nodes = self.passes = self.scalars = self.with_graph = 0
        self.blocks = {}  # site index -> bytes
        self.node_names = {}
        self.graph_root = None  # (nodes, passes, top node name) of the root tensor's own graph
        self.tensor_names = ()  # the frame's locals bound to tensors


class _OwnerSearch:
    """Finds, from the names the user wrote (the locals of the user's frames
    on every thread, the globals of the user's modules), the objects that
    keep the leaking sites' live blocks alive: tensors whose storage lies in
    a block, directly or through containers and object attributes, and
    autograd graphs whose saved tensors do. Bounded by an object count, a
    graph node count and a time budget; the walk calls no user code (only
    builtin containers and instance __dict__ are entered)."""

    MAX_DEPTH = 16
    MAX_ITEMS = 100000  # elements taken from one container

    def __init__(self, torch, site_blocks, budget_s, max_objects, max_nodes, roots):
        self.torch = torch
        self.Tensor = torch.Tensor
        try:
            self.Module = torch.nn.Module
        except Exception:
            self.Module = None
        starts = []
        for i, blocks in enumerate(site_blocks):
            for addr, size in blocks:
                if isinstance(addr, int) and size:
                    starts.append((addr, int(size), i))
        starts.sort()
        self.starts = starts
        self.keys = [s[0] for s in starts]
        self.deadline = time.monotonic() + budget_s
        self.max_objects, self.max_nodes = max_objects, max_nodes
        self.objects = self.nodes = 0
        self.out_of_budget = None
        self.roots = roots
        self.seen = set()
        self.seen_nodes = {}
        self.via = {}  # holder path -> how it is reached when not by the root's own name
        self.counted_blocks = set()
        self.saved_attrs = {}

    def block_of(self, ptr):
        k = bisect.bisect_right(self.keys, ptr) - 1
        if k >= 0:
            addr, size, site = self.starts[k]
            if addr <= ptr < addr + size:
                return addr, size, site
        return None

    def storage(self, t):
        """(address, bytes) of a CUDA tensor's storage, or None."""
        try:
            return _storage_of(t) if t.is_cuda else None
        except Exception:
            return None

    def budget_left(self):
        if self.out_of_budget:
            return False
        if self.objects >= self.max_objects:
            self.out_of_budget = "objects"
        elif self.nodes >= self.max_nodes:
            self.out_of_budget = "graph_nodes"
        elif time.monotonic() > self.deadline:
            self.out_of_budget = "time"
        return not self.out_of_budget

    def count(self, root, path, kind, t, via_graph):
        """Counts t's storage (once) for the holder path of root; returns
        the leaking block it lies in, if any."""
        st = self.storage(t)
        if st is None or st[0] in self.counted_blocks:
            return None
        ptr, nbytes = st
        # As the native caching allocator holds it: whole 512-byte blocks
        # (kMinBlockSize; the diagnosis window runs only on that backend).
        nbytes = max(512, (nbytes + 511) // 512 * 512)
        self.counted_blocks.add(ptr)
        h = root.holders.get(path)
        if h is None:
            h = root.holders[path] = {"tensors": 0, "bytes": 0, "kind": kind, "graph": 0,
                                      "window_tensors": 0, "sites": {}, "scalars": 0,
                                      "with_graph": 0}
        h["tensors"] += 1
        h["bytes"] += nbytes
        block = self.block_of(ptr)
        if block is not None:
            addr, size, site = block
            h["graph"] += via_graph
            h["window_tensors"] += 1
            h["sites"][site] = h["sites"].get(site, 0) + size
            root.tensors += 1
        return block

    def run(self):
        for root in self.roots:
            if not self.budget_left():
                break
            self.walk(root)
        return self.out_of_budget

    def walk(self, root):
        """Depth first from root.value, at any depth up to MAX_DEPTH. Each
        stack entry: the object, its depth, its path (as the user spells
        it), the holder a tensor found below it is said to be kept by, that
        holder's kind, and whether the holder is fixed (below an element of
        a collection that grows: a list, a deque, a set, a dict keyed by
        other than names, the holder is that collection)."""
        Tensor, seen = self.Tensor, self.seen
        stack = [(root.value, 0, root.name, root.name, "name", False)]
        pop, push = stack.pop, stack.append
        while stack:
            if self.objects & 255 == 0 and not self.budget_left():
                break
            obj, depth, path, holder, hkind, fixed = pop()
            oid = id(obj)
            if oid in seen:
                continue
            seen.add(oid)
            self.objects += 1
            if self.objects >= self.max_objects:
                self.out_of_budget = "objects"
            if isinstance(obj, Tensor):
                self.tensor(root, obj, holder, hkind, depth == 0)
                continue
            if depth >= self.MAX_DEPTH:
                continue
            try:
                for child in self.children(root, obj, path, holder, hkind, fixed):
                    push((child[0], depth + 1) + child[1:])
            except Exception:
                continue  # an object that cannot be read: not entered

    def children(self, root, obj, path, holder, hkind, fixed):
        """(child, path, holder, kind, fixed) for each object obj refers to
        that the user can reach by name; calls no user code: only the base
        types' own storage, instance and class __dict__, a function's
        closure cells and defaults, a partial's and a bound method's parts."""
        Tensor, scalar = self.Tensor, _SCALARS
        t = type(obj)
        if t is types.FunctionType:
            # A closure's variables (keep = make_keeper(): its list lives in
            # a cell) and default arguments (def f(x, _kept=[])): named as
            # the code that wrote them.
            code = obj.__code__
            if not _is_user_file(code.co_filename):
                return  # a library's function: not entered
            qual = getattr(code, "co_qualname", code.co_name)
            held = f", held by `{path}`" if path != qual else ""
            named = list(zip(code.co_freevars, obj.__closure__ or ()))
            out = []
            for name, cell in named:
                try:
                    v = cell.cell_contents
                except ValueError:
                    continue
                if type(v) not in scalar:
                    out.append((name, v, f"closure of `{qual}`{held}", "closure"))
            defaults = obj.__defaults__ or ()
            if defaults:
                n = code.co_argcount
                for name, v in zip(code.co_varnames[n - len(defaults):n], defaults):
                    if type(v) not in scalar:
                        out.append((name, v, f"default argument of `{qual}`{held}", "default"))
            for name, v in dict.items(obj.__kwdefaults__ or {}):
                if type(v) not in scalar:
                    out.append((name, v, f"default argument of `{qual}`{held}", "default"))
            for name, v, text, kind in out:
                self.via.setdefault((id(root), name), (text, code, type(v).__name__, kind,
                                                       name))
                yield (v, name, name, kind, False)
            return
        if t is types.MethodType:
            yield (obj.__func__, path, holder, hkind, fixed)
            yield (obj.__self__, f"{path}.__self__", holder if fixed else f"{path}.__self__",
                   hkind if fixed else "object", fixed)
            return
        if isinstance(obj, functools.partial):
            parts = [(obj.func, f"{path}.func", None)]
            parts += [(v, f"{path}.args[{i}]", i) for i, v in enumerate(obj.args or ())]
            parts += [(v, f"{path}.keywords[{k!r}]", k)
                      for k, v in dict.items(obj.keywords or {})]
            func = obj.func
            code = func.__code__ if type(func) is types.FunctionType else None
            for v, p, arg in parts:
                if type(v) in scalar:
                    continue
                if code is not None and arg is not None and _is_user_file(code.co_filename):
                    # Bound to a parameter of the user's function: its
                    # line is where that parameter grows.
                    param = arg if isinstance(arg, str) else \
                        code.co_varnames[arg] if arg < code.co_argcount else None
                    if param:
                        qual = getattr(code, "co_qualname", code.co_name)
                        self.via.setdefault((id(root), p), (
                            f"argument `{param}` of `{qual}` bound by functools.partial",
                            code, type(v).__name__, "partial", param))
                if isinstance(v, Tensor):
                    yield (v, p, holder if fixed else path, hkind if fixed else "partial", fixed)
                else:
                    yield (v, p, holder if fixed else p, hkind if fixed else "partial", fixed)
            return
        if isinstance(obj, type):
            # A class of the user's own code: its class attributes.
            if not _defined_by_user(obj):
                return
            items = [(k, v) for k, v in type.__dict__["__dict__"].__get__(obj).items()
                     if not (k.startswith("__") and k.endswith("__"))]
            for k, v in items:
                if type(v) in scalar or isinstance(v, (staticmethod, classmethod, property)):
                    continue
                p = f"{path}.{k}"
                if isinstance(v, Tensor):
                    yield (v, p, holder if fixed else path, hkind if fixed else "class", fixed)
                else:
                    yield (v, p, holder if fixed else p, hkind if fixed else "class", fixed)
            return
        if isinstance(obj, _SKIP_TYPES):
            return
        grows = False
        if isinstance(obj, (list, tuple, collections.deque)):
            # The base type's own storage: no __iter__ of a subclass runs.
            items = list.copy(obj) if isinstance(obj, list) else \
                tuple.__getitem__(obj, slice(0, self.MAX_ITEMS)) if isinstance(obj, tuple) \
                else list(itertools.islice(collections.deque.__iter__(obj), self.MAX_ITEMS))
            keyed = [(f"{path}[{i}]", v) for i, v in enumerate(items[:self.MAX_ITEMS])
                     if type(v) not in scalar]
            here = "list" if isinstance(obj, list) else \
                "tuple" if isinstance(obj, tuple) else "deque"
            grows = here != "tuple"
        elif isinstance(obj, dict):
            pairs = list(itertools.islice(dict.items(obj), self.MAX_ITEMS))
            grows = _keyed_by_other_than_names(obj)
            here = "cache" if grows else "dict"  # keyed by steps, ids, ...: a cache
            keyed = [(f"{path}[{_key_text(k)}]", v) for k, v in pairs if type(v) not in scalar]
        elif t in (set, frozenset):
            keyed = [(path, v) for v in itertools.islice(obj, self.MAX_ITEMS)
                     if type(v) not in scalar]
            here, grows = t.__name__, True
        else:
            try:
                d = object.__getattribute__(obj, "__dict__")
            except Exception:
                return
            if not isinstance(d, dict):
                return
            keyed = []
            module = self.Module is not None and isinstance(obj, self.Module)
            for k, v in itertools.islice(dict.items(d), self.MAX_ITEMS):
                if type(v) in scalar or type(k) is not str:
                    continue
                if module and k in ("_modules", "_buffers") and type(v) in (dict,
                                                                           collections.OrderedDict):
                    # nn.Module's submodules and buffers, spelt as the user
                    # does: model.encoder, model.layers[2], model.running_mean.
                    for name, sub in dict.items(v):
                        if sub is None or type(name) is not str:
                            continue
                        keyed.append((f"{path}[{name}]" if name.isdigit() else f"{path}.{name}",
                                      sub))
                    continue
                if module and k == "_parameters":
                    continue  # the weights: not a leak's memory
                keyed.append((f"{path}.{k}", v))
            here = "module" if module else "object"
        for p, v in keyed:
            if fixed and not _big_collection(v):
                yield (v, p, holder, hkind, True)
            elif isinstance(v, Tensor):
                yield (v, p, path, here, False)
            elif grows and not _big_collection(v):
                # An element of a collection that grows (a step's tuple or
                # record): what it holds is kept by the collection.
                yield (v, p, path, here, True)
            else:
                yield (v, p, p, here, False)

    def tensor(self, root, t, holder, kind, is_root):
        try:
            fn = t.grad_fn
            if fn is None and t.requires_grad:
                return  # a leaf that requires grad: a parameter, not a leak's memory
        except Exception:
            return
        block = self.count(root, holder, "tensor" if is_root else kind, t, 0)
        if block is not None:
            h = root.holders.get(holder) or {}
            try:
                if t.numel() == 1:
                    root.scalars += 1
                    h["scalars"] = h.get("scalars", 0) + 1
            except Exception:
                pass
            if fn is not None:
                root.with_graph += 1
                h["with_graph"] = h.get("with_graph", 0) + 1
        if fn is not None:
            nodes, passes, top = self.graph(root, fn, holder, kind if not is_root else "tensor")
            if is_root:
                root.graph_root = (nodes, passes, top)

    def graph(self, root, fn, holder, kind):
        """Walks fn's graph (next_functions), counting its nodes by type,
        the forward passes it spans (edges into one parameter's
        AccumulateGrad), and its saved tensors: alive (never backpropagated)
        and in a leaking block, or freed."""
        if id(fn) in self.seen_nodes:
            return 0, 0, (0, None)
        stack = [fn]
        nodes, into, keep = 0, {}, []
        names = {}
        while stack:
            if self.nodes & 255 == 0 and not self.budget_left():
                break
            node = stack.pop()
            if id(node) in self.seen_nodes:
                continue
            # PyTorch makes a new Python object for a node each time
            # next_functions is read: held, so that no id is reused.
            self.seen_nodes[id(node)] = node
            self.nodes += 1
            nodes += 1
            if self.nodes >= self.max_nodes:
                self.out_of_budget = "graph_nodes"
            name = _node_name(node)
            names[name] = names.get(name, 0) + 1
            attrs = self.saved_attrs.get(type(node))
            if attrs is None or name not in attrs:
                if attrs is None:
                    attrs = self.saved_attrs[type(node)] = {}
                try:
                    attrs[name] = [a for a in dir(node) if a.startswith("_saved_")]
                except Exception:
                    attrs[name] = []
            for a in attrs[name]:
                try:
                    v = getattr(node, a)
                except RuntimeError:
                    root.saved_freed += 1
                    continue
                except Exception:
                    continue
                for s in (v if isinstance(v, (list, tuple)) else (v,)):
                    if isinstance(s, self.Tensor) and not (s.grad_fn is None and s.requires_grad):
                        if self.count(root, holder, kind, s, 1) is not None:
                            root.saved_alive += 1
            try:
                nexts = node.next_functions
            except Exception:
                nexts = ()
            for pair in nexts or ():
                n = pair[0] if isinstance(pair, tuple) else pair
                if n is None:
                    continue
                if _node_name(n).endswith("AccumulateGrad"):  # torch::autograd::AccumulateGrad
                    # Keyed by the parameter: the node's Python object is
                    # new at each read.
                    try:
                        key = n.variable
                    except Exception:
                        key = n
                    k = id(key)
                    into[k] = into.get(k, 0) + 1
                    keep.append(key)
                stack.append(n)
        passes = max(into.values()) if into else 0
        root.graph_nodes += nodes
        root.passes += passes
        for k, v in names.items():
            root.node_names[k] = root.node_names.get(k, 0) + v
        first = _node_name(fn)
        return nodes, passes, (names.get(first, 0), first)


class _PinnedOwnerSearch(_OwnerSearch):
    """The owner search of a pinned host leak: the blocks are the leaking
    site's live pinned host blocks (cudaHostAlloc, through PyTorch's
    CachingHostAllocator: torch.empty(..., pin_memory=True), .pin_memory()),
    so the tensors looked at are the CPU tensors whose storage lies in one.
    No tensor.is_pinned() call: it asks the CUDA runtime about the pointer,
    and an address inside a pinned block the shim recorded says as much."""

    def storage(self, t):
        """(address, bytes) of a CPU tensor's storage, or None."""
        try:
            return None if t.is_cuda or t.device.type != "cpu" else _storage_of(t)
        except Exception:
            return None


def _storage_of(t):
    """(address, bytes) of a tensor's storage, or None (the caller catches)."""
    st = t.untyped_storage()
    ptr = st.data_ptr()
    nb = st.nbytes
    nb = nb() if callable(nb) else nb
    return (ptr, int(nb)) if isinstance(ptr, int) and ptr else None


def _big_collection(v):
    """A list, deque, set or dict of 8 elements or more: a holder of its
    own even inside another collection (runs[0]["outs"])."""
    try:
        return type(v) in (list, dict, set, collections.deque, collections.OrderedDict) and \
            len(v) >= 8
    except Exception:
        return False


def _key_text(k):
    """A container key as the user would spell it, without calling any of
    its methods: repr() of a str, number, bool or None only; other keys (an
    optimizer's state is keyed by Parameters, whose repr formats the whole
    tensor: gigabytes, device copies and user code) by their type's name."""
    if k is None or type(k) in (str, int, float, bool):
        return repr(k)
    return "<" + type(k).__name__ + ">"


def _user_roots(roots_of_files, tensor_type):
    """The names the user wrote: the locals of user frames (every thread, the
    innermost first) and the globals of user modules (__main__ included)."""
    out = []
    me = threading.get_ident()
    try:
        # Other threads' frames only: this thread's entry is this very
        # frame, and a dict holding it from one of its own locals is a
        # reference cycle that would keep every root's value (the job's
        # tensors) alive until the garbage collector runs.
        frames = {k: v for k, v in sys._current_frames().items() if k != me}
    except Exception:
        frames = {}
    try:
        _frame_roots(out, [sys._getframe(1)] + list(frames.values()), roots_of_files,
                     tensor_type)
    finally:
        frames.clear()
        del frames
    _module_roots(out, roots_of_files)
    return out


def _frame_roots(out, tops, roots_of_files, tensor_type):
    """Roots from the locals of the user's frames of each stack (its top
    frame in tops), innermost first. Holds no frame once it returns."""
    seen_frames = set()
    try:
        for f in tops:
            while f is not None:
                code = f.f_code
                if _is_user_file(code.co_filename, roots_of_files) and id(f) not in seen_frames:
                    seen_frames.add(id(f))
                    fn = getattr(code, "co_qualname", code.co_name)
                    try:
                        local = dict(f.f_locals) if code.co_name != "<module>" else {}
                    except Exception:
                        local = {}
                    tensors = frozenset(k for k, v in local.items()
                                        if isinstance(v, tensor_type))
                    for k, v in local.items():
                        r = _Root(k, f"local of `{fn}`", fn, code.co_filename,
                                  code.co_firstlineno, code, v)
                        r.tensor_names = tensors
                        out.append(r)
                    local.clear()
                f = f.f_back
    finally:
        f = local = None
        tops[:] = ()


def _defined_by_user(v):
    """A function or class written in the user's own code."""
    try:
        if isinstance(v, types.FunctionType):
            return _is_user_file(v.__code__.co_filename)
        mod = sys.modules.get(getattr(v, "__module__", None) or "")
        return mod is not None and (mod.__name__ == "__main__" or
                                    _is_user_file(getattr(mod, "__file__", None)))
    except Exception:
        return False


def _module_roots(out, roots_of_files):
    for mod in list(sys.modules.values()):
        name = getattr(mod, "__name__", None)
        path = getattr(mod, "__file__", None)
        if name != "__main__" and not (path and _is_user_file(path, roots_of_files)):
            continue
        try:
            items = list(vars(mod).items())
        except Exception:
            continue
        for k, v in items:
            if k.startswith("__") or isinstance(v, types.ModuleType):
                continue
            if isinstance(v, (types.FunctionType, type)) and not _defined_by_user(v):
                continue  # imported from a library: not the user's
            out.append(_Root(k, f"global of `{name}`", None, path, None, None, v))


_CONVERTS = re.compile(r"\.\s*(item|tolist|cpu|numpy)\s*\(|\b(float|int)\s*\(")


def _code_span(code_object):
    try:
        nums = sorted({ln for _, _, ln in code_object.co_lines() if ln})
        return nums[0], nums[-1]
    except Exception:
        return code_object.co_firstlineno, code_object.co_firstlineno + 400


_CODE_LINES = {}


def _code_lines(file):
    """The lines of file that hold code (not docstrings or comments): those
    of its compiled code objects' line tables. Cached per file; None when
    it cannot be compiled."""
    if file in _CODE_LINES:
        return _CODE_LINES[file]
    got = None
    try:
        text = "".join(linecache.getlines(file))
        if text:
            got, todo = set(), [compile(text, file, "exec", dont_inherit=True)]
            while todo:
                c = todo.pop()
                got.update(ln for _, _, ln in c.co_lines() if ln)
                todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    except Exception:
        got = None
    if len(_CODE_LINES) < 256:
        _CODE_LINES[file] = got
    return got


def _spelt(holder):
    """A regular expression for the holder as the source spells it:
    metrics['targets'] also as metrics["targets"]; any index expression
    for a number."""
    m = re.match(r"[^\[]+", holder)
    if not m:
        return None
    out = re.escape(m.group(0))
    for key in re.findall(r"\[([^\]]*)\]", holder[m.end():]):
        if len(key) >= 2 and key[0] == key[-1] and key[0] in "'\"":
            out += r"\s*\[\s*['\"]" + re.escape(key[1:-1]) + r"['\"]\s*\]"
        else:
            out += r"\s*\[[^\]]*\]"
    return out


def _grows_in(file, lo, hi, name, tensor_names, pattern=None):
    """The best line in file[lo..hi] that adds to NAME (NAME.append( /
    .extend( / += / NAME[...] =): (score, line, text) or None. Of several
    (a fixed and an unfixed branch), the one whose operands are tensors in
    the frame now, and not one that converts them (.item(), .cpu(), ...)."""
    lines = linecache.getlines(file) if file else []
    pat = re.compile(_GROWS.replace("{name}", pattern or re.escape(name)))
    code = _code_lines(file) if lines else None
    best = None
    for n in range(max(lo, 1), min(hi, len(lines)) + 1):
        if code is not None and n not in code:
            continue
        text = lines[n - 1].split("#")[0]
        m = pat.search(text)
        if m:
            rest = text[m.end():]
            score = sum(w in tensor_names for w in re.findall(r"[A-Za-z_]\w*", rest))
            score -= 2 * len(_CONVERTS.findall(rest))
            if best is None or score > best[0]:
                best = (score, n, lines[n - 1].strip())
    return best


def _module_globals_of(file):
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if f and file and os.path.realpath(f) == os.path.realpath(file):
            return vars(mod)
    main = sys.modules.get("__main__")
    if main is not None and file and os.path.realpath(getattr(main, "__file__", "") or "") == \
            os.path.realpath(file):
        return vars(main)
    return {}


def _passed_to(code_object, name, tensor_names, depth):
    """The line that adds to NAME in a function NAME is passed to from
    code_object's function (record(losses, loss) -> store.append(value)),
    two calls deep at most: (file, line, text) or None."""
    if depth > 2 or code_object is None:
        return None
    file = code_object.co_filename
    lines = linecache.getlines(file)
    lo, hi = _code_span(code_object)
    call = re.compile(r"([A-Za-z_][\w.]*)\s*\(([^()]*)\)")
    g = None
    for n in range(max(lo, 1), min(hi, len(lines)) + 1):
        text = lines[n - 1].split("#")[0]
        for m in call.finditer(text):
            args = [a.strip() for a in m.group(2).split(",")]
            if name not in args:
                continue
            if g is None:
                g = _module_globals_of(file)
            fn = g.get(m.group(1).split(".")[-1]) if "." not in m.group(1) else None
            if type(fn) is not types.FunctionType or not _is_user_file(fn.__code__.co_filename):
                continue
            k = args.index(name)
            if "=" in args[k] or k >= fn.__code__.co_argcount:
                continue
            param = fn.__code__.co_varnames[k]
            c = fn.__code__
            l, h = _code_span(c)
            best = _grows_in(c.co_filename, l, h, param, tensor_names)
            if best:
                return c.co_filename, best[1], best[2]
            deeper = _passed_to(c, param, tensor_names, depth + 1)
            if deeper:
                return deeper
    return None


def _user_files():
    files = []
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if f and f.endswith(".py") and (getattr(mod, "__name__", None) == "__main__" or
                                        _is_user_file(f)):
            files.append(f)
    return files[:64]


def _add_site(root, holder, code_object=None):
    """Where the holder grows, in whatever function: (file, line, text).
    The root's own function (or module) first; then the functions it is
    passed to; then, by the holder's last name (module.hidden_states in a
    hook), any line of the user's files that adds to it; else the
    function's first line."""
    code_object = code_object or root.code
    file = code_object.co_filename if code_object is not None else root.file
    if not file:
        return None, None, None
    base = holder.split("[")[0]
    if code_object is not None:
        lo, hi = _code_span(code_object)
    else:
        lo, hi = 1, len(linecache.getlines(file))
    best = None
    if "[" in holder:
        best = _grows_in(file, lo, hi, base, root.tensor_names, _spelt(holder))
    best = best or _grows_in(file, lo, hi, base, root.tensor_names)
    if best:
        return file, best[1], best[2]
    if "." not in base:
        found = _passed_to(code_object, base, root.tensor_names, 1)
        if found:
            return found
    last = re.split(r"[.\[\]]", holder.rstrip("]"))
    last = [w for w in last if re.fullmatch(r"[A-Za-z_]\w*", w)]
    if last:
        hits = []
        for f in dict.fromkeys([file] + _user_files()):
            got = _grows_in(f, 1, 1 << 30, last[-1], root.tensor_names)
            if got:
                hits.append((got[0], f, got[1], got[2]))
        if hits:
            hits.sort(key=lambda h: -h[0])
            return hits[0][1], hits[0][2], hits[0][3]
    return file, (code_object.co_firstlineno if code_object is not None else root.line), None


def _grown_at(root, holder, code_object=None):
    """(line, text) of _add_site (kept for callers)."""
    _, line, text = _add_site(root, holder, code_object)
    return line, text


def _hint(kind, shape, function=None, name=None):
    """The fix, from what was observed (the shape) and the container."""
    text = _shape_hint(shape, function)
    if kind == "cache" and shape in ("detach_cpu", "detach", "item"):
        text += "; or bound the cache (drop old entries)"
    return text


def _cache_shape(kind, shape):
    """Tensors without graphs kept in a cache (a dict keyed by steps, ids,
    sessions): what is kept is what was meant to be kept (a KV cache), so
    the fix is to bound the cache, not to move it to the CPU."""
    return "cache" if kind == "cache" and shape == "cpu" else shape


def _shape_hint(shape, function=None):
    loop = f"the loop in `{function}`" if function else "the loop"
    return {
        "no_grad": f"wrap {loop} in torch.no_grad() (or torch.inference_mode()): its graphs "
                   "are never backpropagated",
        "retain_graph": "keep loss.detach() (or loss.item()), not the tensor with its graph: "
                        "backward(retain_graph=True) leaves each graph's saved tensors alive "
                        "while it is referenced",
        "detach": "keep .detach() of it (or .item()), not the tensor with its graph: the "
                  "graph's saved tensors stay alive with it",
        "item": "keep loss.item() (a Python float), not the tensor",
        "detach_cpu": "keep .detach().cpu() of it, not the GPU tensor with its graph",
        "cpu": "keep .cpu() of it (or drop the reference)",
        "graph_item": "accumulate loss.item(), not the tensor: each += adds the step's graph",
        "cache": "bound the cache or evict its entries (e.g. drop a session's entries when it "
                 "ends, or keep the newest N): it only grows",
        "pinned": "keep a fixed set of pinned buffers and reuse them (a ring of N buffers "
                  "allocated once, step i copying into buffers[i % N]), or drop each one once "
                  "its copy is done: every pin_memory=True tensor kept holds page-locked host "
                  "memory",
    }[shape]


def _unnamed_holder(torch, blocks, search, deadline):
    """When no name leads to a site's blocks: the tensors in them among all
    the objects the collector tracks (gc.get_objects, within the time left),
    and the container that holds most of them (gc.get_referrers), said
    without a name: the owner's unnamed_* values (the library says them),
    or None."""
    import gc

    Tensor = torch.Tensor
    starts = sorted((a, int(sz)) for a, sz in blocks if isinstance(a, int) and sz)
    keys = [a for a, _ in starts]
    found = []
    objs = gc.get_objects()
    try:
        for i, o in enumerate(objs):
            if i & 4095 == 0 and time.monotonic() > deadline:
                break
            if isinstance(o, Tensor):
                st = search.storage(o)
                if st is None:
                    continue
                k = bisect.bisect_right(keys, st[0]) - 1
                if k >= 0 and starts[k][0] <= st[0] < starts[k][0] + starts[k][1]:
                    found.append(o)
                    if len(found) >= 4096:
                        break
    finally:
        del objs
    if not found:
        return None
    ids = {id(t) for t in found}
    best = None
    probe = tuple(found[:64])  # passed as the call's own argument tuple
    for ref in gc.get_referrers(*probe):
        if ref is found or ref is probe or type(ref) is tuple and len(ref) == len(probe) and \
                all(a is b for a, b in zip(ref, probe)):
            continue
        if isinstance(ref, (list, tuple, dict, set, collections.deque)):
            vals = ref.values() if isinstance(ref, dict) else ref
            n = sum(1 for v in vals if id(v) in ids)
            if best is None or n > best[0]:
                best = (n, type(ref).__name__, len(ref))
    what = {"unnamed_tensors": len(found)}
    if best:
        what.update(unnamed_holder=best[1], unnamed_held=best[0], unnamed_elements=best[2])
    return what


def _keyed_by_other_than_names(d):
    try:  # dict's own keys: no method of a subclass runs
        return any(type(k) is not str for k in itertools.islice(dict.keys(d), 64))
    except Exception:  # changed by another thread while read
        return False


def _owners_by_root(torch, roots, i, place, evidence):
    """Owners of site i when no single holder keeps 3 of the window's
    tensors: each root's holders summed (the name the user wrote: `cache`
    for cache[session][n]), the largest first. A dict without autograd
    graphs is a cache: the hint is to bound it or evict its entries."""
    sums = []
    for r in roots:
        agg = {"graph": 0, "with_graph": 0, "scalars": 0, "window_tensors": 0}
        nbytes = count = total = 0
        for h in r.holders.values():
            b = h["sites"].get(i, 0)
            if b:
                agg["window_tensors"] += h["window_tensors"]
                agg["graph"] += h["graph"]
                agg["with_graph"] += h.get("with_graph", 0)
                agg["scalars"] += h.get("scalars", 0)
                nbytes += b
            count += h["tensors"]
            total += h["bytes"]
        if agg["window_tensors"] >= 3:
            sums.append((nbytes, count, total, agg, r))
    sums.sort(key=lambda c: -c[0])
    owners = []
    for nbytes, count, total, agg, r in sums[:1]:
        value = r.value
        kind = type(value).__name__.lower() if isinstance(
            value, (list, dict, tuple, set, collections.deque)) else "variable"
        if kind == "dict" and _keyed_by_other_than_names(value):
            kind = "cache"  # keyed by steps, ids, sessions: as the walk names it
        shape = _cache_shape(kind, _shape(agg, evidence, place))
        file, line, code = _add_site(r, r.name)
        owners.append({
            "kind": kind, "name": r.name, "scope": r.scope, "function": r.function,
            "file": file, "line": line, "code": code, "count": count, "bytes": total,
            "window_count": agg["window_tensors"], "window_bytes": nbytes,
            "via_graph": agg["graph"], "graph_nodes": r.graph_nodes, "passes": r.passes or None,
            "graph_top": None, "graph_top_count": None, "shape": shape,
            "hint": _hint(kind, shape, place.get("function"), r.name),
        })
    return owners


def find_owners(torch, sites, site_blocks, steps, budget_s, max_objects=300000,
                max_nodes=200000, evidence=None):
    """Adds sites[i]["owner"] (and "owners") for the sites whose blocks are
    given; returns a summary of the search for the diagnosis. Holds nothing
    of the job's once it returns, whether it ends or fails: every root's
    value and every object the walk kept is dropped here, so that nothing
    waits for the garbage collector (a step's batch kept until then would
    change the job's memory and the verdict)."""
    held = {}
    try:
        return _find_owners(torch, sites, site_blocks, steps, budget_s, max_objects, max_nodes,
                            held, evidence)
    finally:
        _teardown(held)


def _teardown(held):
    for r in held.pop("roots", None) or ():
        r.value = None
        r.tensor_names = ()
    search = held.pop("search", None)
    if search is not None:
        search.roots = None
        search.seen.clear()
        search.seen_nodes.clear()
        search.via.clear()
        search.counted_blocks.clear()
    held.clear()


def _find_owners(torch, sites, site_blocks, steps, budget_s, max_objects, max_nodes, held,
                 evidence=None):
    t0 = time.monotonic()
    roots = held["roots"] = _user_roots(_library_roots(), torch.Tensor)
    pinned = (evidence or {}).get("memory") == "pinned_host"
    search = held["search"] = (_PinnedOwnerSearch if pinned else _OwnerSearch)(
        torch, site_blocks, budget_s, max_objects, max_nodes, roots)
    stopped = None
    try:
        stopped = search.run()
    except Exception as e:  # what was found so far still counts
        stopped = f"error: {type(e).__name__}: {e}"
    for i, site in enumerate(sites):
        try:
            owners = _site_owners(torch, i, site, roots, search, steps, evidence or {})
        except Exception as e:
            owners = []
            stopped = stopped or f"error: {type(e).__name__}: {e}"
        unnamed = None
        if not owners and i == 0 and not stopped:
            try:
                unnamed = _unnamed_holder(torch, site_blocks[i], search, search.deadline)
            except Exception:
                unnamed = None
        # The owner's sentence is the library's (src/output/owner_text.c):
        # from the owner's values, or, when none was found, from what holds
        # the blocks without a name and what was searched (owner_search).
        site["owner"] = owners[0] if owners else {"kind": None, "name": None, **(unnamed or {})}
        site["owners"] = owners
        site["owner_search"] = _searched(roots, search, stopped)
    return {**_searched(roots, search, stopped), "seconds": round(time.monotonic() - t0, 4)}


def _searched(roots, search, stopped):
    """What the owner search looked at: names (of them, the user's functions
    on the stack and modules), objects and graph nodes; why it stopped."""
    frames = {r.scope for r in roots if r.scope.startswith("local of")}
    mods = {r.scope for r in roots if r.scope.startswith("global of")}
    return {"roots": len(roots), "frames": len(frames), "modules": len(mods),
            "objects": search.objects, "graph_nodes": search.nodes, "stopped": stopped}


def _runs_backward(evidence, place):
    """Whether backward was called, in the window, from the function that
    makes the kept tensors (any backward when that function is unknown)."""
    callers = evidence.get("backward_callers") or ()
    if not place or not place.get("function"):
        return bool(evidence.get("backward_calls"))
    return (place.get("file"), place.get("function")) in callers


def _shape(h, evidence, place=None):
    """The fix that follows what was observed: whether the kept tensors'
    graphs hold saved tensors, whether backward ran in the window and with
    retain_graph=True, whether the tensors have a graph at all. Pinned host
    buffers (evidence["memory"] == "pinned_host") have a fix of their own."""
    if evidence.get("memory") == "pinned_host":
        return "pinned"
    if h["graph"] > 0:
        # Saved tensors alive: graphs never backpropagated, or
        # backpropagated with retain_graph=True. torch.no_grad() only for a
        # loop that runs no backward itself (validation inside training).
        if not _runs_backward(evidence, place):
            return "no_grad"
        if evidence.get("retain_graph"):
            return "retain_graph"
        return "detach"
    if h.get("with_graph"):
        if h.get("scalars", 0) * 2 >= max(h["window_tensors"], 1):
            return "item"
        return "detach_cpu"
    return "cpu"


def _site_owners(torch, i, site, roots, search, steps, evidence):
    cands = []
    for r in roots:
        for path, h in r.holders.items():
            b = h["sites"].get(i, 0)
            if b:
                cands.append((b, r, path, h))
    cands.sort(key=lambda c: -c[0])
    owners = []
    place = site.get("place_to_look") or {}
    for b, r, path, h in cands[:3]:
        if h["window_tensors"] < 3:
            continue  # one step's tensor (the current loss), not a keeper
        shape = _shape(h, evidence, place)
        kind = h["kind"]
        via = search.via.get((id(r), path))
        if via is not None and kind in ("closure", "default"):
            kind = via[2]
        elif kind in ("name", "object", "module", "class", "partial"):
            if path == r.name:
                kind = "tensor" if isinstance(r.value, torch.Tensor) else \
                    type(r.value).__name__.lower() if isinstance(
                        r.value, (list, dict, tuple, set, collections.deque)) else "variable"
            else:
                kind = "module attribute" if h["kind"] == "module" else \
                    "class attribute" if h["kind"] == "class" else "attribute"
        scope, code_object, grown = r.scope, None, path
        if via is not None:
            scope = f"{via[0]} ({r.scope})"
            code_object, grown = via[1], via[4]
        file, line, code = _add_site(r, grown, code_object)
        shape = _cache_shape(kind, shape)
        owners.append({
            "kind": kind, "name": path, "scope": scope, "function": r.function,
            "file": file, "line": line, "code": code, "count": h["tensors"],
            "bytes": h["bytes"], "window_count": h["window_tensors"], "window_bytes": b,
            "via_graph": h["graph"], "graph_nodes": r.graph_nodes,
            "passes": r.passes or None, "graph_top": None, "graph_top_count": None,
            "shape": shape,
            "hint": _hint(kind, shape, place.get("function"), path),
        })
    if not owners:
        # A container of many small holders (a dict of sessions, each a
        # list of (k, v) tuples): none holds 3 of the window's tensors,
        # their root does.
        owners = _owners_by_root(torch, roots, i, place, evidence)
    else:
        # A dict whose entries together hold at least twice what the
        # largest single holder does (a cache of sessions, of which one
        # session's list, or a local alias of it, is the largest holder):
        # the dict is the owner, with the cache's hint.
        whole = _owners_by_root(torch, roots, i, place, evidence)
        if whole and whole[0]["kind"] in ("dict", "cache") and \
                whole[0]["window_bytes"] >= 2 * owners[0]["window_bytes"]:
            owners = whole + [o for o in owners if o["name"] != whole[0]["name"]][:2]
    # A tensor the user named whose own graph spans many forward passes
    # (total_loss += loss): a graph that grows with the steps, whatever
    # the memory it holds. (Device memory: not a pinned host leak's owner.)
    if i == 0 and evidence.get("memory") != "pinned_host":
        for r in roots:
            g = r.graph_root
            if not g or g[1] < max(3, steps // 2) or any(o["name"] == r.name for o in owners):
                continue
            file, line, code = _add_site(r, r.name)
            owners.append({
                "kind": "tensor", "name": r.name, "scope": r.scope, "function": r.function,
                "file": file, "line": line, "code": code, "count": 0, "bytes": 0,
                "window_count": 0, "window_bytes": 0, "via_graph": 0, "graph_nodes": g[0],
                "graph_top": g[2][1], "graph_top_count": g[2][0], "passes": g[1],
                "shape": "graph_item", "hint": _hint("tensor", "graph_item"),
            })
    return owners


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


def _kept_rate(g, n, marks):
    """A site's rate: the growth of what it keeps, not of what it allocates.
    What was allocated in the window's last step is still alive at its end
    whether it is kept or not (the step's input, made on the same line as a
    kept target): counted out, and the rate taken over the steps before."""
    if not marks or n < 2:
        return g["bytes"] / max(n, 1)
    return (g["bytes"] - g.get("last_step", 0)) / (n - 1)


class _Window:
    def __init__(self, torch, device, steps, max_entries, lib, first_step, owner_ms=1000):
        self.torch, self.device, self.steps, self.max_entries = torch, device, steps, max_entries
        self.owner_ms = owner_ms
        self.lib, self.first_step = lib, first_step
        self.marks = []  # time (us) at each step mark in the window
        # (start_us, end_us, caller frames innermost first): while open the
        # frames as _caller_codes gives them, dicts (filename, line, name)
        # from close() on
        self.backward_calls = []
        self.retain_graph_calls = 0  # backward calls with retain_graph=True
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


    def evidence(self):
        """What the window saw that the fix hints follow: backward calls,
        from which functions, and how many with retain_graph=True."""
        callers = set()
        for _, _, frames in self.backward_calls:
            for f in frames:
                callers.add((f.get("filename"), f.get("name")))
        return {"backward_calls": len(self.backward_calls), "backward_callers": callers,
                "retain_graph": self.retain_graph_calls}

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
        self.backward_calls = _backward_frames(self.backward_calls)
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
                                   "steps": set(), "blocks": []}
            size = int(e.get("size") or 0)
            g["bytes"] += size
            g["blocks"].append((e.get("addr"), size))
            g["count"] += 1
            k = bisect.bisect_left(marks, t) if marks else 0
            g["steps"].add(k)
            if marks and k >= len(marks) - 1:
                g["last_step"] = g.get("last_step", 0) + size
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
                "bytes_per_step": _kept_rate(g, n, marks),
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
                "_blocks": g["blocks"],
            })
        sites.sort(key=lambda s: -s["bytes_per_step"])
        sites = sites[:MAX_SITES]
        blocks = [s.pop("_blocks") for s in sites]
        for i, s in enumerate(sites):
            s["id"] = SITE_ID_BASE + i
            s["rank"] = i + 1
        owners = None
        if sites and self.owner_ms > 0:
            # Who keeps the leak alive: once, here, at a step boundary on the
            # job's thread, within its budget; never breaks the window.
            try:
                owners = find_owners(self.torch, sites[:3], blocks[:3], len(self.marks),
                                     self.owner_ms / 1000.0, evidence=self.evidence())
            except Exception as e:
                owners = {"stopped": f"error: {type(e).__name__}: {e}"}
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
        if owners is not None:
            summary["owner_search"] = owners
        return summary, sites


class _Helper:
    def __init__(self):
        self.lib = _Lib()
        self.mode = _steps_mode() or "iteration"
        self.window_steps = _env_int("LEAKWATCH_TORCH_WINDOW", 32, 0, 100000)
        self.max_entries = _env_int("LEAKWATCH_TORCH_MAX_ENTRIES", 100000, 1000, 100000000)
        self.owner_ms = _env_int("LEAKWATCH_TORCH_OWNER_MS", 1000, 0, 600000)
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
        self.unit_told = False
        self.read_at = 0.0  # time.monotonic() before which no counters are read
        self.reads = 0  # reads of the counters (read_counters)
        self.read_after = 0  # module-call steps: the next step that reads the counters
        self.ticks = 0  # time intervals read by _IntervalReader (no step marked)
        self.host_cue = False  # the library judged a pinned host leak's sites
        self.host_tries = 2  # owner searches of a pinned host leak left
        self.next_host_at = 0
        # The anatomy (_anatomy.after_mark) has no work before this step, nor
        # before this time.monotonic() (its budget).
        self.anatomy_at = 0
        self.anatomy_after = 0.0
        self.torch = self.cuda = None  # the modules, once imported (after_mark)

    def tell_unit(self, unit, module=None):
        """What a step is, once (the report's growth.step_unit): its names,
        the library writes the text."""
        self.unit_told = True
        try:
            if self.lib.step_unit is not None:
                self.lib.step_unit(unit.encode(), module.encode() if module else None)
        except Exception:
            pass

    def module_mark(self, name):
        """A step ended by the next call of the job's outermost module
        (_ModuleSteps): marked like an optimizer step, but outside a
        diagnosis window PyTorch's counters (a dict of ~100 entries, tens of
        microseconds) are read at the first 128 steps, then at every k-th
        with k = steps / 128: about 128 (1 + ln(steps / 128)) reads in all
        (1,300 over a million requests), so that a server's request pays
        well under a microsecond for them once it has run a while. The
        schedule counts steps, not time: the same run reads at the same
        steps however loaded the machine."""
        if not self.unit_told:
            self.tell_unit("module_call", name)
        if self.window is not None or self.steps + 1 >= self.read_after:
            self.mark()
            self.read_after = self.steps + max(1, self.steps // 128)
        else:
            leakwatch._auto_step()
            self.steps += 1

    # -- steps --

    def optimizer_step(self, optimizer, skipped=False):
        if getattr(self.in_scaler, "depth", 0):
            return  # GradScaler.step reports it once it returns
        if leakwatch.manual_steps:
            return
        if not self.unit_told:
            self.tell_unit("optimizer_step")
        with self.lock:
            self.optimizer_calls += 1
            self.skipped += bool(skipped)
            if self.mode == "optimizer":
                marks = 1
            elif self.closer == id(optimizer) and not self.seen:
                marks = 1  # the closer alone (one optimizer): _iteration's answer, no call
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
        # The rank (torch.distributed), asked at each of the first 64 marks
        # and then at every 64th: a job sets its process group up before it
        # trains, and the question costs a third of a microsecond.
        if not _rank_told[0] and (self.steps <= 64 or not self.steps % 64):
            _tell_rank()
        # Nothing due at most marks of a long job: no read of the counters
        # yet, no anatomy, no window, no pinned host cue. Said here, before
        # the lock and PyTorch's two state questions (initialised,
        # capturing), which after_mark would ask only to do nothing; stale
        # values read without the lock only send a mark the long way. The
        # two conditions are after_mark's "read" and "anatomy due" negated
        # (a change to either rule is a change to both places): inline, as
        # a method call each would cost this path more than its test.
        if (self.steps > ALWAYS_READ and self.window is None and not self.host_cue
                and not READ_EVERY_MARK):
            now = time.monotonic()
            if now < self.read_at and (self.steps < self.anatomy_at or now < self.anatomy_after):
                return
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
        cuda = self.cuda
        if cuda is None:  # torch and torch.cuda, looked up until both are there
            torch = sys.modules.get("torch")
            if torch is None or self.lib.counters is None:
                return
            cuda = getattr(torch, "cuda", None)
            if cuda is None:
                return
            self.torch, self.cuda = torch, cuda
        torch = self.torch
        if not cuda.is_initialized():
            return
        if not self.backend_checked:
            self.check_backend(torch)
        capturing = cuda.is_current_stream_capturing()
        now = time.monotonic()
        # Due: mark's early return tests the negation of this and of the
        # anatomy's rule below (keep the three in step).
        read = now >= self.read_at or self.steps <= ALWAYS_READ or READ_EVERY_MARK
        growing = self.read_counters(torch, cuda, capturing, now) if read else ()
        if capturing:
            return
        if self.steps >= self.anatomy_at and now >= self.anatomy_after:
            self.anatomy_at, self.anatomy_after = _anatomy_module().after_mark(torch, self.steps)
        if self.window is not None:
            if self.window.mark():
                self.close_window()
        elif growing and self.may_open():
            self.open_window(torch, growing[0])
        if self.host_cue and self.host_tries > 0 and self.window is None:
            self.find_pinned_owner(torch)

    def read_counters(self, torch, cuda, capturing, now):
        """PyTorch's counters of each device used, to the library; the devices
        whose tensor series grows. The next read waits READ_BUDGET times
        what this one took (point 2)."""
        t0 = time.perf_counter()
        stats_of = getattr(torch._C, "_cuda_memoryStats", None)
        growing = []
        free_cost = 0.0
        self.reads += 1
        look_unused = self.reads <= UNUSED_FIRST or self.reads % UNUSED_EVERY == 0
        for d in range(cuda.device_count()):
            if d not in self.devices and not look_unused:
                continue
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
                # Once a second, not counted in the budget.
                self.free_at[d] = now + 1.0
                f0 = time.perf_counter()
                free = cuda.mem_get_info(d)[0]
                free_cost += time.perf_counter() - f0
            cue = self.lib.counters(d, allocated, reserved, free)
            if cue & 1:
                growing.append(d)
            if cue & 2:
                self.host_cue = True
        self.read_at = now + min(READ_BUDGET * (time.perf_counter() - t0 - free_cost), 1.0)
        return growing

    def find_pinned_owner(self, torch):
        """A pinned host leak (leakwatch_torch_counters' cue, bit 1): what
        keeps its site's live blocks (leakwatch_torch_host_blocks), found by
        the owner search as for a device leak, here, at a step boundary on
        the job's thread, within LEAKWATCH_TORCH_OWNER_MS; told to the
        library ("host_owner"), which writes it into that site's entry of
        the report and under the exit line. Once; once more, 64 steps
        later, when the first search found no owner."""
        self.host_cue = False
        if self.owner_ms <= 0 or self.host_tries <= 0 or \
                self.steps + self.ticks < self.next_host_at:
            return
        got = self.lib.pinned_leak_blocks()
        if not got:
            return
        site_id, blocks = got
        self.host_tries -= 1
        site = {}
        try:
            search = find_owners(torch, [site], [blocks], self.steps, self.owner_ms / 1000.0,
                                 evidence={"memory": "pinned_host"})
        except Exception as e:
            search = {"stopped": f"error: {type(e).__name__}: {e}"}
        del blocks
        owner = site.get("owner")
        if owner and owner.get("name"):
            self.host_tries = 0
        else:
            self.next_host_at = self.steps + self.ticks + 64
        self.lib.tell("host_owner", {"owner": owner, "owners": site.get("owners") or [],
                                     "owner_search": search}, site=site_id)

    def may_open(self):
        return (self.window_steps > 0 and not self.async_backend and self.windows_left > 0
                and self.steps + self.ticks >= self.next_window_at)

    def interval_tick(self):
        """A time interval of a job that marks no steps at all
        (_IntervalReader): the counters and the window as at a mark, with
        no step marked."""
        if self.off or self.steps or not self.mark_lock.acquire(blocking=False):
            return
        try:
            self.ticks += 1
            self.after_mark()
        except Exception as e:  # never break the job
            self.off = True
            self._close_window_quietly()
            self.lib.tell("diagnosis", {"state": "off", "error": f"{type(e).__name__}: {e}"})
        finally:
            self.mark_lock.release()

    def open_window(self, torch, device):
        try:
            self.window = _Window(torch, device, self.window_steps, self.max_entries, self.lib,
                                  self.steps, self.owner_ms)
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
            self.next_window_at = self.steps + self.ticks + 4 * self.window_steps
            self.window_steps *= 2
        else:
            self.windows_left = 0
        self.lib.tell("diagnosis", {**summary, "windows": self.windows})
        if sites and len(sites) >= self.sites_told:
            # The summary's label (the first site's place, its owner, the
            # other leaking sites) is the library's, from these sites
            # (src/output/torch_info.c); the report's answer names the first.
            self.lib.tell("sites", sites)
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


# ---- the rank, from the job's process group ----
# mp.spawn (the launcher of PyTorch's DDP tutorial) sets no RANK: the rank is
# known for sure only once the job has called
# torch.distributed.init_process_group. Looked at each step until then (two
# attribute reads), and at exit; told to the library once
# (leakwatch_torch_rank), which names it in %r, on stderr and in the report.
_rank_told = [False]


_dist_checks = []  # torch.distributed.is_initialized, once it is known to be available


def _tell_rank():
    if not _dist_checks:
        dist = sys.modules.get("torch.distributed")
        try:
            if dist is None or not dist.is_available():
                return
        except Exception:
            return
        _dist_checks.append(dist.is_initialized)
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not _dist_checks[0]():
            return
        rank, world = dist.get_rank(), dist.get_world_size()
    except Exception:
        return
    _rank_told[0] = True
    try:
        import ctypes

        fn = ctypes.CDLL(None).leakwatch_torch_rank
        fn.restype = None
        fn.argtypes = [ctypes.c_int, ctypes.c_int]
        if isinstance(rank, int) and isinstance(world, int) and rank >= 0:
            fn(rank, world)
    except (OSError, AttributeError, TypeError):
        pass


_helper = None


def _get_helper():
    global _helper
    if _helper is None:
        _helper = _Helper()
        leakwatch._after_step = _after_manual_step
        import atexit

        atexit.register(_at_exit)
        _IntervalReader.start(_helper)
    return _helper


class _IntervalReader:
    """PyTorch's counters and the diagnosis window for a job that marks no
    step at all (no optimizer step, no nn.Module call, no leakwatch.step()):
    a daemon thread reads them once per time interval (LEAKWATCH_INTERVAL_MS,
    the library's steps then), once CUDA is initialised. It ends for good at
    the first step mark of any kind, or when the helper stops."""

    @staticmethod
    def start(helper):
        if helper.lib.counters is None:
            return
        try:
            t = threading.Thread(target=_IntervalReader.run, args=(helper,), daemon=True,
                                 name="leakwatch-torch-intervals")
            t.start()
        except Exception:
            pass

    @staticmethod
    def run(helper):
        period = _env_int("LEAKWATCH_INTERVAL_MS", 1000, 10, 3600000) / 1000.0
        try:
            while True:
                time.sleep(period)
                if helper.off or helper.steps or leakwatch.manual_steps or _helper is not helper:
                    return
                torch = sys.modules.get("torch")
                cuda = getattr(torch, "cuda", None) if torch is not None else None
                if cuda is None or not cuda.is_initialized():
                    continue
                helper.interval_tick()
        except Exception:
            pass


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
        if not _rank_told[0]:
            _tell_rank()
        torch = sys.modules.get("torch")
        if not h.backend_checked and not h.off and torch is not None:
            h.check_backend(torch)
        h.at_exit()
        _anatomy_module().at_exit()
        h.lib.tell("steps", {"mode": h.mode, "marks": h.steps,
                             "optimizer_calls": h.optimizer_calls,
                             "skipped_by_grad_scaler": h.skipped})
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


def _caller_codes(f):
    """The frames of f and its callers, innermost first, as it is cheapest to
    take them at each backward call in an open window: one flat tuple of
    (code object, line) pairs, made into the analysis' dicts (file, line,
    function) at the window's close (_backward_frames). Dicts at each call
    took about twice as long (a backward call from 40 frames: 12 -> 5 us)."""
    out = []
    while f is not None:
        out.append(f.f_code)
        out.append(f.f_lineno)
        f = f.f_back
    return tuple(out)


def _backward_frames(calls):
    """The window's backward calls with their callers' frames as dicts
    (filename, line, name); calls from the same frames share one list."""
    made = {}
    out = []
    for start, end, codes in calls:
        if not isinstance(codes, tuple):
            out.append((start, end, codes))  # already dicts
            continue
        frames = made.get(codes)
        if frames is None:
            frames = made[codes] = [
                {"filename": codes[i].co_filename, "line": codes[i + 1],
                 "name": codes[i].co_name} for i in range(0, len(codes), 2)]
        out.append((start, end, frames))
    return out


def _wrap_autograd(module):
    """torch.autograd.backward and grad (Tensor.backward looks the former up
    at each call, torch/_tensor.py): the library learns which thread waits in
    backward and from where (leakwatch_torch_backward), and an open
    diagnosis window when each call ran and who made it."""
    for name in ("backward", "grad"):
        original = getattr(module, name, None)
        if original is None or getattr(original, "_leakwatch", False):
            continue

        def wrapped(*args, __original=original, __name=name, **kwargs):
            _backward_seen[0] = True  # a training job: no module-call steps
            h = _helper
            lib = h.lib if h is not None else None
            enter = lib.backward_enter if lib is not None else None
            window = h.window if h is not None else None
            if window is not None:
                # The caller's frames, innermost first, as the window's
                # analysis reads them; no source lines (traceback's
                # extract_stack reads each file: tens of microseconds).
                frames = _caller_codes(sys._getframe(1))
                start = time.time() * 1e6
            if enter is not None:
                enter()
            try:
                return __original(*args, **kwargs)
            finally:
                if enter is not None:
                    lib.backward_leave()
                if window is not None:
                    window.backward_calls.append((start, time.time() * 1e6, frames))
                    if _retains_graph(__name, args, kwargs):
                        window.retain_graph_calls += 1

        wrapped._leakwatch = True
        wrapped.__wrapped__ = original
        wrapped.__name__ = getattr(original, "__name__", name)
        wrapped.__qualname__ = getattr(original, "__qualname__", name)
        wrapped.__doc__ = getattr(original, "__doc__", None)
        setattr(module, name, wrapped)


def _retains_graph(name, args, kwargs):
    """Whether a call of torch.autograd.backward(tensors, grad_tensors,
    retain_graph, create_graph, ...) or grad(outputs, inputs, grad_outputs,
    retain_graph, create_graph, ...) keeps the graph: retain_graph, which
    defaults to create_graph."""
    try:
        k = 2 if name == "backward" else 3
        retain = kwargs.get("retain_graph", args[k] if len(args) > k else None)
        create = kwargs.get("create_graph", args[k + 1] if len(args) > k + 1 else False)
        return bool(create if retain is None else retain)
    except Exception:
        return False


# Post-hook calls seen, including those swallowed inside GradScaler.step.
_optimizer_hook_calls = [0]


def _counting_hook(optimizer, args, kwargs):
    # The optimizer's step post-hook (registered globally): counts the
    # calls, including those swallowed inside GradScaler.step, and marks.
    _optimizer_hook_calls[0] += 1
    try:
        (_helper or _get_helper()).optimizer_step(optimizer)
    except Exception:
        pass


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


_anatomy = []


def _anatomy_module():
    """The roles and the out-of-memory observer (_anatomy.py, issue 40),
    imported once."""
    if not _anatomy:
        import importlib

        _anatomy.append(importlib.import_module(__name__.rpartition(".")[0] + "._anatomy"))
    return _anatomy[0]


def _after_import(name, module):
    if name == OPTIM:
        _register_counting(module)
        _anatomy_module().install(sys.modules.get("torch.cuda"))
    elif name == AUTOGRAD:
        _get_helper()
        _wrap_autograd(module)
    elif name == NN_MODULE:
        _module_steps.install(module)
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


# ---- steps for jobs without an optimizer step ----

# Set by the autograd wrapper: the job runs backward (a training job, whose
# steps come from its optimizer).
_backward_seen = [False]


class _ModuleSteps:
    """A step for jobs that never call optimizer.step() (inference servers,
    evaluation and generation loops): a call of the job's outermost
    nn.Module. Global forward hooks (torch.nn.modules.module.
    register_module_forward_pre_hook / register_module_forward_hook) find
    it: the first call not nested in another module's call, of a module that
    has parameters. Then they are removed (with any global hook every module
    call leaves PyTorch's fast path) and a forward pre-hook on that module
    alone marks a step at the start of each of its calls, so that a step is
    one call and what the job did with its output (the request's whole
    work). An optimizer step, a backward (a training job) or leakwatch.step()
    (the job's own marks) turns these steps off for good; without such a
    module the library's time intervals stay the steps."""

    MAX_OUTER = 100000  # outermost calls without a module with parameters: give up

    def __init__(self):
        self.local = threading.local()
        self.hooks = []
        self.step_hook = None
        self.name = None
        self.outer = 0
        self.done = False

    def install(self, mod):
        if self.hooks or self.step_hook is not None or self.done:
            return
        pre = getattr(mod, "register_module_forward_pre_hook", None)
        post = getattr(mod, "register_module_forward_hook", None)
        if pre is None or post is None:
            return
        self.hooks.append(pre(self._pre))
        try:
            self.hooks.append(post(self._post, always_call=True))
        except TypeError:
            self.hooks.append(post(self._post))

    def _remove_global(self):
        hooks, self.hooks = self.hooks, []
        for h in hooks:
            try:
                h.remove()
            except Exception:
                pass

    def uninstall(self):
        self._remove_global()
        h, self.step_hook = self.step_hook, None
        if h is not None:
            try:
                h.remove()
            except Exception:
                pass
        self.done = False

    def _training(self):
        h = _helper
        return bool(_backward_seen[0] or leakwatch.manual_steps or
                    (h is not None and (h.optimizer_calls or h.off)))

    def _pre(self, module, args):
        try:
            local = self.local
            depth = getattr(local, "depth", 0)
            local.depth = depth + 1
            if depth == 0:
                local.top = module
        except Exception:
            pass

    def _post(self, module, args, output):
        try:
            local = self.local
            local.depth = max(getattr(local, "depth", 1) - 1, 0)
            if local.depth or getattr(local, "top", None) is not module:
                return
            local.top = None
            self.outer += 1
            if self._training() or self.outer > self.MAX_OUTER:
                self.done = True
                self._remove_global()
                return
            if next(module.parameters(), None) is None:
                return
            self.done = True
            self._remove_global()
            self.name = type(module).__name__
            self.step_hook = module.register_forward_pre_hook(self._step)
        except Exception:
            self.done = True
            self._remove_global()

    def _step(self, module, args):
        try:
            if self._training():
                h, self.step_hook = self.step_hook, None
                if h is not None:
                    h.remove()
                return
            _get_helper().module_mark(self.name)
        except Exception:
            pass


_module_steps = _ModuleSteps()


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
    _module_steps.uninstall()
    if _helper is not None:
        _helper.off = True
    _helper = None
