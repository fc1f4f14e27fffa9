# SPDX-License-Identifier: Apache-2.0
"""The seed articles' leaks (shared/seeds) on real PyTorch 2.6, in
leakwatch's default mode (segments: PyTorch's allocator untouched): each
leak named at the user's own line with the rate PyTorch's own counter
grows by, each fix clean. The script is tests/python/torch_seed.py, plain
PyTorch that never calls leakwatch."""
import pytest

from conftest import SEED, marker_line, summary_rate


def assert_named(run, marker, steps=None):
    assert run.verdict == "leak", run
    # Default mode: PyTorch's allocator untouched, the verdict from its own
    # counters (a small leak per step never needs a new segment), the site
    # from its allocation history (the diagnosis window, opened and closed
    # by leakwatch); leakwatch's segment series kept beside it.
    growth, torch = run.report["growth"], run.report["torch"]
    assert growth["signal"] == "torch_allocated", run
    assert torch["mode"] == "segments" and torch["backend"]["in_effect"] == "native", torch
    assert torch["diagnosis"]["state"] == "done", torch["diagnosis"]
    assert torch["diagnosis"]["recorded_by"] == "leakwatch", torch["diagnosis"]
    assert run.report["series"]["floor"], run
    if steps is not None:
        assert growth["steps"] == steps, run
    lead = run.lead()
    assert lead is not None, run
    assert lead["source"] == "pytorch_history" and lead["kind"] == "pytorch_allocator", lead
    assert lead["bytes_per_step"] > 0, lead
    place = lead.get("place_to_look") or {}
    assert place.get("file", "").endswith("torch_seed.py"), (lead.get("where"), run)
    assert place.get("line") == marker_line(SEED, marker), (lead.get("where"), run)
    # The report's answer and the exit summary name the same place.
    assert run.answer() == ("torch_seed.py", marker_line(SEED, marker)), run
    assert run.exit_line().startswith(
        f"leakwatch: LEAK in torch_seed.py:{marker_line(SEED, marker)} "), run


def allocated_per_step(run):
    for line in run.out.splitlines():
        if line.startswith("allocated per step:"):
            return float(line.split(":")[1])
    raise AssertionError(f"no 'allocated per step' line\n{run}")


@pytest.mark.parametrize("sleep_ms", ["0", "10"], ids=["fast-steps", "slow-steps"])
def test_loss_kept_with_its_graph(lw, sleep_ms):
    steps = "3000" if sleep_ms == "0" else "400"
    run = lw(SEED, "loss", env={"STEPS": steps, "SLEEP_MS": sleep_ms})
    assert run.rc == 0, run
    assert_named(run, "# LEAK-LOSS", steps=int(steps))
    # The rate is the growth of torch.cuda.memory_allocated() per step.
    want = allocated_per_step(run)
    assert want > 0, run
    got = run.report["growth"]["bytes_per_step"]
    assert got == pytest.approx(want, rel=0.05), run
    assert summary_rate(run.exit_line()) == pytest.approx(want, rel=0.05), run


def test_loss_fixed_is_clean(lw):
    run = lw(SEED, "loss", "fixed", env={"STEPS": "1000"})
    assert run.rc == 0, run
    assert run.verdict == "no_leak", run
    assert run.report["growth"]["signal"] == "torch_allocated", run


def test_validation_without_no_grad(lw):
    run = lw(SEED, "validation", env={"STEPS": "300"})
    assert run.rc == 0, run
    assert_named(run, "# LEAK-VALIDATION", steps=300)


def test_validation_fixed_with_no_grad_is_clean(lw):
    run = lw(SEED, "validation", "fixed", env={"STEPS": "300"})
    assert run.rc == 0, run
    assert run.verdict == "no_leak", run
    assert run.report["growth"]["signal"] == "torch_allocated", run


def test_validation_phase_without_optimizer_steps(lw):
    # validate_bad alone for 600 batches: no optimizer step, so no step mark
    # arrives in the phase that leaks; the verdict must still come, from time
    # intervals (no counters and no diagnosis window without marks: the
    # place is the segment site's own Python line). The intervals are the
    # test clock's (LEAKWATCH_TEST_CLOCK=1: each batch moves leakwatch's
    # time 10 ms): the phase without marks is found and sampled the same on
    # any machine. On the wall clock its points depend on the machine's
    # speed: a 0.3 s phase after 20 slow first steps gave 9 points on an
    # idle 2-core machine (too few to decide).
    clock = {"LEAKWATCH_TEST_CLOCK": "1", "SLEEP_MS": "10"}
    run = lw(SEED, "validation-only", env={"STEPS": "600", **clock})
    assert run.rc == 0, run
    assert run.verdict == "leak", run
    assert run.report["growth"]["verdict_from_unmarked_phases"] is True, run
    line = marker_line(SEED, "# LEAK-VALIDATION")
    assert run.answer() == ("torch_seed.py", line), run
    assert run.exit_line().startswith(f"leakwatch: LEAK in torch_seed.py:{line} "), run


def test_validation_fixed_is_clean(lw):
    run = lw(SEED, "validation-only", "fixed",
             env={"STEPS": "600", "LEAKWATCH_TEST_CLOCK": "1", "SLEEP_MS": "10"})
    assert run.rc == 0, run
    assert run.verdict == "no_leak", run


def test_predictions_kept_on_the_gpu(lw):
    run = lw(SEED, "predictions", env={"STEPS": "400"})
    assert run.rc == 0, run
    assert_named(run, "# LEAK-PREDICTIONS", steps=400)
    # The rate is the growth of torch.cuda.memory_allocated() per step.
    want = allocated_per_step(run)
    assert run.report["growth"]["bytes_per_step"] == pytest.approx(want, rel=0.05), run


def test_predictions_fixed_is_clean(lw):
    run = lw(SEED, "predictions", "fixed", env={"STEPS": "400"})
    assert run.rc == 0, run
    assert run.verdict == "no_leak", run
    assert run.report["growth"]["signal"] == "torch_allocated", run


@pytest.mark.parametrize("env", [
    {"SCALER": "1"},
    {"ACCUM": "4"},
    {"OPTIMIZERS": "2"},
    {"LOADER": "fork"},
    {"LOADER": "spawn"},
], ids=["grad-scaler", "grad-accumulation", "two-optimizers", "loader-fork", "loader-spawn"])
def test_loss_leak_in_common_training_setups(lw, env):
    run = lw(SEED, "loss", env={"STEPS": "600", **env})
    assert run.rc == 0, run
    # One step per training iteration, whatever the number of optimizers or
    # the accumulation.
    iterations = 600 // int(env.get("ACCUM", "1"))
    assert_named(run, "# LEAK-LOSS", steps=iterations)
    steps = run.report["torch"]["steps"]
    assert steps["marks"] == iterations, steps
    assert steps["optimizer_calls"] == iterations * int(env.get("OPTIMIZERS", "1")), steps


def test_gradients_kept_by_a_hook_named_at_backward(lw):
    # Each step's gradient is allocated on autograd's own thread (no Python
    # frame of the job): named at the backward() call that waited for it,
    # not at leakwatch's own wrapper of backward.
    run = lw(SEED, "gradients", env={"STEPS": "400"})
    assert run.rc == 0, run
    assert_named(run, "# LEAK-BACKWARD", steps=400)
    want = allocated_per_step(run)
    assert run.report["growth"]["bytes_per_step"] == pytest.approx(want, rel=0.05), run
    line = marker_line(SEED, "# LEAK-BACKWARD")
    assert f"in backward, called from torch_seed.py:{line}" in run.exit_line(), run
    assert "_torch.py" not in run.exit_line(), run


def test_gradients_fixed_is_clean(lw):
    run = lw(SEED, "gradients", "fixed", env={"STEPS": "400"})
    assert run.rc == 0, run
    assert run.verdict == "no_leak", run
    assert run.report["growth"]["signal"] == "torch_allocated", run


def test_growth_released_at_each_epoch_end_is_not_a_leak(lw):
    # loss_history local to each epoch's function: +512 B/step within an
    # epoch of 100 steps, all of it released when the epoch returns. Across
    # the run nothing accumulates, so the verdict is no leak.
    # It is reported as such (growth.cycles and a summary line), with the
    # peak it reaches at the end of an epoch: what PyTorch's counter rose by
    # per step within an epoch, times the epoch's length.
    # On the test clock (1 ms a batch): every mark's counters are read, so
    # the cycles are seen whatever the machine's load (on the wall clock,
    # after 200 marks, a loaded machine's reads were too sparse to see them).
    run = lw(SEED, "epoch", env={"STEPS": "1000", "EPOCH_STEPS": "100",
                                 "LEAKWATCH_TEST_CLOCK": "1", "SLEEP_MS": "1"})
    assert run.rc == 0, run
    assert run.verdict == "no_leak", run
    cycles = run.report["growth"]["cycles"]
    assert cycles is not None, run
    assert cycles["signal"] == "torch_allocated", cycles
    # Epochs 2..9 run from one release to the next (the first holds the
    # warm-up, the last ends after the last step).
    assert cycles["count"] == 8, cycles
    assert cycles["period_steps"] == pytest.approx(100, abs=1), cycles
    per_step = allocated_per_step(run)
    assert per_step > 0, run
    assert cycles["rise_bytes_per_step"] == pytest.approx(per_step, rel=0.05), (cycles, per_step)
    assert cycles["peak_bytes"] == pytest.approx(99 * per_step, rel=0.05), (cycles, per_step)
    line = [l for l in run.err.splitlines() if "no leak across cycles" in l]
    assert line and "tensor memory grows by +" in line[0] and "cycle of ~100 steps" in line[0], run
    assert "it peaks at " in line[0] and "above the floor" in line[0], run
