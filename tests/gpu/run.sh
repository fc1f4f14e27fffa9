#!/usr/bin/env bash
# The PyTorch examples on a real GPU: needs an NVIDIA GPU, CUDA and PyTorch
# (>= 2.0; written against 2.11 + CUDA 13). Builds the shim (make), runs each
# example (examples/torch_*.py) with and without its bug under the shim with
# default settings (segments: PyTorch's allocator untouched) and in tensors
# mode, checks the verdicts, the steps (one per iteration, marked
# automatically) and that the example's "# leak-line" is named (default: the
# first site, from PyTorch's allocation history, has it as its place to look;
# tensors: it is in the leaking site's stack); runs tests/python/
# torch_features.py (torch.compile with CUDA graphs, the memory-snapshot
# recipe, MemPool, CUDA IPC), which must work under the default; then
# measures the time per step against the same runs without the shim. Prints
# a summary table; exits 1 if a check failed. About 30 runs: < 6 minutes.
#
#   tests/gpu/run.sh            (PYTHON=python3.12 to choose the interpreter)
#
# Expected results and why: examples/README.md.
set -u
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
PY=${PYTHON:-python3}
OUT=$(mktemp -d /tmp/leakwatch-gpu.XXXXXX)
LIB=$ROOT/build/libleakwatch.so
START=$SECONDS
echo "leakwatch GPU check; logs and reports in $OUT"

if ! make -j"$(nproc)" all >"$OUT/make.log" 2>&1; then
    tail -30 "$OUT/make.log"
    echo "FAIL: make"
    exit 1
fi
if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>"$OUT/torch.err"; then
    cat "$OUT/torch.err"
    echo "FAIL: $PY has no PyTorch with a usable CUDA GPU"
    exit 2
fi
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'

# The user's own allocator settings would change what is expected.
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF PYTORCH_NO_CUDA_MEMORY_CACHING
for v in $(env | sed -n 's/^\(LEAKWATCH_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

RESULTS=$OUT/results.tsv
: >"$RESULTS"

# run NAME EXAMPLE VARIANT SHIM [ENV...]: one run; appends one line to RESULTS.
#   VARIANT: leak | fixed | FEATURE (tests/python/torch_features.py).
#   SHIM: off | default (no LEAKWATCH_TORCH_MODE) | tensors.
run() {
    local name=$1 example=$2 variant=$3 shim=$4
    shift 4
    local args=() env=("$@") script="$ROOT/examples/$example.py"
    [ "$variant" = fixed ] && args+=(--fixed)
    if [ "$example" = features ]; then
        script="$ROOT/tests/python/torch_features.py"
        args=("$variant")
    fi
    if [ "$shim" != off ]; then
        env+=(LD_PRELOAD="$LIB" LEAKWATCH_REPORT="$OUT/$name.json")
        [ "$shim" = tensors ] && env+=(LEAKWATCH_TORCH_MODE=tensors)
    fi
    timeout 180 env ${env[@]+"${env[@]}"} "$PY" "$script" ${args[@]+"${args[@]}"} \
        >"$OUT/$name.out" 2>"$OUT/$name.err"
    local rc=$?
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$example" "$variant" "$shim" "$rc" >>"$RESULTS"
}

EXAMPLES="torch_loss_history torch_validation_graph torch_predictions_on_gpu"
for ex in $EXAMPLES; do
    for shim in default tensors; do
        run "$ex.leak.$shim" "$ex" leak "$shim"
        run "$ex.fixed.$shim" "$ex" fixed "$shim"
    done
    # Without the shim: the time per step to compare with (native allocator,
    # and the cudaMallocAsync backend tensors mode switches to).
    run "$ex.fixed.off" "$ex" fixed off
    run "$ex.fixed.off-async" "$ex" fixed off PYTORCH_ALLOC_CONF=backend:cudaMallocAsync
    echo "  $ex done ($((SECONDS - START)) s)"
done
# What the cudaMallocAsync backend refuses: must work under the default.
for f in compile snapshot mempool ipc; do
    run "features.$f.default" features "$f" default
    run "features.$f.tensors" features "$f" tensors
done
echo "  features done ($((SECONDS - START)) s)"

# Checks and table, from the reports (JSON) and each run's last stdout line.
OUT="$OUT" ROOT="$ROOT" "$PY" - <<'EOF'
import json, os, re, sys

out, root = os.environ["OUT"], os.environ["ROOT"]
# Expected verdicts (examples/README.md explains each).
expect = {
    ("torch_loss_history", "leak", "tensors"): {"leak"},
    ("torch_loss_history", "leak", "default"): {"leak"},
    ("torch_validation_graph", "leak", "tensors"): {"leak"},
    ("torch_validation_graph", "leak", "default"): {"leak"},
    ("torch_predictions_on_gpu", "leak", "tensors"): {"leak"},
    ("torch_predictions_on_gpu", "leak", "default"): {"leak"},
}
backend = {"tensors": "cudaMallocAsync", "default": "native", "off": "native"}

def leak_line(example):
    with open(os.path.join(root, "examples", example + ".py")) as f:
        for n, text in enumerate(f, 1):
            if "# leak-line" in text:
                return n
    return None

def last_fields(name):
    try:
        lines = open(os.path.join(out, name + ".out")).read().split()
    except OSError:
        return {}
    return dict(w.split("=", 1) for w in lines if "=" in w)

def py_frames(site):
    return [f for f in site.get("frames", []) if f.get("kind") == "python"]

def label(f):
    return f"{os.path.basename(f.get('file') or '?')}:{f.get('line')} {f.get('function')}"

rows, failures, times = [], [], {}
for line in open(os.path.join(out, "results.tsv")):
    name, ex, variant, shim, rc = line.rstrip("\n").split("\t")
    fields = last_fields(name)
    if ex == "features":
        text = open(os.path.join(out, name + ".out")).read()
        ok = rc == "0" and f"{variant} ok" in text
        problems = []
        if shim == "default" and not ok:
            problems.append("FAIL: " + (text.strip().splitlines() or ["exit " + rc])[-1])
        if shim == "tensors" and ok:
            problems.append("note: worked under cudaMallocAsync (a newer PyTorch?)")
        if shim == "default":
            try:
                rep = json.load(open(os.path.join(out, name + ".json")))
                site = (rep.get("sites") or [{}])[0]
                named = f"{rep.get('verdict')} {site.get('source')} {site.get('place_to_look')}"
            except (OSError, ValueError) as e:
                named = f"no report ({e.__class__.__name__})"
        else:
            named = "-"
        if problems and problems[0].startswith("FAIL"):
            failures.append(name)
        rows.append(("features", variant, shim, "ok" if ok else "failed", named, "-", "-",
                     "; ".join(problems) or "ok"))
        continue
    if variant == "fixed":
        key = "off-async" if name.endswith("off-async") else shim
        times[(ex, key)] = float(fields.get("step_ms", "nan"))
    problems = []
    if rc != "0":
        problems.append(f"exit {rc}")
    want_backend = "cudaMallocAsync" if name.endswith("off-async") else backend[shim]
    if fields.get("backend") != want_backend:
        problems.append(f"backend {fields.get('backend')} (want {want_backend})")
    verdict = named = where = "-"
    if shim != "off":
        try:
            rep = json.load(open(os.path.join(out, name + ".json")))
        except (OSError, ValueError) as e:
            rep = None
            problems.append(f"no report ({e.__class__.__name__})")
        if rep:
            verdict = rep.get("verdict")
            want = expect.get((ex, variant, shim), {"no_leak"})
            if verdict not in want:
                problems.append(f"verdict {verdict} (want {'|'.join(sorted(want))})")
            g = rep.get("growth", {})
            if g.get("steps") != 300 or g.get("step_source") != "marker":
                problems.append(f"steps {g.get('steps')} from {g.get('step_source')} (want 300 from marker)")
            if shim == "default" and g.get("signal") != "torch_allocated":
                problems.append(f"signal {g.get('signal')} (want torch_allocated)")
            sites = rep.get("sites") or [{}]
            frames = py_frames(sites[0])
            # The place to look leakwatch names (sites[].where): the example's
            # own line, not torch's.
            named = (sites[0].get("where") or {}).get("label") or "(none)"
            if variant == "leak" and verdict == "leak" and shim == "tensors" and \
                    not named.startswith("torch_"):
                problems.append(f"the place to look is {named}, not a line of the example")
            mine = [f for f in frames if f.get("file") and
                    os.path.realpath(f["file"]) == os.path.realpath(os.path.join(root, "examples", ex + ".py"))]
            where = label(mine[0]) if mine else "-"
            if variant == "leak" and verdict == "leak":
                line_no = leak_line(ex)
                at = any(f.get("line") == line_no for f in mine)
                if shim == "tensors" and not at:
                    problems.append(f"leak-line {line_no} not in the leaking site's stack")
                if shim == "default":
                    look = sites[0].get("place_to_look") or {}
                    at = sites[0].get("source") == "pytorch_history" and look.get("line") == line_no
                    if not at:
                        problems.append(f"first site {sites[0].get('source')} at {look} "
                                        f"(want pytorch_history at leak-line {line_no})")
                where += " (leak-line)" if at else ""
    if "PYTORCH_CUDA_ALLOC_CONF is deprecated" in open(os.path.join(out, name + ".err")).read():
        problems.append("note: PyTorch printed its PYTORCH_CUDA_ALLOC_CONF deprecation warning")
    hard = [p for p in problems if not p.startswith("note:")]
    if hard:
        failures.append(name)
    mode = "off-async" if name.endswith("off-async") else shim
    rows.append((ex.replace("torch_", ""), variant, mode, verdict, named, where,
                 fields.get("step_ms", "-"), "FAIL: " + "; ".join(problems) if hard else "; ".join(problems) or "ok"))

w = [max(len(str(r[i])) for r in rows + [("example", "variant", "mode", "verdict", "place to look", "in the example", "ms/step", "check")]) for i in range(8)]
head = ("example", "variant", "mode", "verdict", "place to look", "in the example", "ms/step", "check")
for r in [head] + rows:
    print("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)))

print("\ntime per optimizer step (fixed variants; ratio to the run without the shim)")
for ex in sorted({k[0] for k in times}):
    base, base_async = times.get((ex, "off")), times.get((ex, "off-async"))
    t, s = times.get((ex, "tensors")), times.get((ex, "default"))

    def ms(v):
        return f"{v:.4f} ms" if v is not None and v == v else "?"

    def ratio(a, b):
        return f"{a / b:.2f}x" if a and b and a == a and b == b else "?"

    print(f"  {ex:28s} native {ms(base)} | cudaMallocAsync {ms(base_async)} | "
          f"tensors {ms(t)} ({ratio(t, base_async)} vs async, {ratio(t, base)} vs native) | "
          f"default {ms(s)} ({ratio(s, base)} vs native)")

if failures:
    print(f"\nFAILED: {' '.join(failures)} (logs in {out})")
    sys.exit(1)
print("\nall checks passed")
EOF
status=$?
echo "total $((SECONDS - START)) s"
exit $status
