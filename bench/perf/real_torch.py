# SPDX-License-Identifier: Apache-2.0
"""make bench, section realtorch: what leakwatch adds to each step of real
PyTorch 2.6 loops on the CPU stand-ins, against the bare loop, alternated
round by round in one invocation. Kernels take no time on the stand-ins, so
this is the worst case of relative overhead: every step is allocator and
Python work only. Run inside the real-clients root (scripts/bench.sh does it).

Loops (each in a process of its own, 50 steps of warm-up first):
  train  Linear/ReLU/Adam/CrossEntropy, batch 64 (the optimizer marks the
         steps): bare, default mode, tensors mode, and bare on the backend
         tensors mode switches to (backend:cudaMallocAsync): on the
         stand-ins that backend has a cost of its own (every tensor a
         stand-in call, no pool), so leakwatch's share of tensors mode is
         tensors minus that run
  leak   the same loop keeping each step's loss (512 bytes a step): the
         tensor series grows, the diagnosis window opens for 32 steps and
         closes with the owner search. Its steps are split by the helper's
         state: before the window, window open, the closing step (the
         window's analysis and the owner search), after (10 steps of
         warm-up here: the window opens at about the 26th step). Two more
         runs give the floor of a step with the window open: bare-record,
         the bare loop with PyTorch's own allocation history recording on
         (the window's arguments) over the steps the default run's window
         covered in the same round, against which the rows "PyTorch's own
         recording - bare" and "window open - PyTorch's own recording"
         (leakwatch's share); and window-ab, under leakwatch, the training
         loop in blocks of 16 steps alternated in one process: nothing,
         PyTorch's recording on, the helper's window open (closed without
         the analysis), whose differences are the same split without the
         default mode's own per-step cost and the detector's work after its
         verdict that the runs apart carry (issue 44)
  steady the train loop after 2,000 steps of warm-up (the same modes as
         train but no-anatomy): the cost of a step once leakwatch's
         start-up work is done (counters
         read at each of the first 200 steps, the detector's dense first
         evaluations), what a long job pays; train's 400 steps after 50
         are the start, the worst part
  infer  inference requests of about 1 ms: a forward pass under no_grad and
         a fixed 0.6 ms of busy waiting (the GPU's time), no optimizer (the
         same modes as train but no-anatomy)
Each run reports the median wall time of its steps (less load noise than the
mean) and its process CPU time per step (all threads: the autograd engine's
and leakwatch's sampler included); the leak loop's phases also the median of
their steps' process CPU time and of their job CPU time (this thread and
PyTorch's autograd threads, not leakwatch's sampler): on a loaded machine
the primary numbers. The table: medians over the rounds of each run's
figure minus (or over) the bare run's of the same round.

LW_REALTORCH_BASE=DIR adds a run of the default mode under another build
(DIR/leakwatch, e.g. main's build/) to the train and infer loops, and a row
comparing this build's default mode with it round by round: a change's
before and after in one invocation.

    real_torch.py ROUNDS              the comparison (prints the table)
    real_torch.py --loop KIND STEPS   one run (prints its JSON)"""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LEAKWATCH = os.path.join(REPO, "build", "leakwatch")
STAND_INS = os.path.join(REPO, "build", "tests", "lib")
REQUEST_BUSY_S = 0.0006
# The leak loop's warm-up: its window opens after about 26 steps (the
# detector's verdict), which must fall in the measured steps
LEAK_WARM_UP = 10


def _record(torch, on):
    """PyTorch's allocation history recording with the diagnosis window's
    arguments (python/leakwatch/_torch.py, _Window: keep them the same),
    each passed only where this version's signature has it, as the helper's
    _call_accepted does."""
    import inspect
    mem = torch.cuda.memory
    if not on:
        mem._record_memory_history(enabled=None)
        return
    kw = dict(enabled="all", context="alloc", stacks="python", max_entries=100000,
              clear_history=True,
              skip_actions=["free_requested", "segment_alloc", "segment_free", "snapshot"])
    try:
        params = inspect.signature(getattr(mem, "_record_memory_history_impl", None)
                                   or mem._record_memory_history).parameters
    except (TypeError, ValueError):
        params = {}
    if params and not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        kw = {k: v for k, v in kw.items() if k in params}
    mem._record_memory_history(**kw)


def _helper():
    t = sys.modules.get("_leakwatch_helper._torch")
    return getattr(t, "_helper", None) if t is not None else None


class _JobClock:
    """CPU time of the job's own threads: this one and PyTorch's autograd
    engine threads (pt_autograd_*, where backward runs and allocates), from
    their /proc schedstat; not leakwatch's sampler thread, whose work (the
    detector's evaluations) is apart from the step's."""
    def __init__(self):
        self.fds = []
        for t in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{t}/comm") as f:
                    if f.read().startswith("pt_autograd"):
                        self.fds.append(os.open(f"/proc/self/task/{t}/schedstat", os.O_RDONLY))
            except OSError:
                pass

    def others(self):
        n = 0
        for fd in self.fds:
            try:
                n += int(os.pread(fd, 64, 0).split()[0])
            except (OSError, ValueError, IndexError):
                pass
        return n / 1e9


def window_ab(steps, block=16):
    """The leak loop's window-ab run (under leakwatch): the training loop,
    which never opens a window of itself, in blocks of steps alternated in
    one process: nothing extra (off), PyTorch's history recording on with the
    window's arguments (rec), the helper's diagnosis window open (win: the
    recording and leakwatch's per-step work while open, closed without the
    analysis). Per block the median step's wall time and job CPU (this
    thread and autograd's); per pair the medians over blocks of rec - off and
    win - rec. In one process the three share the machine's moments, which
    the leak loop's runs apart do not."""
    import torch
    from torch import nn, optim
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
    opt = optim.Adam(model.parameters())
    crit = nn.CrossEntropyLoss()
    x = torch.randn(64, 128).cuda()
    y = torch.randint(10, (64,)).cuda()

    def step():
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    for _ in range(50):
        step()
    h = _helper()
    clock = _JobClock()
    h.window_steps = 1 << 30  # closed here, not by its length
    modes = ("off", "rec", "win")
    got = {m: ([], [], []) for m in modes}
    for r in range(max(steps // (block * len(modes)), 1)):
        for m in (modes if r % 2 == 0 else modes[::-1]):
            if m == "rec":
                _record(torch, True)
            elif m == "win":
                h.windows_left, h.next_window_at = 1, 0
                h.open_window(torch, 0)
            walls, cpus, jobs = [], [], []
            for _ in range(block):
                o, j = clock.others(), time.thread_time()
                c, s = time.process_time(), time.perf_counter()
                step()
                walls.append(time.perf_counter() - s)
                cpus.append(time.process_time() - c)
                jobs.append(time.thread_time() - j + clock.others() - o)
            if m == "rec":
                _record(torch, False)
            elif m == "win":
                h._close_window_quietly()
            for i, v in enumerate((walls, cpus, jobs)):
                got[m][i].append(statistics.median(v) * 1e6)
    out = {}
    for a, b in (("rec", "off"), ("win", "rec")):
        for i, clk in enumerate(("us", "cpu_us", "job_us")):
            out[f"{a}-{b}_{clk}"] = statistics.median(
                [p - q for p, q in zip(got[a][i], got[b][i])])
    out["blocks"] = len(got["off"][0])
    return out


def _callgrind_start():
    """LW_REALTORCH_CALLGRIND names a library whose lw_cg_start() starts
    callgrind's instrumentation and zeroes its counts (its client requests,
    valgrind/callgrind.h; bench/perf/callgrind_torch.sh builds it): the
    warm-up is not counted."""
    lib = os.environ.get("LW_REALTORCH_CALLGRIND")
    if not lib:
        return False
    import ctypes
    ctypes.CDLL(lib).lw_cg_start()
    return True


def loop(kind, steps):
    if kind == "window":
        return window_ab(steps)
    import torch
    from torch import nn, optim
    if kind == "infer":
        model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10)).cuda().eval()

        def step():
            x = torch.randn(16, 128).cuda()
            with torch.no_grad():
                out = model(x).argmax(1).cpu()
            end = time.perf_counter() + REQUEST_BUSY_S
            while time.perf_counter() < end:
                pass
            return out
    else:
        model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
        opt = optim.Adam(model.parameters())
        crit = nn.CrossEntropyLoss()
        x = torch.randn(64, 128).cuda()
        y = torch.randint(10, (64,)).cuda()
        kept = []

        def step():
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            opt.step()
            if kind == "leak":
                kept.append(loss.detach())
            return loss.item()

    # Warm-up: caches filled, sites seen. "steady" is the training loop
    # after 2,000 steps: leakwatch's start-up work (counters read at every
    # step of the first 200, the detector's dense first evaluations) done,
    # the per-step cost a long job pays.
    warm = LEAK_WARM_UP if kind == "leak" else 2000 if kind == "steady" else 50
    for _ in range(warm):
        step()
    # Under callgrind (bench/perf/callgrind_torch.sh): instructions counted
    # from here, and the process ends with the last step (no exit work).
    counted = _callgrind_start()
    phase = []  # per step: 0 before the window, 1 open, 2 the closing step, 3 after
    times = []
    cpus = []
    jobs = []
    clock = _JobClock() if kind == "leak" else None
    # bare-record: PyTorch's recording over the steps the default run's
    # window covered (LW_REALTORCH_RECORD=FIRST:STEPS, in the job's steps)
    record = os.environ.get("LW_REALTORCH_RECORD") if kind == "leak" else None
    if record:
        first, n = (int(v) for v in record.split(":"))
        rec_at = max(first - warm, 0)
        rec_end = max(first + n - 1 - warm, rec_at + 1)
    # The window's phases are followed in the leak loop only: elsewhere no
    # window opens, and looking for one at every step (the helper's
    # attributes) would be the bench's work counted as leakwatch's.
    track = kind == "leak"
    c0, t0 = time.process_time(), time.perf_counter()
    for i in range(steps):
        h = _helper() if track else None
        before = (h.window is not None, len(h.windows)) if h is not None else (False, 0)
        if record and i in (rec_at, rec_end):
            _record(torch, i == rec_at)  # between steps, as the window opens and closes
        o = clock.others() if clock else 0.0
        j = time.thread_time()
        c = time.process_time()
        s = time.perf_counter()
        step()
        times.append(time.perf_counter() - s)
        cpus.append(time.process_time() - c)
        jobs.append(time.thread_time() - j + ((clock.others() - o) if clock else 0.0))
        after = (h.window is not None, len(h.windows)) if h is not None else (False, 0)
        if record:
            phase.append(1 if rec_at <= i < rec_end else 3 if i >= rec_end else 0)
        else:
            phase.append(2 if after[1] > before[1] else 1 if before[0] else 3 if before[1] else 0)
    c1, t1 = time.process_time(), time.perf_counter()
    if counted:
        sys.stdout.flush()
        os._exit(0)
    out = {"rate": steps / (t1 - t0), "cpu_us": (c1 - c0) / steps * 1e6,
           "step_us": statistics.median(times) * 1e6}
    if kind == "leak":
        # The steps after the window (or the recording): warm, and outside
        # it (the steps before it are the first after a short warm-up)
        sel = [(t, c, j) for t, c, j, q in zip(times, cpus, jobs, phase) if q == 3]
        if sel:
            out["after_us"] = statistics.median([v[0] for v in sel]) * 1e6
            out["after_cpu_us"] = statistics.median([v[1] for v in sel]) * 1e6
            out["after_job_us"] = statistics.median([v[2] for v in sel]) * 1e6
    for p, name in ((1, "window_us"), (2, "close_us")):
        sel = [t for t, q in zip(times, phase) if q == p]
        if sel:
            out[name] = statistics.median(sel) * 1e6
            out[name.replace("_us", "_steps")] = len(sel)
            out[name.replace("_us", "_cpu_us")] = statistics.median(
                [c for c, q in zip(cpus, phase) if q == p]) * 1e6
            if clock:
                out[name.replace("_us", "_job_us")] = statistics.median(
                    [c for c, q in zip(jobs, phase) if q == p]) * 1e6
    h = _helper()
    if h is not None and h.windows:
        search = h.windows[0].get("owner_search") or {}
        out["owner_s"] = search.get("seconds")
        out["window_first"] = h.windows[0].get("first_step")
        out["window_marks"] = h.windows[0].get("steps")
    return out


def one(loop_kind, mode, steps, tmp, record=None):
    if mode == "window-ab":
        loop_kind, steps = "window", 16 * 3 * 16
    py = [sys.executable, os.path.abspath(__file__), "--loop", loop_kind, str(steps)]
    env = dict(os.environ, LEAKWATCH_QUIET="1")
    if mode in ("bare", "bare-async", "bare-record"):
        env["LD_LIBRARY_PATH"] = STAND_INS
        if mode == "bare-async":  # the backend tensors mode switches to, without leakwatch
            env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
        if mode == "bare-record":  # PyTorch's own history recording, without leakwatch
            env["LW_REALTORCH_RECORD"] = record or "26:32"
        cmd = py
    else:
        if mode == "no-anatomy":  # the same build with the anatomy's sampling off
            env["LEAKWATCH_TORCH_ANATOMY"] = "0"
        tool = LEAKWATCH
        if mode == "base":  # the default mode under another build (LW_REALTORCH_BASE)
            tool = os.path.join(os.environ["LW_REALTORCH_BASE"], "leakwatch")
        cmd = [tool, "run", "--cuda-stand-ins", "-q", "-r", os.path.join(tmp, "r.json")]
        if mode == "tensors":
            cmd += ["--mode", "tensors"]
        cmd += ["--"] + py
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"real_torch: {loop_kind} {mode} run failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _med(v):
    return statistics.median(v) if v else float("nan")


def main():
    if sys.argv[1:2] == ["--loop"]:
        print(json.dumps(loop(sys.argv[2], int(sys.argv[3]))))
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    tmp = os.environ.get("TMPDIR", "/tmp")
    plan = (("train", 400, ("bare", "default", "tensors", "no-anatomy", "bare-async")),
            ("leak", 300, ("bare", "default", "bare-record", "window-ab")),
            ("infer", 400, ("bare", "default", "tensors", "bare-async")),
            ("steady", 400, ("bare", "default", "tensors", "bare-async")))
    if os.environ.get("LW_REALTORCH_BASE"):
        plan = tuple((k, n, modes + ("base",) if k != "leak" else modes) for k, n, modes in plan)
    only = os.environ.get("LW_REALTORCH_LOOPS")
    if only:
        plan = tuple(p for p in plan if p[0] in only.split())
    res = {(k, m): [] for k, _, modes in plan for m in modes}
    for _ in range(rounds):
        for k, steps, modes in plan:
            for m in modes:
                record = None
                if m == "bare-record" and res[(k, "default")]:
                    # the steps of this round's window (the default run is before)
                    d = res[(k, "default")][-1]
                    if d.get("window_first") is not None:
                        record = f"{d['window_first']}:{d['window_marks']}"
                res[(k, m)].append(one(k, m, steps, tmp, record))
    print(f"real PyTorch loops, {rounds} rounds alternated; per run the median step (wall) and the"
          f" CPU time per step; medians over rounds of (run - bare of the same round)")
    for k, steps, modes in plan:
        bare = res[(k, "bare")]
        what = {"train": "training loop", "steady": "training loop after 2,000 steps",
                "leak": "training loop keeping each loss",
                "infer": "inference requests of ~1 ms"}[k]
        print(f"  {what} ({steps} steps): bare {_med([r['step_us'] for r in bare]):.0f} us a step,"
              f" {_med([r['cpu_us'] for r in bare]):.0f} us CPU, {_med([r['rate'] for r in bare]):.0f}/s")
        rows = [(m, "step_us", m) for m in modes[1:] if k != "leak" and m != "bare-async"]
        if k == "leak":
            rows = [("default", "step_us", "before the window"),
                    ("default", "window_us", "window open"),
                    ("default", "close_us", "closing step (analysis, owner search)")]
        for m, key, label in rows:
            runs = res[(k, m)]
            pairs = [(r[key], b["step_us"], r["cpu_us"], b["cpu_us"], r["rate"] / b["rate"])
                     for r, b in zip(runs, bare) if key in r]
            if not pairs:
                print(f"    {label:40s} not reached")
                continue
            add = [p[0] - p[1] for p in pairs]
            ratio = [p[1] / p[0] for p in pairs]
            line = (f"    {label:40s} +{_med(add):6.1f} us a step [{min(add):.1f}..{max(add):.1f}],"
                    f" {_med(ratio):.3f}x bare")
            if key == "step_us":
                line += (f"; CPU +{_med([p[2] - p[3] for p in pairs]):.1f} us a step;"
                         f" steps/s {_med([p[4] for p in pairs]):.3f}x")
            elif key == "window_us":
                line += f" ({_med([r['window_steps'] for r in runs if 'window_steps' in r]):.0f} steps)"
            elif key == "close_us":
                owner = [r["owner_s"] for r in runs if r.get("owner_s") is not None]
                if owner:
                    line += f"; owner search {_med(owner) * 1000:.1f} ms of it"
            print(line)
        if k == "leak" and res.get((k, "bare-record")):
            # The floor of a step with the window open: PyTorch's own history
            # recording (bare-record's recording steps against its steps
            # after them); leakwatch's share (the window's steps against
            # those); and, of it, what opening the window adds (the default
            # run's window steps against its steps after, less the same for
            # bare-record). Round by round: the median step's wall time, its
            # process CPU (all threads: leakwatch's sampler, whose detector
            # works hardest just after the verdict that opens the window,
            # included) and the job's threads' CPU (this one and autograd's).
            rec = res[(k, "bare-record")]
            dft = res[(k, "default")]

            def get(r, phase, clock):
                return r.get(f"{phase}_{clock}us")

            def row(label, value):
                parts = []
                for clock, name in (("", "wall"), ("cpu_", "CPU"), ("job_", "job CPU")):
                    v = [value(d, r, clock) for d, r in zip(dft, rec)]
                    v = [x for x in v if x is not None]
                    if v:
                        parts.append(f"{name} {_med(v):+.1f} [{min(v):.1f}..{max(v):.1f}]")
                print(f"    {label:40s} " + ("; ".join(parts) + " us a step" if parts
                                                else "not reached"))

            def sub(*terms):
                if any(t is None for t in terms):
                    return None
                return terms[0] - sum(terms[1:]) if len(terms) == 2 else (
                    terms[0] - terms[1] - (terms[2] - terms[3]))
            row("PyTorch's own recording - bare",
                lambda d, r, c: sub(get(r, "window", c), get(r, "after", c)))
            row("window open - PyTorch's own recording",
                lambda d, r, c: sub(get(d, "window", c), get(r, "window", c)))
            row("  of it, the window opened, net",
                lambda d, r, c: sub(get(d, "window", c), get(d, "after", c),
                                    get(r, "window", c), get(r, "after", c)))
        if k == "leak" and res.get((k, "window-ab")):
            # The same split in one process, blocks alternated (window_ab):
            # the runs apart above carry the default mode's own per-step cost
            # and the detector's work after its verdict; this does not.
            ab = res[(k, "window-ab")]
            for key, label in (("rec-off", "in one process: recording on - off"),
                               ("win-rec", "in one process: window - recording")):
                parts = []
                for clk, name in (("us", "wall"), ("cpu_us", "CPU"), ("job_us", "job CPU")):
                    v = [r[f"{key}_{clk}"] for r in ab]
                    parts.append(f"{name} {_med(v):+.1f} [{min(v):.1f}..{max(v):.1f}]")
                print(f"    {label:40s} " + "; ".join(parts) +
                      f" us a step ({ab[0]['blocks']} blocks of 16 steps a run)")
        if res.get((k, "base")):
            both = list(zip(res[(k, "default")], res[(k, "base")]))
            own = [d["step_us"] - b["step_us"] for d, b in both]
            rate = [d["rate"] / b["rate"] for d, b in both]
            cpu = [d["cpu_us"] - b["cpu_us"] for d, b in both]
            print(f"    {'default: this build - base build':40s} {_med(own):+.1f} us the median step"
                  f" [{min(own):.1f}..{max(own):.1f}]; steps/s {_med(rate):.3f}x"
                  f" [{min(rate):.3f}..{max(rate):.3f}]; CPU {_med(cpu):+.1f} us a step"
                  f" [{min(cpu):.1f}..{max(cpu):.1f}]")
        if res.get((k, "bare-async")) and res.get((k, "tensors")):
            # Tensors mode switches PyTorch to backend:cudaMallocAsync, whose
            # cost on the stand-ins (no pool: every tensor a stand-in call)
            # is not leakwatch's: its own share is against the bare run on
            # that backend, round by round.
            both = list(zip(res[(k, "tensors")], res[(k, "bare-async")]))
            own = [t["step_us"] - a["step_us"] for t, a in both]
            rate = [t["rate"] / a["rate"] for t, a in both]
            cpu = [t["cpu_us"] - a["cpu_us"] for t, a in both]
            backend = [a["step_us"] - b["step_us"] for a, b in zip(res[(k, "bare-async")], bare)]
            print(f"    {'tensors - bare on its backend':40s} {_med(own):+.1f} us the median step"
                  f" [{min(own):.1f}..{max(own):.1f}]; steps/s {_med(rate):.3f}x"
                  f" [{min(rate):.3f}..{max(rate):.3f}]; CPU {_med(cpu):+.1f} us a step"
                  f" (the backend alone, bare: {_med(backend):+.1f} us a step)")
        if k == "train" and res.get((k, "no-anatomy")):
            # The anatomy's per-step cost (issue 40): the default mode against
            # the same build with it off (LEAKWATCH_TORCH_ANATOMY=0), round by round.
            # The median step hides the sparse walks; the run's rate (all its
            # steps, the walks included) and its CPU time per step do not.
            both = list(zip(res[(k, "default")], res[(k, "no-anatomy")]))
            own = [d["step_us"] / n["step_us"] for d, n in both]
            rate = [d["rate"] / n["rate"] for d, n in both]
            cpu = [d["cpu_us"] - n["cpu_us"] for d, n in both]
            print(f"    {'anatomy on / off (default mode)':40s} {_med(own):.3f}x the median step"
                  f" [{min(own):.3f}..{max(own):.3f}]; steps/s {_med(rate):.3f}x"
                  f" [{min(rate):.3f}..{max(rate):.3f}]; CPU {_med(cpu):+.1f} us a step")


if __name__ == "__main__":
    main()
