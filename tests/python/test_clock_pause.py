# SPDX-License-Identifier: Apache-2.0
"""pause(seconds) for the test jobs: under leakwatch's test clock
(LEAKWATCH_TEST_CLOCK=1, tests only) it moves leakwatch's time on by
`seconds` and returns once leakwatch's sampler has done what fell due
(intervals closed, marks taken in, warnings said): the same run whatever
the machine's speed or load. Otherwise it sleeps."""
import os
import time

_advance = []


def pause(seconds):
    if os.environ.get("LEAKWATCH_TEST_CLOCK") == "1":
        if not _advance:
            import ctypes

            try:
                fn = ctypes.CDLL(None).leakwatch__test_clock_advance
                fn.argtypes = [ctypes.c_longlong]
            except AttributeError:
                fn = None
            _advance.append(fn)
        if _advance[0] is not None and _advance[0](int(seconds * 1e9)) == 0:
            return
    if seconds > 0:
        time.sleep(seconds)
