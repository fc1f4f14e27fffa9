# SPDX-License-Identifier: Apache-2.0
"""The explanations around a verdict on real PyTorch 2.6 (issue 38): the
owner search holds nothing of the job's once it returns, never fails, names
the line that adds to the container; fix hints follow what was observed;
two leaks both named, biggest first; no live alarm the exit takes back; a
detection floor that is never 0. The loops are tests/real/torch_explain.py,
plain PyTorch that never calls leakwatch."""
from pathlib import Path

from conftest import marker_line

EXPLAIN = Path(__file__).resolve().parent / "torch_explain.py"


def allocated(run):
    """torch.cuda.memory_allocated() after each step, as the loop printed it."""
    out = {}
    for line in run.out.splitlines():
        if line.startswith("alloc "):
            _, step, n = line.split()
            out[int(step)] = int(n)
    return out


def test_owner_search_holds_nothing_of_the_job(lw):
    """The diagnosis window closes, the owner search runs, and the job's
    memory afterwards is what it is without leakwatch, step for step: the
    step's 2 MiB batch is not kept (in a reference cycle until the garbage
    collector runs), and the 512 B/step leak is called a leak."""
    bare = lw(EXPLAIN, "batch", env={"STEPS": "400"}, how="bare")
    assert bare.rc == 0, bare
    want = allocated(bare)
    assert len(want) == 400, bare
    run = lw(EXPLAIN, "batch", env={"STEPS": "400"})
    assert run.rc == 0, run
    diag = run.report["torch"]["diagnosis"]
    assert diag["state"] == "done", diag
    search = diag.get("owner_search") or {}
    assert search and not search.get("stopped"), diag
    got = allocated(run)
    assert len(got) == 400, run
    diff = [(s, want[s], got[s]) for s in sorted(want) if want[s] != got[s]]
    assert not diff, (diff[:10], run)
    assert run.verdict == "leak", run
    assert run.exit_line().startswith(
        f"leakwatch: LEAK in torch_explain.py:{marker_line(EXPLAIN, '# LEAK-BATCH')} "), run
    assert "withdrawn" not in run.err, run
