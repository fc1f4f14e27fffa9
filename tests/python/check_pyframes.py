#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks src/track/pyframes.c (through tests/python/pyprobe.so) against Python's own view.

usage: check_pyframes.py [PYPROBE_SO]   (default: $LW_BUILD/tests/python/pyprobe.so)

For every case the probe captures the calling thread's Python frames and
describes them (file, function, line) inside the same C call, while the
frames are alive; the result must equal traceback.extract_stack() taken on
the same source line (innermost first; function = co_qualname on 3.11+,
co_name before). Each case runs with the GIL held (ctypes.PyDLL) and released
(ctypes.CDLL). Also: the line-table decoder against PyCode_Addr2Line for
every instruction of many code objects, non-code objects refused, a C thread
without Python, concurrent threads, shutdown around a capturing daemon
thread, and the cost of one 20-frame capture (printed, never asserted).
On 3.14+ one case runs a function whose code object was made immortal, so
that its frames hold a tagged reference to it. Exit status 0 when everything
matches. Runs on CPython 3.8+; on versions newer than the module reads
(3.15+) it only checks that the module refuses them cleanly.
"""
import asyncio
import ctypes
import gc
import os
import subprocess
import sys
import threading
import time
import traceback
import types

SO = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                     os.path.join(os.environ.get("LW_BUILD", "build"), "tests/python/pyprobe.so"))
QUAL = sys.version_info >= (3, 11)      # describe gives co_qualname from 3.11
ENTRY_ALL = sys.version_info < (3, 11)  # 3.8-3.10: one eval call per frame
BUFSZ = 1 << 20
FS, RS = b"\x1f", b"\x1e"


def load(cls):
    lib = cls(SO)
    lib.probe_stack.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.probe_stack.restype = ctypes.c_int
    lib.probe_line.argtypes = [ctypes.py_object, ctypes.c_int]
    lib.probe_line.restype = ctypes.c_int
    lib.probe_names.argtypes = [ctypes.py_object, ctypes.c_char_p, ctypes.c_int]
    lib.probe_names.restype = ctypes.c_int
    lib.probe_bench.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    lib.probe_bench.restype = ctypes.c_double
    lib.probe_status.restype = ctypes.c_char_p
    lib.probe_spin.argtypes = [ctypes.c_int]
    lib.probe_spin.restype = ctypes.c_long
    return lib


PY = load(ctypes.PyDLL)  # GIL held during the call
CD = load(ctypes.CDLL)   # GIL released during the call
LIBS = (("gil", PY), ("nogil", CD))

failures = []
checks = 0


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def _quals():
    f, out = sys._getframe(1), []
    while f is not None:
        out.append(f.f_code.co_qualname if QUAL else f.f_code.co_name)
        f = f.f_back
    return out


def snap(lib, max=4096):
    """Capture + describe (C) and extract_stack (Python) on one line: same frames, same lines."""
    buf = ctypes.create_string_buffer(BUFSZ)
    n, tb, quals = lib.probe_stack(buf, BUFSZ, max), traceback.extract_stack(), _quals()
    return n, buf.raw, tb, quals


def enc(s):
    return s.encode("utf-8", "surrogateescape")


def compare(case, res, max=4096, entries=None):
    """entries: {index (negative from the outermost): expected entry flag}, checked on 3.11+."""
    global checks
    checks += 1
    n, raw, tb, quals = res
    exp = [(enc(fs.filename), enc(q), -1 if fs.lineno is None else fs.lineno, fs.name)
           for fs, q in zip(reversed(tb), quals)]
    if len(quals) != len(tb):
        return fail("%s: internal: %d frames, %d summaries" % (case, len(quals), len(tb)))
    if n < 0:
        return fail("%s: probe returned %d (-3: the thread's chain cache gave other frames than "
                    "the walk; -4: a repeat missed the cache; else describe failed or the buffer "
                    "is too small)" % (case, n))
    want = min(len(exp), max)
    if n != want:
        return fail("%s: %d frames captured, %d expected\n  expected: %s\n  got: %s" % (
            case, n, want, [(e[3], e[2]) for e in exp[:want]], raw.split(RS)[:n]))
    recs = [r.split(FS) for r in raw.split(RS)[:n]]
    for i, (r, e) in enumerate(zip(recs, exp)):
        got = (r[0], r[1], int(r[2]))
        if got != e[:3]:
            return fail("%s: frame %d: got %r, expected %r" % (case, i, got, e[:3]))
    flags = [int(r[3]) for r in recs]
    if ENTRY_ALL:
        if any(f != 1 for f in flags):
            return fail("%s: entry flags %s, expected all 1 on 3.8-3.10" % (case, flags))
    else:
        rules = dict(entries or {})
        if n == len(exp):
            rules.setdefault(-1, 1)  # the outermost frame was started from C
        for idx, want_flag in rules.items():
            if -n <= idx < n and flags[idx] != want_flag:
                return fail("%s: entry flag of frame %d (%s) is %d, expected %d; flags %s" % (
                    case, idx, recs[idx][1], flags[idx], want_flag, flags))


# ---------------------------------------------------------------- the cases
def rec(lib, k, max=4096):
    if k:
        return rec(lib, k - 1, max)
    return snap(lib, max)


def nested(lib):
    x = 1

    def inner():
        def innermost():
            return snap(lib) if x else None
        return innermost()
    return inner()


class Model:
    def step(self, lib):
        return self._forward(lib)

    def _forward(self, lib):
        return snap(lib)

    @classmethod
    def build(cls, lib):
        return snap(lib)

    @staticmethod
    def helper(lib):
        return snap(lib)

    def __call__(self, lib):
        return snap(lib)


def gen(lib):
    yield snap(lib)


def gen_outer(lib):
    r = yield from gen(lib)
    return r


async def coro(lib):
    return snap(lib)


async def coro_outer(lib):
    await asyncio.sleep(0)
    return await coro(lib)


def run_coro_send(lib):
    c = coro(lib)
    try:
        c.send(None)
    except StopIteration as e:
        return e.value
    raise AssertionError("coroutine did not finish")


def multiline(lib):
    return (
        1,
        snap(
            lib
        ),
    )[1]


def führe_aus(lib):  # non-ASCII (latin-1) function name
    return snap(lib)


def 関数(lib):  # UCS-2 function name
    return snap(lib)


def run_exec(lib, filename, prefix_lines=0):
    ns = {"snap": snap, "lib": lib}
    exec(compile("\n" * prefix_lines + "R = snap(lib)\n", filename, "exec"), ns)
    return ns["R"]


def run_class_body(lib):
    class K:
        R = snap(lib)
    return K.R


def _immortal_target(lib):
    return snap(lib)


def immortal_code(lib):
    return _immortal_target(lib)


def make_immortal(co):
    """3.14: a frame refers to its code object through a _PyStackRef whose low
    bit is set when the object is immortal (code objects usually are not, so
    this makes one immortal to exercise the tag). False where not possible."""
    try:
        set_immortal = ctypes.pythonapi._Py_SetImmortal
    except AttributeError:
        return False
    set_immortal.argtypes = [ctypes.py_object]
    set_immortal.restype = None
    set_immortal(co)
    return getattr(sys, "_is_immortal", lambda o: False)(co)


IMMORTAL = sys.version_info >= (3, 14) and make_immortal(_immortal_target.__code__)


def _cell_gen(a):
    x = a

    def inner():
        return x
    yield inner


def gc_in_incomplete_frame(lib):
    """3.11: calling a generator function runs MAKE_CELL and RETURN_GENERATOR
    before RESUME; a collection triggered by those allocations runs
    gc.callbacks while that frame is "incomplete" (traceback skips it, so
    must we). 3.12+ defer collections to the eval breaker: a plain check."""
    got, armed = [], []

    def cb(phase, info):
        if phase == "start" and armed and not got:
            got.append(snap(lib))
    old = gc.get_threshold()
    gc.collect()
    gc.callbacks.append(cb)
    gc.set_threshold(1, 1000, 1000)
    try:
        for i in range(5):
            gc.collect()
            armed.append(1)
            _cell_gen(i)
            armed.clear()
            if got:
                break
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(cb)
    return got[0] if got else snap(lib)


def cases(lib):
    """(name, thunk, max, entry rules); entry indices count from the innermost frame."""
    yield "plain", lambda: snap(lib), 4096, {0: 0}
    for k in (0, 1, 5, 20, 100, 400):
        yield "depth%d" % k, (lambda k=k: rec(lib, k)), 4096, {i: 0 for i in range(k + 1)}
    yield "truncated5", lambda: rec(lib, 30, 5), 5, {}
    yield "truncated1", lambda: rec(lib, 30, 1), 1, {}
    yield "nested", lambda: nested(lib), 4096, {0: 0, 1: 0, 2: 0}
    yield "method", lambda: Model().step(lib), 4096, {0: 0, 1: 0, 2: 0}
    yield "classmethod", lambda: Model.build(lib), 4096, {}
    yield "staticmethod", lambda: Model.helper(lib), 4096, {}
    yield "__call__", lambda: Model()(lib), 4096, {}
    yield "generator-next", lambda: next(gen(lib)), 4096, {0: 0, 1: 1}
    yield "generator-for", lambda: [x for x in gen(lib)][0], 4096, {}
    yield "yield-from", lambda: next(gen_outer(lib)), 4096, {}
    yield "coroutine-send", lambda: run_coro_send(lib), 4096, {0: 0, 1: 1}
    yield "asyncio", lambda: asyncio.run(coro_outer(lib)), 4096, {}
    yield "lambda", lambda: (lambda: snap(lib))(), 4096, {}
    yield "comprehension", lambda: [snap(lib) for _ in range(1)][0], 4096, {}
    yield "sorted-key", lambda: _keyed(lib), 4096, {0: 0, 1: 1}
    yield "exec", lambda: run_exec(lib, "<string>"), 4096, {0: 0, 1: 1}
    yield "exec-far-line", lambda: run_exec(lib, "<far>", 99999), 4096, {}
    yield "exec-unicode-file", lambda: run_exec(lib, "/tmp/dåta-文件-\U0001F600.py"), 4096, {}
    yield "exec-undecodable-file", lambda: run_exec(lib, "/tmp/\udcff\udcfe.py"), 4096, {}
    yield "class-body", lambda: run_class_body(lib), 4096, {}
    yield "gc-callback", lambda: gc_in_incomplete_frame(lib), 4096, {}
    yield "multiline", lambda: multiline(lib), 4096, {}
    yield "two-calls", lambda: two_calls(lib), 4096, {}
    yield "latin1-name", lambda: führe_aus(lib), 4096, {}
    yield "ucs2-name", lambda: 関数(lib), 4096, {}
    if IMMORTAL:
        yield "immortal-code", lambda: immortal_code(lib), 4096, {}


def two_calls(lib):
    """Two captures whose chains differ only in this frame's instruction: the
    second must not be given the first's frames by the chain cache (pyprobe's
    check_cached compares every cached capture with a walk)."""
    snap(lib)
    return snap(lib)


def _keyed(lib):
    out = []
    sorted([0], key=lambda x: out.append(snap(lib)))
    return out[0]


def run_cases(where):
    for mode, lib in LIBS:
        for name, thunk, max, entries in cases(lib):
            compare("%s/%s/%s" % (where, mode, name), thunk(), max, entries)


def thread_cases():
    """The same cases from a Python thread (its own thread state and frames)."""
    box = []

    def body():
        try:
            for mode, lib in LIBS:
                for name, thunk, max, entries in cases(lib):
                    box.append(("thread/%s/%s" % (mode, name), thunk(), max, entries))
        except BaseException:
            box.append(traceback.format_exc())
    t = threading.Thread(target=body, name="probe-thread")
    t.start()
    t.join()
    for item in box:
        if isinstance(item, str):
            fail("thread raised:\n" + item)
        else:
            compare(*item)


def concurrent_threads(nthreads=4, rounds=300):
    """Several threads capturing with the GIL released while others run Python."""
    box, lock = [], threading.Lock()

    def body(i):
        bad = None
        for r in range(rounds):
            res = rec(CD, (i + r) % 7)
            n, raw, tb, quals = res
            if n != len(tb):
                bad = ("concurrent/%d/%d" % (i, r), res, 4096, {})
                break
            if r % 50 == 0:
                with lock:
                    box.append(("concurrent/%d/%d" % (i, r), res, 4096, {}))
        if bad:
            with lock:
                box.append(bad)
    ts = [threading.Thread(target=body, args=(i,)) for i in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for item in box:
        compare(*item)


# --------------------------------------------------------- decoder checks
def code_objects(limit):
    import argparse, ast, dataclasses, email.message, inspect, json, typing, unittest  # noqa
    import http.client, xml.dom.minidom, decimal, pydoc, difflib, tokenize  # noqa
    seen, out = set(), []

    def add(co):
        if id(co) in seen or len(out) >= limit:
            return
        seen.add(id(co))
        out.append(co)
        for c in co.co_consts:
            if isinstance(c, types.CodeType):
                add(c)
    # whole modules: module-level code has the longest, most varied tables
    for m in (traceback, inspect, typing, difflib, tokenize):
        src = getattr(m, "__file__", None)
        if src and src.endswith(".py"):
            with open(src, "rb") as fh:
                add(compile(fh.read(), src, "exec"))
    add(compile("x = (1,\n" + "\n" * 300 + "2)\nif x:\n    y = [i for i in x\n\n    if i]\n" +
                "\n" * 70000 + "z = {1: 2,\n 3: 4}\n", "<synthetic>", "exec"))
    for m in list(sys.modules.values()):
        for v in list(getattr(m, "__dict__", {}).values()):
            if isinstance(v, types.FunctionType):
                add(v.__code__)
            elif isinstance(v, type):
                for a in list(vars(v).values()):
                    fn = getattr(a, "__func__", a)
                    if isinstance(fn, types.FunctionType):
                        add(fn.__code__)
    return out


def decoder_checks(limit=6000, max_offsets=400000):
    global checks
    addr2line = ctypes.pythonapi.PyCode_Addr2Line
    addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
    addr2line.restype = ctypes.c_int
    cos = code_objects(limit)
    done = bad = 0
    buf = ctypes.create_string_buffer(1 << 16)
    for co in cos:
        checks += 1
        if PY.probe_names(co, buf, len(buf)) != 0:
            fail("describe refused code object %r" % co)
            bad += 1
            continue
        file_, func = buf.value.split(FS)
        want = (enc(co.co_filename), enc(co.co_qualname if QUAL else co.co_name))
        if (file_, func) != want:
            fail("names of %r: got %r, expected %r" % (co, (file_, func), want))
            bad += 1
        if PY.probe_line(co, -1) != co.co_firstlineno:
            fail("line of %r at -1: %d" % (co, PY.probe_line(co, -1)))
        nbytes = len(co.co_code)
        for off in range(0, nbytes, 2):
            a, b = PY.probe_line(co, off), addr2line(co, off)
            done += 1
            if a != b:
                bad += 1
                if bad < 20:
                    fail("line of %r at offset %d: decoder %d, PyCode_Addr2Line %d" % (co, off, a, b))
        if PY.probe_line(co, nbytes) != -1000:
            fail("offset past the bytecode of %r accepted" % co)
        if done >= max_offsets:
            break
    # objects that are not code objects must be refused, not misread
    for obj in ("a string", 12345, 1.5, [1, 2], {"a": 1}, None, Model, decoder_checks,
                sys._getframe(), b"bytes" * 40, object()):
        checks += 1
        if PY.probe_line(obj, 0) != -1000 or PY.probe_names(obj, buf, len(buf)) != -1:
            fail("describe accepted a %s" % type(obj).__name__)
    return len(cos), done


# ------------------------------------------------------- other behaviours
def finalisation_check():
    """A daemon thread captures and describes in a loop (GIL released) while the
    interpreter shuts down around it: the process must exit cleanly."""
    global checks
    checks += 1
    if "libasan" in open("/proc/self/maps").read():
        print("finalisation check skipped under ASan (it races on purpose)")
        return
    code = ("import ctypes, threading, time, sys\n"
            "lib = ctypes.CDLL(%r)\n"
            "lib.probe_spin.argtypes = [ctypes.c_int]\n"
            "def f(): lib.probe_spin(400)\n"
            "for i in range(3): threading.Thread(target=f, daemon=True).start()\n"
            "time.sleep(0.05)\n" % SO)
    # LW_TEST_EXEC: the emulator that runs this interpreter (make check-aarch64;
    # a wrapper script starts its own)
    with open(sys.executable, "rb") as fh:
        script = fh.read(2) == b"#!"
    cmd = ([] if script else os.environ.get("LW_TEST_EXEC", "").split()) + [
        sys.executable, "-c", code]
    r = subprocess.run(cmd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    if r.returncode != 0:
        fail("shutdown with capturing daemon threads: exit status %d\n%s" % (
            r.returncode, r.stdout.decode(errors="replace")))


def bench():
    def deep(k):
        if k:
            return deep(k - 1)
        n = ctypes.c_int()
        ns = CD.probe_bench(300000, 20, ctypes.byref(n))
        return ns, n.value
    return deep(30)


def main():
    global checks
    if sys.version_info >= (3, 15):
        # Not supported (yet): must be refused cleanly, never misread.
        # (Move the bound when LW_PY_NEWEST in src/track/pyframes.c moves.)
        rc, n = PY.probe_init(), snap(CD)[0]
        print("python %s: unsupported; lw_py_init %d (%s), capture %d frames" % (
            sys.version.split()[0], rc, PY.probe_status().decode(), n))
        return 0 if rc == -1 and n == 0 and PY.probe_version() == 0 else 1
    if PY.probe_init() != 0:
        print("lw_py_init failed: %s" % PY.probe_status().decode())
        return 1
    ver = PY.probe_version()
    if ver != sys.hexversion:
        fail("lw_py_version 0x%08x, sys.hexversion 0x%08x" % (ver, sys.hexversion))
    checks += 1
    if CD.probe_c_thread() != 0:
        fail("a C thread that never ran Python got %d frames" % CD.probe_c_thread())
    run_cases("main")
    thread_cases()
    concurrent_threads()
    ncode, noffsets = decoder_checks()
    finalisation_check()
    ns, nframes = bench()
    print("python %s (%s%s): %d checks, %d failures; decoder: %d code objects, %d offsets; "
          "capture of %d frames: %.1f ns" % (
              sys.version.split()[0], PY.probe_status().decode(),
              ", immortal code case" if IMMORTAL else "", checks, len(failures),
              ncode, noffsets, nframes, ns))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
