# SPDX-License-Identifier: Apache-2.0
"""make bench, section realtorch: steps per second of a real PyTorch 2.6
training loop (Linear/ReLU/Adam/CrossEntropy, batch 64) bare and under
leakwatch (default mode, tensors mode), alternated round by round, on the
CPU stand-ins. Kernels take no time on the stand-ins, so this is the worst
case of relative overhead: every step is allocator and Python work only.
Run inside the real-clients root (scripts/bench.sh does it).

    real_torch.py ROUNDS              the comparison (prints the table)
    real_torch.py --loop STEPS        one timed run (prints steps/s)"""
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LEAKWATCH = os.path.join(REPO, "build", "leakwatch")
STAND_INS = os.path.join(REPO, "build", "tests", "lib")


def loop(steps):
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

    for _ in range(50):  # warm-up: caches filled, sites seen
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - t0)


def one(kind, steps, tmp):
    py = [sys.executable, os.path.abspath(__file__), "--loop", str(steps)]
    env = dict(os.environ, LEAKWATCH_QUIET="1")
    if kind == "bare":
        env["LD_LIBRARY_PATH"] = STAND_INS
        cmd = py
    else:
        if kind == "no-anatomy":  # the same build with the anatomy's sampling off
            env["LEAKWATCH_TORCH_ANATOMY"] = "0"
        cmd = [LEAKWATCH, "run", "--cuda-stand-ins", "-q", "-r", os.path.join(tmp, "r.json")]
        if kind == "tensors":
            cmd += ["--mode", "tensors"]
        cmd += ["--"] + py
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"real_torch: {kind} run failed ({out.returncode}): {out.stderr[-2000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def main():
    if sys.argv[1:2] == ["--loop"]:
        print(f"{loop(int(sys.argv[2])):.1f}")
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    steps = 400
    tmp = os.environ.get("TMPDIR", "/tmp")
    kinds = ("bare", "default", "tensors", "no-anatomy")
    rates = {k: [] for k in kinds}
    ratios = {k: [] for k in kinds[1:]}
    for _ in range(rounds):
        r = {k: one(k, steps, tmp) for k in kinds}
        for k in kinds:
            rates[k].append(r[k])
        for k in kinds[1:]:
            ratios[k].append(r[k] / r["bare"])
    print(f"real PyTorch loop, {steps} steps after 50 of warm-up, {rounds} rounds (median, min..max):")
    print(f"  bare:            {statistics.median(rates['bare']):8.1f} steps/s")
    for k in kinds[1:]:
        print(f"  leakwatch {k:8s} {statistics.median(rates[k]):8.1f} steps/s,"
              f" {statistics.median(ratios[k]):.3f}x bare ({min(ratios[k]):.3f}..{max(ratios[k]):.3f})")
    # The anatomy's per-step cost: default against the same build with it off
    # (LEAKWATCH_TORCH_ANATOMY=0), round by round.
    own = [d / n for d, n in zip(rates["default"], rates["no-anatomy"])]
    print(f"  anatomy on/off (default mode): {statistics.median(own):.3f}x"
          f" ({min(own):.3f}..{max(own):.3f})")


if __name__ == "__main__":
    main()
