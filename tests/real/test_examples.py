# SPDX-License-Identifier: Apache-2.0
"""The PyTorch examples (examples/torch_*.py, whose verdicts and lines
examples/README.md promises) on real PyTorch 2.6 in the default mode: each
bug named at the line marked `leak-line`, each --fixed run clean."""
import pytest

from conftest import REPO, marker_line

EXAMPLES = ["torch_loss_history.py", "torch_validation_graph.py", "torch_predictions_on_gpu.py"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_bug_named_at_its_leak_line(lw, example):
    path = REPO / "examples" / example
    run = lw(path, "--steps", "300")
    assert run.rc == 0, run
    assert run.verdict == "leak", run
    line = marker_line(path, "# leak-line")
    assert run.answer() == (example, line), run
    assert run.exit_line().startswith(f"leakwatch: LEAK in {example}:{line} "), run
    # The optimizer marks the steps: no line about counting time intervals,
    # although the first step comes seconds after the first CUDA allocation.
    assert "no step marks" not in run.err, run


@pytest.mark.parametrize("example", EXAMPLES)
def test_fixed_is_clean(lw, example):
    run = lw(REPO / "examples" / example, "--fixed", "--steps", "300")
    assert run.rc == 0, run
    assert run.verdict == "no_leak", run
