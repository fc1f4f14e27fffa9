# SPDX-License-Identifier: Apache-2.0
"""The table of bench/perf/callgrind_torch.sh: from the callgrind files of its
runs (OUT/LOOP-MODE/cg.out-NN, one per thread), the instructions per step of
the job's threads and of leakwatch's worker thread, and what leakwatch adds
against the bare run of the same loop (tensors against bare-async: on the
stand-ins that backend has a cost of its own).

    callgrind_torch_table.py OUT STEPS LOOP...

With LW_CG_PARTS=1, per leakwatch run, the functions whose own instructions
on the job's threads grew most (callgrind_annotate of each thread's file)."""
import collections
import glob
import os
import re
import subprocess
import sys

WORKER_MARK = b"/process/worker.c"  # a file of leakwatch's worker thread names it
LOOP_NAMES = {"train": "training loop, 200 steps after 50 of warm-up",
              "steady": "training loop, 200 steps after 2,000 of warm-up"}
BASE = {"default": "bare", "tensors": "bare-async"}


def threads(d):
    """[(is_worker, instructions, path)] of one run."""
    out = []
    for f in sorted(glob.glob(os.path.join(d, "cg.out-*"))):
        with open(f, "rb") as fh:
            data = fh.read()
        m = re.search(rb"^summary:\s*(\d+)", data, re.M)
        if m:
            out.append((WORKER_MARK in data, int(m.group(1)), f))
    return out


def own_by_function(files):
    """Each function's own instructions, summed over files."""
    got = collections.Counter()
    for f in files:
        text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", f],
                              capture_output=True, text=True).stdout
        for line in text.splitlines():
            if "=>" in line or "TOTALS" in line:
                continue
            m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*:.*)$", line)
            if m:
                got[m.group(2).strip()] += int(m.group(1).replace(",", ""))
    return got


def main():
    out, steps, loops = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    parts = os.environ.get("LW_CG_PARTS") == "1"
    print("\n== real PyTorch 2.6 on the stand-ins: instructions per step (callgrind) ==")
    print("job: the loop's thread and PyTorch's autograd engine's, what a step pays; "
          "worker: leakwatch's sampler thread, whose clock-driven work callgrind's slowdown "
          "inflates per step (not comparable with a real run)")
    for loop in loops:
        runs = {}
        for d in sorted(glob.glob(os.path.join(out, loop + "-*"))):
            mode = os.path.basename(d)[len(loop) + 1:]
            t = threads(d)
            if t:
                runs[mode] = t
        if "bare" not in runs:
            print(f"  {loop}: no bare run")
            continue
        job = {m: sum(n for w, n, _ in t if not w) / steps for m, t in runs.items()}
        work = {m: sum(n for w, n, _ in t if w) / steps for m, t in runs.items()}
        print(f"  {LOOP_NAMES.get(loop, loop)}: bare {job['bare']:,.0f} a step")
        if "bare-async" in job:
            label = "bare on tensors mode's backend"
            print(f"    {label:34s} {job['bare-async'] - job['bare']:+10,.0f}"
                  f" a step ({(job['bare-async'] / job['bare'] - 1) * 100:+.1f} %)")
        for mode in ("default", "tensors"):
            base = BASE[mode]
            if mode not in job or base not in job:
                continue
            add = job[mode] - job[base]
            print(f"    {mode + ' - ' + base:34s} {add:+10,.0f} a step ({add / job[base] * 100:+.1f} %,"
                  f" {job[base] / job[mode]:.3f}x {base}); worker {work[mode]:,.0f} a step")
            if parts:
                a = own_by_function([f for w, _, f in runs[base] if not w])
                b = own_by_function([f for w, _, f in runs[mode] if not w])
                diff = sorted(((b[k] - a[k], k) for k in set(a) | set(b)), reverse=True)
                for n, k in diff[:15]:
                    print(f"        {n / steps:+9,.0f}  {k[:110]}")


if __name__ == "__main__":
    main()
