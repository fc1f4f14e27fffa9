# SPDX-License-Identifier: Apache-2.0
"""torch.multiprocessing on real PyTorch 2.6 (issue 25): a producer process
(spawn) makes each batch on the GPU and shares it with the trainer through a
torch.multiprocessing Queue (CUDA IPC on the stand-in runtime); the trainer
keeps the seed's leak. It is named at the trainer's own line with the rate
PyTorch's counter grows by, the memory mapped from the producer is counted
apart (imported), and the fixed trainer is clean. The script is
tests/real/torch_mp.py, plain PyTorch."""
import re

import pytest

from conftest import HERE, marker_line, summary_rate

MP = HERE / "torch_mp.py"


def trainer_line(run, prefix):
    """The trainer's exit summary (the producer, a process of its own,
    prints its own first: the trainer joins it before it ends)."""
    lines = [l for l in run.err.splitlines() if l.startswith(prefix) and "[as of " not in l]
    return lines[-1] if lines else ""


def allocated_per_step(run):
    m = re.search(r"^allocated per step: ([\d.]+)$", run.out, re.M)
    assert m, run
    return float(m.group(1))


def test_leak_in_the_trainer_named_at_its_line(lw):
    run = lw(MP, env={"STEPS": "400"})
    assert run.rc == 0, run
    assert "trained 400 steps" in run.out, run
    # The report file is the trainer's (the producer's, written first, is
    # replaced when the trainer ends).
    assert run.verdict == "leak", run
    line = marker_line(MP, "# LEAK-MP")
    assert run.answer() == ("torch_mp.py", line), run
    exit_line = trainer_line(run, "leakwatch: LEAK")
    assert exit_line.startswith(f"leakwatch: LEAK in torch_mp.py:{line} in train"), run
    want = allocated_per_step(run)
    assert want > 0, run
    assert run.report["growth"]["bytes_per_step"] == pytest.approx(want, rel=0.05), run
    assert summary_rate(exit_line) == pytest.approx(want, rel=0.05), run
    # Every batch came from the producer by CUDA IPC: opened in the trainer,
    # not counted as its own allocations.
    m = re.search(r"imported from other processes \(not counted above\): .* ([\d,]+) opened",
                  run.err)
    assert m and int(m.group(1).replace(",", "")) >= 300, run


def test_fixed_trainer_is_clean(lw):
    run = lw(MP, "fixed", env={"STEPS": "400"})
    assert run.rc == 0, run
    assert "trained 400 steps" in run.out, run
    assert run.verdict == "no_leak", run
    assert "leakwatch: LEAK" not in run.err, run


# Known bug, open: depending on the library's memory layout (the same source
# built in another folder), the spawned producer dies of SIGSEGV in exit():
# libtorch_cuda's exit handler calls cudaGetDevice, which then fails, and
# PyTorch's error check reads its kernel-launch registry, already destroyed.
# Seen only with the exit summary on (LEAKWATCH_QUIET=0); bisected to the
# summary's site label (collect_frames). Not strict: on this tree's layout it
# passes, and a strict xfail would fail then. Next: find what makes
# cudaGetDevice fail at exit after leakwatch's summary.
@pytest.mark.xfail(strict=False, reason="known, layout-dependent crash of the spawned producer "
                   "at exit under leakwatch (cudaGetDevice fails in libtorch_cuda's exit handler)")
def test_producer_process_is_not_hurt(lw):
    run = lw(MP, "fixed", env={"STEPS": "100"})
    assert run.rc == 0, run
    assert "producer exit 0" in run.out, run
