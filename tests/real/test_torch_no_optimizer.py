# SPDX-License-Identifier: Apache-2.0
"""Jobs without an optimizer step on real PyTorch 2.6 (issue 37): inference
servers, generation and evaluation loops get a step per call of their
outermost nn.Module, PyTorch's own counters and allocation history, the
line that creates the kept tensors, their owner with a fix hint, growth per
call and per second -- and never a wrong "no leak"."""
import subprocess
from pathlib import Path

from conftest import LEAKWATCH, SEED, marker_line

SERVER = Path(__file__).resolve().parent / "torch_server.py"


def unit(run):
    g = run.report["growth"]
    return g.get("step_unit"), g.get("step_module")


def lead_owner(run):
    lead = run.lead()
    assert lead is not None and lead.get("source") == "pytorch_history", run
    return lead, lead.get("owner") or {}


def test_kv_server_named_at_the_kept_tensors_with_its_cache(lw):
    """Issue 37, failure 1: named at the output projection, no owner."""
    run = lw(SERVER, "kv", env={"REQUESTS": "600"})
    assert run.rc == 0 and run.verdict == "leak", run
    assert unit(run) == ("module_call", "TinyAttention"), run
    kept = {marker_line(SERVER, "# KEPT-K"), marker_line(SERVER, "# KEPT-V")}
    file, line = run.answer()
    assert file == "torch_server.py" and line in kept, (run.answer(), run)
    lead, owner = lead_owner(run)
    assert owner.get("name") == "cache" and owner.get("kind") == "cache", (owner, run)
    assert owner.get("shape") == "cache" and "evict" in owner.get("hint", ""), owner
    # 80 KiB per request (k and v), per call and per second in the exit line.
    assert abs(run.report["growth"]["bytes_per_step"] - 80 * 1024) < 4 * 1024, run
    line = run.exit_line()
    assert "KiB/call" in line and "/s," in line, line
    assert "kept by cache `cache`" in run.err, run
    # leakwatch report says the same, as text and as a web page.
    for fmt in ("text", "html"):
        out = subprocess.run([str(LEAKWATCH), "report", "--format", fmt,
                              run.report["report_path"]], capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0 and "KiB/call" in out.stdout and "/s," in out.stdout, (
            fmt, out.stderr, out.stdout[-2000:])


def test_slow_kv_server_is_never_no_leak(lw):
    """Issue 37, failure 2: 2 KiB per request got "no leak" while its own
    slope was significant. Short runs are inconclusive, a long one is a
    leak at the kept tensors' line. Short time intervals (20 ms) give the
    former time-interval answer its many intervals in a short run: it said
    "no leak" over 168 and 371 intervals (1,000 and 3,000 requests)."""
    kept = {marker_line(SERVER, "# KEPT-K"), marker_line(SERVER, "# KEPT-V")}
    for n in (30, 1000, 3000):
        run = lw(SERVER, "kv", env={"REQUESTS": str(n), "KV_BYTES": "2048",
                                    "LEAKWATCH_INTERVAL_MS": "20"})
        assert run.rc == 0 and run.verdict in ("leak", "inconclusive"), (n, run)
        assert not run.exit_line().startswith("leakwatch: no leak"), (n, run)
        if n == 3000:
            assert run.verdict == "leak", run
            assert run.answer()[1] in kept, (run.answer(), run)
            assert abs(run.report["growth"]["bytes_per_step"] - 2048) < 64, run
            _, owner = lead_owner(run)
            assert owner.get("name") == "cache", (owner, run)


def test_bounded_kv_cache_is_no_leak(lw):
    run = lw(SERVER, "kv", "fixed", env={"REQUESTS": "1500"})
    assert run.rc == 0 and run.verdict == "no_leak", run
    assert unit(run) == ("module_call", "TinyAttention"), run
    assert "kept by" not in run.err, run


def test_generate_loop_keeping_scores_on_the_gpu(lw):
    run = lw(SERVER, "generate", env={"REQUESTS": "1500"})
    assert run.rc == 0 and run.verdict == "leak", run
    assert unit(run) == ("module_call", "TinyLM"), run
    assert run.answer() == ("torch_server.py", marker_line(SERVER, "return self.head(")), run
    _, owner = lead_owner(run)
    assert owner.get("name") == "scores" and owner.get("kind") == "list", (owner, run)
    assert owner.get("line") == marker_line(SERVER, "# SCORES-APPEND"), owner
    assert abs(run.report["growth"]["bytes_per_step"] - 2048) < 64, run
    fixed = lw(SERVER, "generate", "fixed", env={"REQUESTS": "1500"})
    assert fixed.rc == 0 and fixed.verdict == "no_leak", fixed


def test_eval_loop_under_no_grad_keeping_outputs(lw):
    run = lw(SERVER, "eval", env={"REQUESTS": "1500"})
    assert run.rc == 0 and run.verdict == "leak", run
    assert unit(run) == ("module_call", "Sequential"), run
    assert run.answer() == ("torch_server.py", marker_line(SERVER, "out = model(batch)")), run
    _, owner = lead_owner(run)
    assert owner.get("name") == "predictions", (owner, run)
    assert owner.get("line") == marker_line(SERVER, "# PREDICTIONS-APPEND"), owner
    assert ".cpu()" in owner.get("hint", ""), owner
    fixed = lw(SERVER, "eval", "fixed", env={"REQUESTS": "1500"})
    assert fixed.rc == 0 and fixed.verdict == "no_leak", fixed


def test_validate_bad_alone_gets_its_owner_and_no_grad_hint(lw):
    """Issue 37, failure 3: validation without torch.no_grad() and without
    any training: leak and line were right, owner and hint missing."""
    run = lw(SEED, "validation-alone", env={"STEPS": "300"})
    assert run.rc == 0 and run.verdict == "leak", run
    assert unit(run) == ("module_call", "Sequential"), run
    assert run.answer() == ("torch_seed.py", marker_line(SEED, "# LEAK-VALIDATION")), run
    _, owner = lead_owner(run)
    assert owner.get("name") == "val_loss" and owner.get("shape") == "no_grad", (owner, run)
    assert "torch.no_grad()" in owner.get("hint", ""), owner
    assert "torch.no_grad()" in run.err, run
    fixed = lw(SEED, "validation-alone", "fixed", env={"STEPS": "300"})
    assert fixed.rc == 0 and fixed.verdict == "no_leak", fixed


def test_training_steps_stay_the_optimizers(lw):
    """A training job's steps are its optimizer's, not its forward calls."""
    run = lw(SEED, "loss", env={"STEPS": "200"})
    assert run.rc == 0 and run.verdict == "leak", run
    assert unit(run) == ("optimizer_step", None), run
    assert run.report["growth"]["steps"] == 200, run
    assert "/step" in run.exit_line(), run


def test_tensor_ops_without_module_or_optimizer_in_time_intervals(lw):
    """No nn.Module and no optimizer: time intervals are the steps, and
    PyTorch's counters and allocation history still come (read once per
    interval): the kept tensors' line and their owner. 2,500 iterations of
    at least 2 ms each: over 5 s, a hundred intervals of 50 ms at least."""
    env = {"REQUESTS": "2500", "LEAKWATCH_INTERVAL_MS": "50"}
    run = lw(SERVER, "tensors", env=env)
    assert run.rc == 0 and run.verdict == "leak", run
    assert unit(run) == ("interval", None), run
    assert run.report["growth"]["signal"] == "torch_allocated", run
    assert run.answer() == ("torch_server.py", marker_line(SERVER, "# TENSORS-KEPT")), run
    _, owner = lead_owner(run)
    assert owner.get("name") == "results", (owner, run)
    assert owner.get("line") == marker_line(SERVER, "# TENSORS-APPEND"), owner
    assert "/interval" in run.exit_line() and "/s," in run.exit_line(), run
    fixed = lw(SERVER, "tensors", "fixed", env=env)
    assert fixed.rc == 0 and fixed.verdict == "no_leak", fixed
