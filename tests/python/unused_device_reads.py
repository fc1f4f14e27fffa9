# SPDX-License-Identifier: Apache-2.0
"""The PyTorch helper's reads of PyTorch's counters (leakwatch/_torch.py,
point 2) on two devices, the second taken into use only at mark 100: every
read looks at device 0, a device not used yet is looked at on the first
UNUSED_FIRST reads and then at every UNUSED_EVERY-th (each look builds its
statistics dictionary), and once used at every read. Every mark is read
here (the first ALWAYS_READ). Prints "reads R dev0 A dev1_before B
dev1_after C used U" and the constants."""
import sys

import torch

T = sys.modules["_leakwatch_helper._torch"]
x = torch.empty(1000).cuda()  # the stand-in's allocator starts: counters exist
h = T._get_helper()
h.window_steps = 0  # no diagnosis window: only the counters
looks = {0: 0, 1: 0}
stats = torch._C._cuda_memoryStats


def counted(d):
    if sys._getframe(1).f_code.co_name == "read_counters":
        looks[d] = looks.get(d, 0) + 1
    return stats(d)


torch._C._cuda_memoryStats = counted
N, USE_AT = 180, 100
kept = []
before = 0
for i in range(1, N + 1):
    if i == USE_AT:
        before = looks[1]
        kept.append(torch.empty(1000, device="cuda:1"))
    h.mark(manual=True)
print(f"reads {N} dev0 {looks[0]} dev1_before {before} dev1_after {looks[1] - before} "
      f"used {int(1 in h.devices)} first {getattr(T, 'UNUSED_FIRST', 0)} "
      f"every {getattr(T, 'UNUSED_EVERY', 0)} "
      f"always {T.ALWAYS_READ}")
