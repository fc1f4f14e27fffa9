# SPDX-License-Identifier: Apache-2.0
"""Many ranks for real (issue 41): DistributedDataParallel over gloo on CUDA
tensors (the stand-ins), two ranks, rank 0 leaking through its logging
(`if rank == 0: history.append(loss)`, tests/real/ddp_leak.py), under
torch.multiprocessing.spawn (PyTorch's DDP tutorial: no RANK variable) and
under torchrun (tests/real/torchrun_nolibuv.py: Debian's PyTorch has no
libuv, which torchrun's TCPStore asks for). Each rank's report is its own,
named by the rank the process group gives; rank 0 is called LEAK and rank 1
no leak within 400 steps, as a single process is; every line leakwatch
prints names the rank; `leakwatch run --fail-on-leak` exits 3 over all
ranks' reports and prints their merged view; the fixed job is clean."""
import json
import os
import re
import socket
import subprocess
import sys

import pytest

from conftest import HERE, LEAKWATCH, marker_line

DDP = HERE / "ddp_leak.py"
TORCHRUN = HERE / "torchrun_nolibuv.py"
STEPS = 400


class Ranks:
    """One `leakwatch run` of a DDP job: its status, stderr, stdout and the
    report files it left in the folder."""

    def __init__(self, proc, folder):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.files = sorted(p.name for p in folder.glob("*.json"))
        self.reports = {}
        for name in self.files:
            with open(folder / name) as f:
                self.reports[name] = json.load(f)

    def by_rank(self, rank):
        found = [r for r in self.reports.values() if r.get("rank") == rank]
        assert len(found) == 1, self
        return found[0]

    def exit_line(self, rank):
        """The rank's exit summary: its verdict line without "[as of"."""
        prefix = f"leakwatch[rank {rank}]: "
        lines = [l for l in self.err.splitlines() if l.startswith(prefix)
                 and re.match(r"(LEAK|no leak|inconclusive)", l[len(prefix):])
                 and "[as of " not in l]
        return lines[-1] if lines else ""

    def __str__(self):
        verdicts = {n: (r.get("rank"), r.get("verdict"), r.get("growth", {}).get("reason"))
                    for n, r in self.reports.items()}
        return (f"rc={self.rc} files={self.files} verdicts={verdicts}\n"
                f"--- stderr ---\n{self.err[-8000:]}\n--- stdout ---\n{self.out[-2000:]}")

    __repr__ = __str__


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ddp(tmp_path):
    def run(how, *args, report="leak-%r.json", options=("--fail-on-leak",), steps=STEPS):
        folder = tmp_path / "reports"
        folder.mkdir()
        e = dict(os.environ)
        e.update({"LEAKWATCH_QUIET": "0", "PYTHONDONTWRITEBYTECODE": "1",
                  "DDP_STORE": str(tmp_path / "store"), "STEPS": str(steps),
                  "GLOO_SOCKET_IFNAME": "lo"})
        if how == "spawn":
            job = [sys.executable, str(DDP), "spawn", *args]
        else:
            job = [sys.executable, str(TORCHRUN), "--nnodes", "1", "--nproc-per-node", "2",
                   "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
                   str(DDP), "env", *args]
        cmd = [str(LEAKWATCH), "run", "--cuda-stand-ins", "-r", str(folder / report),
               *options, "--", *job]
        proc = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=900,
                              cwd=tmp_path)
        return Ranks(proc, folder)

    return run


def check_rank0_leaks(run, source):
    where = ("ddp_leak.py", marker_line(DDP, "# LOSS-DDP"))
    assert "rank 0 of 2 trained 400 steps" in run.out, run
    assert "rank 1 of 2 trained 400 steps" in run.out, run
    r0, r1 = run.by_rank(0), run.by_rank(1)
    assert r0["verdict"] == "leak", run
    assert r1["verdict"] == "no_leak", run
    for r in (r0, r1):
        assert r["world_size"] == 2 and r["rank_source"] == source, run
    answer = r0["answer"]["where"]
    assert (os.path.basename(answer["file"]), answer["line"]) == where, run
    # Each rank names itself on every line leakwatch prints.
    assert run.exit_line(0).startswith(f"leakwatch[rank 0]: LEAK in ddp_leak.py:{where[1]}"), run
    assert run.exit_line(1).startswith("leakwatch[rank 1]: no leak"), run
    # --fail-on-leak over both ranks' reports, and their merged view.
    assert run.rc == 3, run
    assert re.search(r"^leakwatch: 2 reports of this run: LEAK: ddp_leak.py:\d+ in train leaks "
                     r"on rank 0, \+512 B/step \(1 of 2 reports leak\)$", run.err, re.M), run
    assert re.search(r"^leakwatch: skew: rank 0 grows \+512 B/step; the other rank, which does "
                     r"not leak", run.err, re.M), run


def test_spawn_rank0_leak_in_its_own_report(ddp):
    """mp.spawn sets no RANK: the rank comes from init_process_group, and
    -r leak-%r.json gives two files (both were leak-0.json)."""
    run = ddp("spawn")
    assert run.files == ["leak-0.json", "leak-1.json"], run
    check_rank0_leaks(run, "process group")
    assert run.reports["leak-0.json"]["rank"] == 0, run
    assert not any(l.startswith("leakwatch: ") and ("LEAK" in l or "no leak" in l)
                   for l in run.err.splitlines() if "reports of this run" not in l
                   and ": verdict " not in l), run


def test_spawn_one_template_two_files(ddp):
    """-r leak.json (no %r) under mp.spawn: the second process gets its own
    name and says so; --fail-on-leak reads both (the leaking rank's report
    was overwritten and the run exited 0)."""
    run = ddp("spawn", report="leak.json")
    assert len(run.files) == 2 and "leak.json" in run.files, run
    other = [f for f in run.files if f != "leak.json"][0]
    assert re.fullmatch(r"leak\.\d+\.json", other), run
    assert "is the report of another process" in run.err and other in run.err, run
    check_rank0_leaks(run, "process group")


def test_spawn_fixed_is_clean(ddp):
    run = ddp("spawn", "fixed")
    assert run.files == ["leak-0.json", "leak-1.json"], run
    assert all(r["verdict"] == "no_leak" for r in run.reports.values()), run
    assert run.rc == 0, run
    assert "LEAK" not in run.err, run
    assert "leakwatch: 2 reports of this run: no leak in any of 2 reports" in run.err, run


def test_torchrun_rank0_leak(ddp):
    """torchrun (static rendezvous, its TCPStore without libuv) sets RANK:
    each worker's report is its rank's; the same verdicts as under spawn."""
    run = ddp("torchrun")
    assert run.files == ["leak-0.json", "leak-1.json"], run
    check_rank0_leaks(run, "process group")


def test_torchrun_fixed_is_clean(ddp):
    run = ddp("torchrun", "fixed")
    assert run.files == ["leak-0.json", "leak-1.json"], run
    assert all(r["verdict"] == "no_leak" for r in run.reports.values()), run
    assert run.rc == 0, run
