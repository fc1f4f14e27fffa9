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
         window's analysis and the owner search), after
  steady the train loop after 2,000 steps of warm-up, bare and default: the
         cost of a step once leakwatch's start-up work is done (counters
         read at each of the first 200 steps, the detector's dense first
         evaluations), what a long job pays; train's 400 steps after 50
         are the start, the worst part
  infer  inference requests of about 1 ms: a forward pass under no_grad and
         a fixed 0.6 ms of busy waiting (the GPU's time), no optimizer (the
         same modes as train but no-anatomy)
Each run reports the median wall time of its steps (less load noise than the
mean) and its process CPU time per step (all threads: the autograd engine's
and leakwatch's sampler included). The table: medians over the rounds of
each run's figure minus (or over) the bare run's of the same round.

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


def _helper():
    t = sys.modules.get("_leakwatch_helper._torch")
    return getattr(t, "_helper", None) if t is not None else None


def loop(kind, steps):
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
    for _ in range(2000 if kind == "steady" else 50):
        step()
    phase = []  # per step: 0 before the window, 1 open, 2 the closing step, 3 after
    times = []
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(steps):
        h = _helper()
        before = (h.window is not None, len(h.windows)) if h is not None else (False, 0)
        s = time.perf_counter()
        step()
        times.append(time.perf_counter() - s)
        after = (h.window is not None, len(h.windows)) if h is not None else (False, 0)
        phase.append(2 if after[1] > before[1] else 1 if before[0] else 3 if before[1] else 0)
    c1, t1 = time.process_time(), time.perf_counter()
    out = {"rate": steps / (t1 - t0), "cpu_us": (c1 - c0) / steps * 1e6,
           "step_us": statistics.median(times) * 1e6}
    for p, name in ((1, "window_us"), (2, "close_us")):
        sel = [t for t, q in zip(times, phase) if q == p]
        if sel:
            out[name] = statistics.median(sel) * 1e6
            out[name.replace("_us", "_steps")] = len(sel)
    h = _helper()
    if h is not None and h.windows:
        search = h.windows[0].get("owner_search") or {}
        out["owner_s"] = search.get("seconds")
    return out


def one(loop_kind, mode, steps, tmp):
    py = [sys.executable, os.path.abspath(__file__), "--loop", loop_kind, str(steps)]
    env = dict(os.environ, LEAKWATCH_QUIET="1")
    if mode in ("bare", "bare-async"):
        env["LD_LIBRARY_PATH"] = STAND_INS
        if mode == "bare-async":  # the backend tensors mode switches to, without leakwatch
            env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
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
            ("leak", 300, ("bare", "default")),
            ("infer", 400, ("bare", "default", "tensors", "bare-async")),
            ("steady", 400, ("bare", "default")))
    if os.environ.get("LW_REALTORCH_BASE"):
        plan = tuple((k, n, modes + ("base",) if k != "leak" else modes) for k, n, modes in plan)
    only = os.environ.get("LW_REALTORCH_LOOPS")
    if only:
        plan = tuple(p for p in plan if p[0] in only.split())
    res = {(k, m): [] for k, _, modes in plan for m in modes}
    for _ in range(rounds):
        for k, steps, modes in plan:
            for m in modes:
                res[(k, m)].append(one(k, m, steps, tmp))
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
