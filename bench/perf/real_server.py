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
    real_server.py --loop REQUESTS       one timed run (prints us/request)"""
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
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(requests):
        serve(i % 8, x)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return cpu / requests * 1e6, wall / requests * 1e6


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
    cpu, wall = out.stdout.strip().splitlines()[-1].split()
    return float(cpu), float(wall)


def main():
    if sys.argv[1:2] == ["--loop"]:
        cpu, wall = loop(int(sys.argv[2]))
        print(f"{cpu:.2f} {wall:.2f}")
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    requests = int(os.environ.get("LW_BENCH_REQUESTS", "5000"))
    tmp = os.environ.get("TMPDIR", "/tmp")
    runs = {"bare": [], "leakwatch": []}
    for _ in range(rounds):
        for kind in runs:
            runs[kind].append(one(kind, requests, tmp))
    med = statistics.median
    print(f"inference server without optimizer steps, {requests} requests after {WARM} of "
          f"warm-up, {rounds} rounds (median, min..max); CPU time of the process (all its "
          f"threads: the primary number), then wall time:")
    for k, clock in enumerate(("cpu", "wall")):
        bare = [r[k] for r in runs["bare"]]
        watched = [r[k] for r in runs["leakwatch"]]
        added = [w - b for b, w in zip(bare, watched)]
        ratio = [w / b for b, w in zip(bare, watched)]
        print(f"  {clock:4s} bare {med(bare):8.1f} us/request, leakwatch {med(watched):8.1f}: "
              f"{med(added):+.1f} us/request ({min(added):+.1f}..{max(added):+.1f}), "
              f"{med(ratio):.3f}x bare ({min(ratio):.3f}..{max(ratio):.3f})")


if __name__ == "__main__":
    main()
