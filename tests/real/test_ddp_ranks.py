# SPDX-License-Identifier: Apache-2.0
"""Many ranks for real (issue 41): DistributedDataParallel over gloo on CUDA
tensors (the stand-ins), two ranks, rank 0 leaking through its logging
(`if rank == 0: history.append(loss)`, tests/real/ddp_leak.py), under
torch.multiprocessing.spawn (PyTorch's DDP tutorial: no RANK variable) and
under torchrun (tests/real/torchrun_nolibuv.py: Debian's PyTorch has no
libuv, which torchrun's TCPStore asks for). Each rank's report is its own,
named by the rank the process group gives; rank 1 is no leak and rank 0 is
called LEAK within 400 steps, as a single process is; every line leakwatch prints names the rank;
`leakwatch run --fail-on-leak` reads all ranks' reports (exit 3 when rank 0
leaks) and prints their merged view; the fixed job is clean."""
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


# Rank 0's LEAK at 400 steps needed issue 38 (the owner search at the end of
# the diagnosis window kept a step's batch alive): before it, rank 0's
# verdict was often withdrawn at step ~79 under torchrun and the run ended
# no leak or inconclusive, or called with an onset of "steps 69-72". With
# issue 38 merged, rank 0 was called, onset "within steps 1-2", in every run
# here (torchrun 5 of 5, mp.spawn 8 of 8).

_runs = {}


@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    """ddp(how, *args, report=...) runs the DDP job once under leakwatch run
    --fail-on-leak (cached for the module: several tests read one run)."""

    def run(how, *args, report="leak-%r.json", steps=STEPS):
        key = (how, args, report, steps)
        if key in _runs:
            return _runs[key]
        tmp_path = tmp_path_factory.mktemp("ddp")
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
               "--fail-on-leak", "--", *job]
        proc = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=900,
                              cwd=tmp_path)
        _runs[key] = Ranks(proc, folder)
        return _runs[key]

    return run


def check_ranks(run, source):
    """What holds whatever rank 0's verdict: both ranks trained, each report
    is its rank's, every line after the rank is known names it, rank 1 is
    clean, and leakwatch run read both reports and merged them."""
    assert "rank 0 of 2 trained 400 steps" in run.out, run
    assert "rank 1 of 2 trained 400 steps" in run.out, run
    r0, r1 = run.by_rank(0), run.by_rank(1)
    for r in (r0, r1):
        assert r["world_size"] == 2 and r["rank_source"] == source, run
    assert r1["verdict"] == "no_leak", run
    assert run.exit_line(0), run
    assert run.exit_line(1).startswith("leakwatch[rank 1]: no leak"), run
    # Every verdict line leakwatch printed in a rank names it.
    for l in run.err.splitlines():
        if re.match(r"leakwatch: (LEAK|no leak|inconclusive)", l):
            raise AssertionError(f"a verdict line without its rank: {l}\n{run}")
    assert re.search(r"^leakwatch: 2 reports of this run: ", run.err, re.M), run
    for name in run.files:
        assert f"{name}: verdict " in run.err, run


def check_rank0_leaks(run):
    where = ("ddp_leak.py", marker_line(DDP, "# LOSS-DDP"))
    r0 = run.by_rank(0)
    assert r0["verdict"] == "leak", run
    answer = r0["answer"]["where"]
    assert (os.path.basename(answer["file"]), answer["line"]) == where, run
    assert run.exit_line(0).startswith(f"leakwatch[rank 0]: LEAK in ddp_leak.py:{where[1]}"), run
    # --fail-on-leak over both ranks' reports, and their merged view.
    assert run.rc == 3, run
    assert re.search(r"^leakwatch: 2 reports of this run: LEAK: ddp_leak.py:\d+ in train leaks "
                     r"on rank 0, \+512 B/step \(1 of 2 reports leak\)$", run.err, re.M), run
    assert re.search(r"^leakwatch: skew: rank 0 grows \+512 B/step; the other rank, which does "
                     r"not leak", run.err, re.M), run


def test_spawn_one_report_per_rank(ddp):
    """mp.spawn sets no RANK: the rank comes from init_process_group, and
    -r leak-%r.json gives two files (both were leak-0.json)."""
    run = ddp("spawn")
    assert run.files == ["leak-0.json", "leak-1.json"], run
    check_ranks(run, "process group")
    assert run.reports["leak-0.json"]["rank"] == 0, run


def test_spawn_rank0_leak(ddp):
    check_rank0_leaks(ddp("spawn"))


def test_spawn_one_template_two_files(ddp):
    """-r leak.json (no %r) under mp.spawn: the first rank to write keeps
    leak.json, the other gets leak.PID.json and says so; --fail-on-leak reads
    both (the first one's report was overwritten, and the run read one)."""
    run = ddp("spawn", report="leak.json")
    assert len(run.files) == 2 and "leak.json" in run.files, run
    other = [f for f in run.files if f != "leak.json"][0]
    assert re.fullmatch(r"leak\.\d+\.json", other), run
    assert "is the report of another process" in run.err and other in run.err, run
    check_ranks(run, "process group")


def test_spawn_one_template_rank0_leak(ddp):
    check_rank0_leaks(ddp("spawn", report="leak.json"))


def test_spawn_fixed_is_clean(ddp):
    run = ddp("spawn", "fixed")
    assert run.files == ["leak-0.json", "leak-1.json"], run
    assert all(r["verdict"] == "no_leak" for r in run.reports.values()), run
    assert run.rc == 0, run
    assert not re.search(r"\bLEAK\b", run.err), run
    assert "leakwatch: 2 reports of this run: no leak in any of 2 reports" in run.err, run


def test_torchrun_one_report_per_rank(ddp):
    """torchrun (static rendezvous, its TCPStore without libuv) sets RANK;
    the process group gives the same rank."""
    run = ddp("torchrun")
    assert run.files == ["leak-0.json", "leak-1.json"], run
    check_ranks(run, "process group")


def test_torchrun_rank0_leak(ddp):
    check_rank0_leaks(ddp("torchrun"))


def test_torchrun_fixed_is_clean(ddp):
    run = ddp("torchrun", "fixed")
    assert run.files == ["leak-0.json", "leak-1.json"], run
    assert all(r["verdict"] == "no_leak" for r in run.reports.values()), run
    assert run.rc == 0, run
