# SPDX-License-Identifier: Apache-2.0
"""What keeps the seed's leaks alive, on real PyTorch 2.6 (issue 31): the
diagnosis window names the owner of the leaking tensors -- the variable, the
container, the autograd graph -- with a fix hint, in the report and in the
exit summary under the line; the fixed loops name none."""
import subprocess

import pytest

from conftest import LEAKWATCH, SEED, marker_line


def report_says(run, text):
    """`leakwatch report`, as text and as a web page, says TEXT."""
    path = run.report["report_path"]
    for fmt in ("text", "html"):
        out = subprocess.run([str(LEAKWATCH), "report", "--format", fmt, path],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and text in out.stdout, (fmt, out.stderr, out.stdout[-3000:])


def owners(run):
    lead = run.lead()
    assert lead is not None, run
    assert lead.get("source") == "pytorch_history", run
    return lead.get("owner"), lead.get("owners") or []


def test_loss_kept_by_list_and_accumulator_graph(lw):
    run = lw(SEED, "loss", env={"STEPS": "400"})
    assert run.rc == 0 and run.verdict == "leak", run
    owner, all_ = owners(run)
    assert owner["name"] == "loss_history" and owner["kind"] == "list", (owner, run)
    assert owner["scope"] == "local of `train_bad`", owner
    assert owner["line"] == marker_line(SEED, "  loss_history.append(loss)"), owner
    assert owner["count"] >= 3 and owner["bytes"] >= 512 * owner["count"], owner
    assert owner["shape"] == "item" and ".item()" in owner["hint"], owner
    graph = [o for o in all_ if o["name"] == "total_loss"]
    assert graph, all_
    assert graph[0]["shape"] == "graph_item" and graph[0]["graph_top"] == "AddBackward0", graph
    assert graph[0]["graph_top_count"] >= 3 and graph[0]["passes"] >= 3, graph
    assert owner["window_count"] >= 3, owner
    # The exit summary says it under the line, and so does leakwatch report.
    said = "kept by list `loss_history` (local of `train_bad`, torch_seed.py:"
    assert said in run.err, run
    report_says(run, said)


def test_validation_graphs_kept_with_grad_mode_on(lw):
    run = lw(SEED, "validation", env={"STEPS": "300"})
    assert run.rc == 0 and run.verdict == "leak", run
    owner, _ = owners(run)
    assert owner["name"] == "val_history" and owner["scope"] == "local of `main`", (owner, run)
    assert owner["shape"] == "no_grad" and "torch.no_grad()" in owner["hint"], owner
    assert owner["via_graph"] > 0 and owner["passes"] >= 3, owner
    assert owner["kind"] == "list" and owner["line"] == marker_line(SEED, "val_history.append("), owner
    assert owner["count"] >= 3 and owner["window_count"] >= 3, owner
    said = "kept by list `val_history` (local of `main`, torch_seed.py:"
    assert said in run.err, run
    report_says(run, said)


def test_predictions_kept_on_the_gpu(lw):
    run = lw(SEED, "predictions", env={"STEPS": "400"})
    assert run.rc == 0 and run.verdict == "leak", run
    owner, _ = owners(run)
    assert owner["name"] == "all_preds" and owner["kind"] == "list", (owner, run)
    assert owner["shape"] == "detach_cpu" and ".detach().cpu()" in owner["hint"], owner
    assert owner["scope"] == "local of `main`", owner
    assert owner["line"] == marker_line(SEED, "all_preds.append("), owner
    assert owner["count"] >= 3 and owner["window_count"] >= 3, owner
    said = "kept by list `all_preds` (local of `main`, torch_seed.py:"
    assert said in run.err, run
    report_says(run, said)


def test_fixed_loops_name_no_owner(lw):
    for leak in ("loss", "predictions", "validation"):
        run = lw(SEED, leak, "fixed", env={"STEPS": "300"})
        assert run.rc == 0 and run.verdict == "no_leak", run
        assert "kept by" not in run.err, run
        assert not any(s.get("owner") for s in run.report.get("sites", [])), run


def test_owner_search_off_with_a_setting(lw):
    run = lw(SEED, "loss", env={"STEPS": "400", "LEAKWATCH_TORCH_OWNER_MS": "0"})
    assert run.rc == 0 and run.verdict == "leak", run
    owner, _ = owners(run)
    assert owner is None, owner
    assert "kept by" not in run.err, run


SHAPES = SEED.parent / "torch_owner_shapes.py"


def test_attribute_and_closure_owners(lw):
    run = lw(SHAPES, "attr")
    assert run.rc == 0 and run.verdict == "leak", run
    owner, _ = owners(run)
    assert owner["name"] == "self.history['loss']", (owner, run)
    assert owner["scope"] == "local of `Trainer.fit`", owner
    assert owner["line"] == marker_line(SHAPES, "# OWNER-ATTR"), owner
    run = lw(SHAPES, "closure")
    assert run.rc == 0 and run.verdict == "leak", run
    owner, _ = owners(run)
    assert owner["name"] == "hidden", (owner, run)
    assert owner["scope"] == ("closure of `make_keeper.<locals>.keep`, held by `keep` "
                              "(local of `Trainer.fit`)"), owner
    assert owner["line"] == marker_line(SHAPES, "# OWNER-CLOSURE"), owner


def test_owner_not_found_said_honestly(lw):
    run = lw(SHAPES, "hidden")
    assert run.rc == 0 and run.verdict == "leak", run
    owner, all_ = owners(run)
    assert owner["name"] is None and not all_, (owner, run)
    assert owner["text"].startswith("owner not found: "), owner
    assert "held by a list" in owner["text"], owner
    # One plain line: that nothing was found, and what was searched (issue 38).
    assert "; searched " in owner["text"] and "of your modules" in owner["text"], owner
    assert "owner not found: " in run.err, run


@pytest.mark.parametrize("shape,name,scope", [
    ("default", "_kept", "default argument of `stash` (global of `__main__`)"),
    ("partial", "keep_partial.args[0]",
     "argument `store` of `record` bound by functools.partial (local of `Trainer.fit`)"),
    ("classattr", "Registry.kept", "global of `__main__`"),
    ("nested", "self.state['runs'][0]['outs']", "local of `Trainer.fit`"),
])
def test_owners_at_any_depth(lw, shape, name, scope):
    """Default arguments, functools.partial, class attributes, containers
    at any depth (issue 38): named, with the line that adds to them."""
    run = lw(SHAPES, shape)
    assert run.rc == 0 and run.verdict == "leak", run
    owner, _ = owners(run)
    assert owner["name"] == name and owner["scope"] == scope, (owner, run)
    assert owner["line"] == marker_line(SHAPES, f"# OWNER-{shape.upper()}"), owner
    assert owner["text"] in run.err, run
