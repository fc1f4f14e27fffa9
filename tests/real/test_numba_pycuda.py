# SPDX-License-Identifier: Apache-2.0
"""Real numba 0.61 (ctypes binding of the driver) and real PyCUDA 2025.1
(an extension linked to libcuda.so.1) on the stand-in driver: a helper
module keeps device memory in a list; leakwatch names its line, bare runs
work, the fixed loops are clean. Both bare, under `leakwatch run` and
with LD_PRELOAD alone."""
import pytest

from conftest import HERE, REPO, marker_line

LIB = REPO / "build" / "tests" / "lib"
# numba 0.61 calls what it finds as cuCtxGetDevice_v2 with one argument
# (CUDA 13's takes two): it runs on the CUDA 12.8 variant of the stand-in
# driver, as it does on a real 12.x driver. PyCUDA links plain names.
NUMBA_LIBS = [REPO / "build" / "tests" / "lib-cuda12", LIB]
PYCUDA_LIBS = [LIB]

CASES = {
    "numba": (HERE / "numba_leak.py", NUMBA_LIBS, "numba_mylib.py", 16 * 1024, 4915200),
    "pycuda": (HERE / "pycuda_leak.py", PYCUDA_LIBS, "pycuda_mylib.py", 32 * 1024, 9830400),
}


def leak_lines(lib):
    text = (HERE / lib).read_text().splitlines()
    return {n for n, line in enumerate(text, 1) if "LEAK-LINE" in line}


@pytest.mark.parametrize("client", CASES)
def test_runs_bare(lw, client):
    script, libs, _, _, kept = CASES[client]
    run = lw(script, how="bare", libs=libs)
    assert run.rc == 0, run
    assert f"steps 300, kept {kept} B" in run.out, run


@pytest.mark.parametrize("how", ["run", "preload"])
@pytest.mark.parametrize("client", CASES)
def test_leak_named_at_the_helpers_line(lw, client, how):
    script, libs, lib, per_step, kept = CASES[client]
    run = lw(script, how=how, libs=libs)
    assert run.rc == 0, run
    assert f"steps 300, kept {kept} B" in run.out, run
    assert run.verdict == "leak", run
    file, line = run.answer()
    assert file == lib and line in leak_lines(lib), run
    # The exit summary names the place the report names.
    assert run.exit_line().startswith(f"leakwatch: LEAK in {lib}:{line} "), run
    assert run.report["growth"]["bytes_per_step"] == pytest.approx(per_step, rel=0.1), run


@pytest.mark.parametrize("client", CASES)
def test_fixed_is_clean(lw, client):
    script, libs, _, _, _ = CASES[client]
    run = lw(script, "--fixed", libs=libs)
    assert run.rc == 0, run
    assert run.verdict == "no_leak", run
    assert "leakwatch: no leak" in run.err, run
