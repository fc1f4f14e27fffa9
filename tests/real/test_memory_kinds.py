# SPDX-License-Identifier: Apache-2.0
"""Why the device filled up (issue 40), on real PyTorch 2.6 on the stand-ins:
a leak of pinned host memory is the run's leak in every view; the anatomy
of memory by role; the post-mortem at out-of-memory. The jobs are
tests/real/memory_jobs.py, plain PyTorch that never calls leakwatch."""
import json
import subprocess

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


def test_pinned_host_ring_of_buffers_is_clean(lw):
    run = lw(JOBS, "pinned", "fixed", env={"STEPS": "200"}, options=["--fail-on-leak"])
    assert run.rc == 0, run
    assert run.verdict == "no_leak", run
    assert run.report["growth"]["memory_kind"] == "device", run
    assert run.report["growth"]["pinned_host"]["verdict"] == "no_leak", run
