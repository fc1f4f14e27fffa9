# SPDX-License-Identifier: Apache-2.0
"""Why the device filled up (issue 40), on real PyTorch 2.6 on the stand-ins:
a leak of pinned host memory is the run's leak in every view; the anatomy
of memory by role; the post-mortem at out-of-memory. The jobs are
tests/real/memory_jobs.py, plain PyTorch that never calls leakwatch."""
import json
import subprocess

import pytest

from conftest import HERE, LEAKWATCH, marker_line

JOBS = HERE / "memory_jobs.py"


def leakwatch(*args):
    return subprocess.run([str(LEAKWATCH), *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def test_pinned_host_leak_is_the_runs_leak_in_every_view(lw, tmp_path):
    prom = tmp_path / "lw.prom"
    run = lw(JOBS, "pinned", env={"STEPS": "200", "LEAKWATCH_PROMETHEUS": str(prom)},
             options=["--fail-on-leak"])
    # --fail-on-leak: the job succeeded, the verdict is leak.
    assert run.rc == 3, run
    assert run.verdict == "leak", run
    growth = run.report["growth"]
    assert growth["signal"] == "pinned_host", run
    assert growth["memory_kind"] == "pinned_host", run
    assert growth["pinned_host"]["verdict"] == "leak", run
    # 65,536 floats a step: 256 KiB.
    assert abs(growth["bytes_per_step"] - 262144) < 262144 * 0.02, run
    assert growth["host_total_bytes"] > 0 and growth["host_available_bytes"] > 0, run
    assert growth["oom_eta_steps"] > 0, run
    assert run.report["answer"]["kind"] == "pinned_host", run
    line = marker_line(JOBS, "LEAK-PINNED")
    assert run.answer() == ("memory_jobs.py", line), run
    exit_line = run.exit_line()
    assert exit_line.startswith(
        f"leakwatch: LEAK of pinned host memory in memory_jobs.py:{line} "), run
    assert "host memory used up in" in exit_line and "no leak" not in exit_line, run
    # leakwatch report: text, JSON, HTML.
    report = tmp_path / "report.json"
    text = leakwatch("report", report)
    assert text.returncode == 0, text
    assert f"LEAK of pinned host memory in memory_jobs.py:{line}" in text.stdout, text.stdout
    js = json.loads(leakwatch("report", "--format", "json", report).stdout)
    assert js["verdict"] == "leak" and js["growth"]["memory_kind"] == "pinned_host", js
    assert js["answer"]["kind"] == "pinned_host", js["answer"]
    html = leakwatch("report", "--format", "html", report).stdout
    assert "LEAK of pinned host memory" in html and "host memory used up in" in html
    assert leakwatch("report", "--fail-on-leak", report).returncode == 3
    # Prometheus (the last file, written at exit).
    metrics = prom.read_text()
    assert "leakwatch_leak 1" in metrics, metrics
    assert 'leakwatch_leak_memory_kind_info{kind="pinned_host"} 1' in metrics, metrics


def test_pinned_owner_search_holds_nothing_of_the_job(lw):
    """The pinned owner search (run once the pinned leak's site is chosen,
    and once more 64 steps later) keeps nothing of the job: after each step
    torch.cuda.memory_allocated() and the pinned buffers alive are what they
    are without leakwatch, step for step."""
    env = {"STEPS": "200", "PRINT_ALLOC": "1"}
    bare = lw(JOBS, "pinned", env=env, how="bare")
    run = lw(JOBS, "pinned", env=env)
    assert bare.rc == 0 and run.rc == 0, (bare, run)

    def per_step(r):
        return [tuple(map(int, l.split()[1:])) for l in r.out.splitlines()
                if l.startswith("alloc ")]

    want, got = per_step(bare), per_step(run)
    assert len(want) == 200 and got == want, ([g for g in zip(want, got) if g[0] != g[1]][:5], run)
    assert (run.lead() or {}).get("owner", {}).get("name") == "kept", run


def test_pinned_host_leak_names_its_owner(lw, tmp_path):
    """The owner search runs for a pinned host leak too: the list that keeps
    each step's pinned buffer is named, with a hint for pinned memory, in
    the report's leading site, the exit summary and `leakwatch report`."""
    run = lw(JOBS, "pinned", env={"STEPS": "400"})
    assert run.rc == 0 and run.verdict == "leak", run
    assert run.report["growth"]["memory_kind"] == "pinned_host", run
    lead = run.lead()
    assert lead is not None and lead.get("source") != "pytorch_history", run
    owner = lead.get("owner")
    assert owner, (lead, run)
    assert owner["name"] == "kept" and owner["kind"] == "list", (owner, run)
    assert owner["scope"] == "local of `pinned`", owner
    assert owner["line"] == marker_line(JOBS, "kept.append(buf)"), owner
    assert owner["shape"] == "pinned" and "ring of" in owner["hint"], owner
    # 256 KiB a step, each buffer one block of the host allocator.
    assert owner["window_count"] >= 3 and owner["window_bytes"] >= 3 * 262144, owner
    assert owner["count"] >= owner["window_count"], owner
    assert lead["owner_search"]["roots"] > 0 and lead["owner_search"]["objects"] > 0, lead
    said = "kept by list `kept` (local of `pinned`, memory_jobs.py:"
    assert said in run.err, run
    for fmt in ("text", "html"):
        out = leakwatch("report", "--format", fmt, tmp_path / "report.json")
        assert out.returncode == 0 and said in out.stdout, (fmt, out.stdout[-3000:])


def test_pinned_host_ring_of_buffers_is_clean(lw):
    run = lw(JOBS, "pinned", "fixed", env={"STEPS": "200"}, options=["--fail-on-leak"])
    assert run.rc == 0, run
    assert run.verdict == "no_leak", run
    assert run.report["growth"]["memory_kind"] == "device", run
    assert run.report["growth"]["pinned_host"]["verdict"] == "no_leak", run


# ---- the anatomy and the post-mortem at out-of-memory (1 GiB stand-in) ----

SMALL = {"FAKE_CUDA_MEM_BYTES": "1G"}


@pytest.mark.parametrize("job", ["adam", "amp"])
def test_adam_roles_match_the_formula(lw, tmp_path, job):
    """fp32 Adam: weights 4P, gradients 4P, optimizer state (two moments) 8P;
    the same under autocast (the bf16 copies are the step's, not weights)."""
    run = lw(JOBS, job, env={**SMALL, "STEPS": "100"})
    assert run.rc == 0, run
    params = int(next(l for l in run.out.splitlines() if l.startswith("params:")).split()[1])
    anatomy = run.report["anatomy"]
    assert anatomy["method"] == "pytorch", anatomy
    (dev,) = anatomy["devices"]
    for moment in ("now", "peak"):
        roles = dev[moment]
        for role, per_param in (("weights", 4), ("gradients", 4), ("optimizer_state", 8)):
            assert abs(roles[role] - per_param * params) <= 0.01 * per_param * params, (
                moment, role, roles, params)
        assert roles["leak"] == 0 and roles["cached_free"] >= 0, roles
    assert run.report["oom"] is None, run
    # Shown first in leakwatch report's text and in its HTML.
    report = tmp_path / "report.json"
    text = leakwatch("report", report).stdout
    assert "anatomy" in text.split("verdict")[0], text


def test_lora_frozen_base_counts_as_weights(lw):
    """A frozen base (reachable only through its module) is weights; only the
    adapter has gradients and optimizer state."""
    run = lw(JOBS, "lora", env={**SMALL, "STEPS": "50"})
    assert run.rc == 0, run
    count = {l.split(":")[0]: int(l.split()[1]) for l in run.out.splitlines()
             if l.startswith(("base:", "adapter:"))}
    base, adapter = count["base"], count["adapter"]
    (dev,) = run.report["anatomy"]["devices"]
    roles = dev["now"]
    want = {"weights": 4 * (base + adapter), "gradients": 4 * adapter,
            "optimizer_state": 8 * adapter}
    for role, b in want.items():
        assert abs(roles[role] - b) <= 0.01 * b, (role, roles, want)


def oom_run(lw, job):
    run = lw(JOBS, job, env={**SMALL, "STEPS": "200"})
    assert run.rc == 1, run  # the job died of torch.cuda.OutOfMemoryError
    assert "oom: CUDA out of memory" in run.out, run
    oom = run.report["oom"]
    assert oom is not None and oom["source"] == "pytorch_observer", run
    # The moment it happened: leakwatch said so before PyTorch raised.
    said = [l for l in run.err.splitlines() if l.startswith("leakwatch: out of memory: ")]
    assert said, run
    # The exit line leads with it, and forecasts no out-of-memory.
    last = [l for l in run.err.splitlines()
            if l.startswith("leakwatch: out of memory: ") and "; report: " not in l]
    assert last, run
    assert "out of memory in" not in last[-1], last[-1]
    assert run.report["growth"]["oom_eta_seconds"] is None, run
    # Free memory as it was then (the observer's figure), not a stale one.
    assert oom["device_free_bytes"] < 256 << 20, oom
    assert run.report["growth"]["device_free_bytes"] == oom["device_free_bytes"], run
    return run, oom


def test_oom_model_and_optimizer(lw):
    run, oom = oom_run(lw, "oom-model")
    assert oom["cause"] == "model_and_optimizer", oom
    assert "8-bit optimizer" in oom["remedy"] and "LoRA" in oom["remedy"], oom


def test_oom_activations(lw):
    run, oom = oom_run(lw, "oom-batch")
    assert oom["cause"] == "activations", oom
    assert "smaller batch" in oom["remedy"] and "checkpointing" in oom["remedy"], oom


def test_oom_leak(lw):
    run, oom = oom_run(lw, "oom-leak")
    assert oom["cause"] == "leak", oom
    assert oom["leak_bytes"] > 512 << 20, oom
    line = marker_line(JOBS, "LEAK-OUTPUTS")
    assert run.answer() == ("memory_jobs.py", line), run


def test_oom_fragmentation(lw):
    run, oom = oom_run(lw, "oom-frag")
    assert oom["cause"] == "fragmentation", oom
    assert "expandable_segments:True" in oom["remedy"], oom


def test_oom_outside_pytorch(lw):
    run, oom = oom_run(lw, "oom-outside")
    assert oom["cause"] == "outside_pytorch", oom
    line = marker_line(JOBS, "LEAK-OUTSIDE")
    assert f"memory_jobs.py:{line} in oom_outside" in oom["remedy"], oom


def test_oom_in_tensors_mode_is_seen_at_the_allocation(lw):
    """cudaMallocAsync refuses PyTorch's out-of-memory observer: the failed
    allocation gives the post-mortem, with the memory in use then and that
    moment's free memory (not the last second's reading)."""
    run = lw(JOBS, "oom-batch", env={**SMALL, "STEPS": "200"}, options=["--mode", "tensors"])
    assert run.rc == 1, run
    oom = run.report["oom"]
    assert oom is not None and oom["source"] == "allocation_failure", run
    assert oom["cause"] == "activations", oom
    assert oom["device_free_bytes"] < 256 << 20, oom
    assert "live" in oom["evidence"], oom
