# SPDX-License-Identifier: Apache-2.0
"""The PyTorch helper reads PyTorch's counters within a time budget
(leakwatch/_torch.py, point 2): the first ALWAYS_READ marks are all read,
then one read waits READ_BUDGET times what the last one took. Checked on a
clock of the test's own (no timing): each mark 1 ms later, each read taking
18.75 us (perf_counter moves that much each time it is asked): 400 times
that is 7.5 ms, so after the first marks every eighth mark reads (a whole
8 ms would leave it to the floating point of the clock's sums whether the
eighth or the ninth does). Prints "marks N reads R" and the constants."""
import sys

import torch

T = sys.modules["_leakwatch_helper._torch"]
x = torch.empty(1000).cuda()  # the stand-in's allocator starts: counters exist
h = T._get_helper()


class Clock:
    mono = 1000.0
    perf = 0.0

    def monotonic(self):
        return self.mono

    def perf_counter(self):
        self.perf += 18.75e-6
        return self.perf

    def __getattr__(self, name):  # time.time and the rest: the real ones
        import time
        return getattr(time, name)


clock = Clock()
T.time = clock
T._anatomy_module().time = clock  # the helper compares the anatomy's times with its own clock
reads = [0]
stats = torch._C._cuda_memoryStats


def counted(d):
    # The counters' reads only (other parts of the helper may read the
    # statistics on their own schedule).
    if sys._getframe(1).f_code.co_name == "read_counters":
        reads[0] += 1
    return stats(d)


torch._C._cuda_memoryStats = counted
h.window_steps = 0  # no diagnosis window: only the counters
N = 1000
for _ in range(N):
    clock.mono += 1e-3
    h.mark(manual=True)
print(f"marks {N} reads {reads[0]} always {T.ALWAYS_READ} budget {T.READ_BUDGET}")
