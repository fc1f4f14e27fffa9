# SPDX-License-Identifier: Apache-2.0
"""The end of a run on a real client (issue 26): real numba's device arrays
freed at the end (as its teardown frees them), with the job going on a
little after, do not turn a leak into "no leak"; the exit summary still
names the place and says the memory was released."""
from conftest import HERE, REPO, marker_line

LIB = REPO / "build" / "tests" / "lib"
# numba 0.61 runs on the CUDA 12.8 variant of the stand-in driver (see
# test_numba_pycuda.py).
NUMBA_LIBS = [REPO / "build" / "tests" / "lib-cuda12", LIB]


def test_numba_release_at_teardown_is_still_a_leak(lw):
    # Without step marks (time intervals of 50 ms), as a numba job has none.
    # Time intervals measure growth per second: on the wall clock a machine
    # whose load changes mid-run changes the growth per interval (a job
    # slowed by half in its second half is a decelerating one). Each step's
    # 3 ms move leakwatch's test clock instead (LEAKWATCH_TEST_CLOCK), so
    # every interval holds the same steps on any machine.
    run = lw(HERE / "numba_leak.py", "--steps", "2000", "--step-ms", "3", "--unmarked",
             "--release-then", "0.1",
             env={"LEAKWATCH_INTERVAL_MS": "50", "LEAKWATCH_TEST_CLOCK": "1"},
             options=["--fail-on-leak"], libs=NUMBA_LIBS)
    assert "released" in run.out, run
    assert run.verdict == "leak", run
    assert run.rc == 3, run
    growth = run.report["growth"]
    assert growth["step_source"] == "time", run
    assert growth["released_at_exit"] is True, run
    # The same intervals in every run: 2000 steps of 3 ms and the 100 ms
    # after the release, in 50 ms intervals.
    assert growth["steps"] == 122, run
    line = marker_line(HERE / "numba_mylib.py", "# LEAK-LINE")
    file, at = run.answer()
    assert (file, at) == ("numba_mylib.py", line), run
    assert run.exit_line().startswith(f"leakwatch: LEAK in numba_mylib.py:{line} "), run
    assert "released at exit" in run.err, run
