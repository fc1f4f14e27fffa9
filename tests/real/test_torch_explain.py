# SPDX-License-Identifier: Apache-2.0
"""The explanations around a verdict on real PyTorch 2.6 (issue 38): the
owner search holds nothing of the job's once it returns, never fails, names
the line that adds to the container; fix hints follow what was observed;
two leaks both named, biggest first; no live alarm the exit takes back; a
detection floor that is never 0. The loops are tests/real/torch_explain.py,
plain PyTorch that never calls leakwatch."""
from pathlib import Path

from conftest import REPO, marker_line

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


def owner_of(run):
    lead = run.lead()
    assert lead is not None and lead.get("source") == "pytorch_history", run
    owner = lead.get("owner")
    assert owner and owner.get("name"), (owner, run)
    return owner


def test_owner_filled_by_a_forward_hook(lw):
    """A module attribute filled by a forward hook, two modules deep: the
    search does not fail, names it as the user spells it, at the hook's
    append."""
    run = lw(EXPLAIN, "hookattr", env={"STEPS": "200"})
    assert run.rc == 0 and run.verdict == "leak", run
    search = run.report["torch"]["diagnosis"]["owner_search"]
    assert not search.get("stopped"), search
    owner = owner_of(run)
    assert owner["name"] == "model.layers[2].hidden_states", owner
    assert owner["line"] == marker_line(EXPLAIN, "# OWNER-HOOK"), owner
    assert owner["text"] in run.err, run


def test_owner_line_in_a_helper_function(lw):
    """The list is appended to in a helper it is passed to: the line named
    is the helper's append, not the first line of the loop's function."""
    run = lw(EXPLAIN, "helper", env={"STEPS": "200"})
    assert run.rc == 0 and run.verdict == "leak", run
    owner = owner_of(run)
    assert owner["name"] == "losses", owner
    assert owner["line"] == marker_line(EXPLAIN, "# OWNER-HELPER"), owner
    assert owner["code"] == "store.append(value)  # OWNER-HELPER", owner


def test_no_no_grad_hint_for_a_loop_that_runs_backward(lw):
    """Gradient accumulation with backward(retain_graph=True): the graphs'
    saved tensors are kept, and backward ran: the hint never says
    torch.no_grad() (it would stop training); it names retain_graph."""
    run = lw(EXPLAIN, "accum", env={"STEPS": "200"})
    assert run.rc == 0 and run.verdict == "leak", run
    owner = owner_of(run)
    assert owner["name"] == "kept" and owner["line"] == marker_line(EXPLAIN, "# OWNER-ACCUM"), owner
    assert owner["shape"] == "retain_graph", owner
    assert "no_grad" not in owner["hint"] and "retain_graph" in owner["hint"], owner
    assert "torch.no_grad()" not in run.err and "no backward" not in run.err, run


def test_two_leaks_both_named_biggest_first(lw):
    """logits (1.5 KiB/step) and y (0.5 KiB/step) kept in metrics[...]; the
    step's input x is made on y's line and not kept: it does not count into
    that line's rate. Both leaks named, logits first, in the report and on
    stderr."""
    run = lw(EXPLAIN, "two", env={"STEPS": "300"})
    assert run.rc == 0 and run.verdict == "leak", run
    sites = [s for s in run.report["sites"] if s.get("source") == "pytorch_history"]
    assert len(sites) >= 2, run
    first, second = sites[0], sites[1]
    assert first["place_to_look"]["line"] == marker_line(EXPLAIN, "# MAKE-LOGITS"), first
    assert second["place_to_look"]["line"] == marker_line(EXPLAIN, "# LINE-XY"), second
    assert first["owner"]["name"] == "metrics['logits']", first["owner"]
    assert first["owner"]["line"] == marker_line(EXPLAIN, "# LEAK-LOGITS"), first["owner"]
    assert second["owner"]["name"] == "metrics['targets']", second["owner"]
    assert second["owner"]["line"] == marker_line(EXPLAIN, "# LEAK-TARGETS"), second["owner"]
    assert first["bytes_per_step"] == 1536 and second["bytes_per_step"] == 512, sites[:2]
    assert first["rank"] < second["rank"], sites[:2]
    # The y site's hint says nothing of a graph it does not have.
    assert "graph" not in second["owner"]["hint"], second["owner"]
    assert "also leaking: " in run.err and "metrics['targets']" in run.err, run
    err = run.err
    assert err.index("kept by list `metrics['logits']`") < err.index("also leaking: "), run
    # The owner's size as every output prints sizes: the library's rule, the
    # helper printing none of its own (leakwatch_format_bytes).
    for s in sites[:2]:
        size = _library_size(s["owner"]["bytes"])
        assert f", {size}" in s["owner"]["text"], (size, s["owner"])


def _library_size(n):
    """n bytes as libleakwatch.so prints them."""
    import ctypes

    f = ctypes.CDLL(str(REPO / "build" / "libleakwatch.so")).leakwatch_format_bytes
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_double, ctypes.c_char_p, ctypes.c_size_t]
    buf = ctypes.create_string_buffer(48)
    assert f(float(n), buf, len(buf)) > 0
    return buf.value.decode()


def test_detection_floor_never_zero(lw):
    """A clean run says the smallest leak it could call: never 0, and no
    noise figure for a floor that did not move."""
    run = lw(EXPLAIN, "clean", env={"STEPS": "2000"})
    assert run.rc == 0 and run.verdict == "no_leak", run
    growth = run.report["growth"]
    # One allocation granule over the window: what the decision itself asks.
    assert growth["detectable_bytes_per_step"] >= 256 / 2000, growth
    line = [l for l in run.err.splitlines() if "could call a leak of" in l]
    assert line, run
    m = __import__("re").search(r"could call a leak of ([\d.e+-]+) B per step", line[0])
    assert m and float(m.group(1)) > 0, line
    assert float(m.group(1)) == __import__("pytest").approx(
        growth["detectable_bytes_per_step"], rel=0.05), (line, growth)
    assert "the floor is flat" in line[0], line


# The live line's cases run on leakwatch's test clock (1 ms a step): every
# step's counters are read and taken in by the sampler before the next step,
# so when a leak is announced, said or withdrawn does not depend on the
# machine's load (on the wall clock a loaded machine's sparse reads made a
# cache that filled for 200 steps 'not yet significant' at step 600).
CLOCK = {"LEAKWATCH_TEST_CLOCK": "1", "STEP_MS": "1"}


def live_leak_steps(run):
    """The steps of the live LEAK lines ("[as of step N]")."""
    return [int(m.replace(",", "")) for m in
            __import__("re").findall(r"leakwatch: LEAK .*\[as of step ([\d,]+)\]", run.err)]


def test_no_live_alarm_for_a_cache_that_stops(lw):
    """A cache that fills for 200 steps and then stops: while it grows the
    live line says "growing, not yet a leak", never LEAK; the run is not a
    leak, and nothing had to be withdrawn."""
    run = lw(EXPLAIN, "fillstop", env={"STEPS": "600", "FILL": "200", **CLOCK})
    assert run.rc == 0 and run.verdict == "no_leak", run
    assert live_leak_steps(run) == [], run
    assert "growing, not yet a leak: " in run.err, run
    growth = run.report["growth"]
    assert growth["live_alarms_withdrawn"] == 0 and growth["live_alarm_withdrawn"] is None, growth
    assert growth["growing_not_yet_leak"] is False, growth
    # The hint follows the container: a dict keyed by step is a cache.
    owner = owner_of(run)
    assert owner["name"] == "cache" and owner["kind"] == "cache", owner
    assert "bound the cache" in owner["hint"], owner


def test_withdrawn_live_alarm_recorded_and_said(lw):
    """With the former rule (LEAKWATCH_LIVE_HOLD=0) the same cache is said
    to leak live, then withdrawn: the report records it, the exit says it."""
    run = lw(EXPLAIN, "fillstop", env={"STEPS": "600", "FILL": "200",
                                       "LEAKWATCH_LIVE_HOLD": "0", **CLOCK})
    assert run.rc == 0 and run.verdict == "no_leak", run
    said = live_leak_steps(run)
    assert said, run
    growth = run.report["growth"]
    w = growth["live_alarm_withdrawn"]
    assert growth["live_alarms_withdrawn"] == 1 and w["unit"] == "step", growth
    assert w["said_at"] == said[0] and said[0] < w["withdrawn_at"] <= 600, (w, said)
    assert (f"the LEAK said at step {said[0]} while the job ran was withdrawn at step "
            f"{w['withdrawn_at']}") in run.err, run


def test_late_onset_said_live_within_a_few_hundred_steps(lw):
    """Clean for 500 steps, then 512 B/step: said live as a leak as soon as
    it is announced, 256 steps after its onset having passed (at step 1,276
    before: twice the step it was first seen at)."""
    run = lw(EXPLAIN, "late", env={"STEPS": "3000", "ONSET": "500", **CLOCK})
    assert run.rc == 0 and run.verdict == "leak", run
    said = live_leak_steps(run)
    first = run.report["torch"]["devices"][0]["first_leak_step"]
    # On the test clock every step's counters are read and taken in; the
    # live line follows the announcement soon after (its onset's estimate,
    # from bins of several steps, moves it by some steps), never before 256
    # steps after the onset. The former rule waited for twice the points it
    # was first seen at (about step 2,000 here).
    assert 0 < first < 2600, run
    assert said and said[0] >= 756 and said[0] <= first + 400, (said, first, run)


def test_owner_line_is_the_leaking_branch(lw):
    """A fixed branch (history.append(loss.item())) written before the
    leaking one: the owner's line is the leaking append."""
    run = lw(EXPLAIN, "branch", env={"STEPS": "200"})
    assert run.rc == 0 and run.verdict == "leak", run
    owner = owner_of(run)
    assert owner["name"] == "history", owner
    assert owner["line"] == marker_line(EXPLAIN, "# OWNER-BRANCH"), owner
