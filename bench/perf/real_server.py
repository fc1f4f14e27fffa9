# SPDX-License-Identifier: Apache-2.0
"""make bench, section server: the cost per request of an inference server
that never calls optimizer.step() (issue 37), bare and under leakwatch,
alternated round by round, on real PyTorch 2.6 and the CPU stand-ins.
Under leakwatch each request is a step (a call of the outermost nn.Module):
a forward pre-hook, a step mark, and PyTorch's counters at a thinning
schedule. The server keeps a bounded per-session key/value cache under
torch.no_grad() (no leak: no diagnosis window opens). Kernels take no time
on the stand-ins, so this is the worst case of relative overhead. Run inside
the real-clients root (scripts/bench.sh does it).

    real_server.py ROUNDS                the comparison (prints the table)
    real_server.py --loop REQUESTS       one timed run (prints us/request: CPU and
                                         wall of the first EARLY requests after
                                         the warm-up, then of REQUESTS more)"""
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LEAKWATCH = os.path.join(REPO, "build", "leakwatch")
STAND_INS = os.path.join(REPO, "build", "tests", "lib")
WARM = 200
EARLY = 2000


def loop(requests):
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, dim=64):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))

        def forward(self, x, past):
            q, k, v = self.q(x), self.k(x), self.v(x)
            keys = torch.stack([k] + [pk for pk, _ in past])
            values = torch.stack([v] + [pv for _, pv in past])
            return self.o((keys.mean(0) * q) * values.mean(0)), k, v

    model = Attention().cuda()
    cache = {}

    def serve(session, x):
        with torch.no_grad():
            past = cache.setdefault(session, [])
            out, k, v = model(x, past)
            past.append((k, v))
            del past[:-4]
            return out

    x = torch.randn(1, 64).cuda()
    for i in range(WARM):
        serve(i % 8, x)
    # Two phases: the first EARLY requests after the warm-up (where the
    # once-a-run work falls: the anatomy's first walks, a diagnosis window if
    # the cache's filling looked like growth), then the next `requests`.
    out = []
    for n in (EARLY, requests):
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(n):
            serve(i % 8, x)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        out += [cpu / n * 1e6, wall / n * 1e6]
    return out


def one(kind, requests, tmp):
    py = [sys.executable, os.path.abspath(__file__), "--loop", str(requests)]
    env = dict(os.environ, LEAKWATCH_QUIET="1")
    if kind == "bare":
        env["LD_LIBRARY_PATH"] = STAND_INS
        cmd = py
    else:
        cmd = [LEAKWATCH, "run", "--cuda-stand-ins", "-q", "-r", os.path.join(tmp, "r.json"),
               "--"] + py
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"real_server: {kind} run failed ({out.returncode}): {out.stderr[-2000:]}")
    return [float(v) for v in out.stdout.strip().splitlines()[-1].split()]


def main():
    if sys.argv[1:2] == ["--loop"]:
        print(" ".join(f"{v:.2f}" for v in loop(int(sys.argv[2]))))
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    requests = int(os.environ.get("LW_BENCH_REQUESTS", "5000"))
    tmp = os.environ.get("TMPDIR", "/tmp")
    runs = {"bare": [], "leakwatch": []}
    for _ in range(rounds):
        for kind in runs:
            runs[kind].append(one(kind, requests, tmp))
    med = statistics.median
    print(f"inference server without optimizer steps, {rounds} rounds (median, min..max); CPU "
          f"time of the process (all its threads: the primary number), then wall time:")
    phases = ((0, f"the first {EARLY} requests after {WARM} of warm-up"),
              (2, f"the next {requests} (after {WARM + EARLY})"))
    for base, title in phases:
        print(f" {title}:")
        for k, clock in enumerate(("cpu", "wall")):
            bare = [r[base + k] for r in runs["bare"]]
            watched = [r[base + k] for r in runs["leakwatch"]]
            added = [w - b for b, w in zip(bare, watched)]
            ratio = [w / b for b, w in zip(bare, watched)]
            print(f"  {clock:4s} bare {med(bare):8.1f} us/request, leakwatch {med(watched):8.1f}: "
                  f"{med(added):+.1f} us/request ({min(added):+.1f}..{max(added):+.1f}), "
                  f"{med(ratio):.3f}x bare ({min(ratio):.3f}..{max(ratio):.3f})")

if __name__ == "__main__":
    main()
