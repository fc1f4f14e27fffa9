# SPDX-License-Identifier: Apache-2.0
"""The anatomy's walks (leakwatch/_anatomy.py) keep within 0.25 % of the job's
time: after a walk, the next one of the sparse schedule (steps 1, 2, 4, ...)
waits until the job ran BUDGET times as long as the walk took. Checked on a
clock of the test's own (no timing): each mark 1 ms later, each walk
taking 60 ms (the walk moves the clock). Prints "marks N walks W walk_s S
total_s T budget B"."""
import sys

import torch

T = sys.modules["_leakwatch_helper._torch"]
x = torch.empty(1000).cuda()  # CUDA initialised: the helper's marks reach the anatomy
h = T._get_helper()
A = T._anatomy_module()


class Clock:
    mono = 1000.0

    def monotonic(self):
        return self.mono

    def __getattr__(self, name):  # the rest: the real ones
        import time
        return getattr(time, name)


clock = Clock()
A.time = clock
T.time = clock  # the helper compares the anatomy's times with its own clock
walks = [0]
WALK_S = 0.060


def walk(torch, *args, **kwargs):
    walks[0] += 1
    clock.mono += WALK_S


A.sample = walk
h.window_steps = 0  # no diagnosis window
N = 60000
start = clock.mono
for _ in range(N):
    clock.mono += 1e-3
    h.mark(manual=True)
print(f"marks {N} walks {walks[0]} walk_s {walks[0] * WALK_S:.3f} "
      f"total_s {clock.mono - start:.3f} budget {getattr(A, 'BUDGET', 0)}")
