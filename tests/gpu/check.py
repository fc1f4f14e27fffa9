# SPDX-License-Identifier: Apache-2.0
"""The GPU check: leakwatch against a real GPU and PyTorch, from a build made
beforehand (build/ carried with the working tree). Never builds, never runs
apt or the network. Writes every log, report and a summary table
(summary.md, results.json) under $OUT (or --out, or a new /tmp folder).

    tests/gpu/run.sh                 on the GPU machine (about 6-8 minutes)
    tests/gpu/run.sh --dry-run       here, on the CPU stand-ins and a stand-in torch

Parts, each in its own process with its own timeout, inside one overall
budget (--budget seconds, default 480) so that a hang costs one part:
  preflight   the library, the command, what the library needs that is missing
  doctor      `leakwatch doctor`, when the command has it
  backend     PyTorch's allocator backend under the shim: no variable,
              PYTORCH_ALLOC_CONF=expandable_segments:True, both variables;
              under the default settings (LEAKWATCH_TORCH_MODE=segments)
              the backend and both variables must be as without the shim
  examples    examples/torch_*.py (leak and --fixed) in every torch mode
              (the default one with no LEAKWATCH_* variable at all), and
              without the shim (time per step: ratio in the same run); by
              default the verdict must come from PyTorch's counters and the
              first site, from its allocation history, must name the
              example's leak-line
  features    tests/python/torch_features.py: torch.compile with CUDA
              graphs, the memory-snapshot recipe, MemPool, CUDA IPC, each
              in a leaking loop (so leakwatch's diagnosis window opens while
              the feature is in use): must work under the default settings;
              in tensors mode PyTorch's refusal is recorded
  compare     step by step: leakwatch's live device bytes against
              torch.cuda.memory_allocated/reserved and cuMemGetInfo
  graph       torch.cuda.graph capture of a few hundred allocations, replay
  snapshot    torch.cuda.memory._record_memory_history + _snapshot, under
              the default settings
  compile     torch.compile(mode="reduce-overhead"), a few steps, under the
              default settings
  ipc         a second process exports 64 MiB (cudaIpcGetMemHandle), this one
              opens and closes it: counted as imported, never as device memory
Exit 0 when no check failed, 1 otherwise, 2 when it could not start.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HERE = os.path.join(ROOT, "tests", "gpu")
EXAMPLES = ["torch_loss_history", "torch_validation_graph", "torch_predictions_on_gpu"]
# The features the cudaMallocAsync backend refuses (tests/python/torch_features.py).
FEATURES = ["compile", "snapshot", "mempool", "ipc"]
DEFAULT_MODE = "segments"  # PyTorch's allocator untouched (issue 13)
# Expected verdicts on a GPU (examples/README.md explains each); others: no_leak.
EXPECT = {
    ("torch_loss_history", "leak", "tensors"): {"leak"},
    ("torch_loss_history", "leak", "segments"): {"leak"},
    ("torch_validation_graph", "leak", "tensors"): {"leak"},
    ("torch_validation_graph", "leak", "segments"): {"leak"},
    ("torch_predictions_on_gpu", "leak", "tensors"): {"leak"},
    ("torch_predictions_on_gpu", "leak", "segments"): {"leak"},
}


def leak_line(script):
    """The line marked `# leak-line` in an example."""
    with open(script) as f:
        for n, text in enumerate(f, 1):
            if "# leak-line" in text:
                return n
    return None


class Check:
    def __init__(self, args):
        self.args = args
        self.dry = args.dry_run
        self.out = args.out
        self.t0 = time.monotonic()
        self.rows = []  # (part, name, status, detail)
        self.results = {"dry_run": self.dry, "parts": {}}
        self.lib = os.path.join(args.build, "libleakwatch.so")
        self.cmd = os.path.join(args.build, "leakwatch")
        self.py = args.python
        self.env = self.base_env()

    # ---- plumbing ----
    def left(self):
        return self.args.budget - (time.monotonic() - self.t0)

    def note(self, part, name, status, detail=""):
        self.rows.append((part, name, status, detail))
        print(f"  {part:9s} {name:44s} {status:5s} {detail}", flush=True)

    def base_env(self):
        env = dict(os.environ)
        # The user's settings would change what is expected.
        for k in list(env):
            if k.startswith("LEAKWATCH_") or k in (
                "PYTORCH_CUDA_ALLOC_CONF",
                "PYTORCH_ALLOC_CONF",
                "PYTORCH_NO_CUDA_MEMORY_CACHING",
                "LD_PRELOAD",
            ):
                del env[k]
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        if self.dry:
            env["LW_GPU_DRY"] = "1"
            stubs = os.path.join(self.args.build, "tests", "lib")
            env["LD_LIBRARY_PATH"] = stubs + os.pathsep + env.get("LD_LIBRARY_PATH", "")
            # The stand-in torch allocates through this runtime (ctypes).
            env["LW_CUDART"] = os.path.join(stubs, "libcudart.so")
            env["PYTHONPATH"] = os.pathsep.join(
                filter(None, [self.args.torch_path, os.path.join(ROOT, "python"), env.get("PYTHONPATH")])
            )
        return env

    def run(self, name, argv, timeout, env=None, shim=None, cwd=None):
        """Runs argv with its output in OUT/name.out|.err; returns (rc, stdout).
        rc None: skipped (budget spent); 124: timed out."""
        budget = self.left() - 5
        if budget < 10:
            return None, ""
        timeout = min(timeout, budget)
        e = dict(self.env)
        e.update(env or {})
        if shim is not None:
            e.update(
                {
                    "LD_PRELOAD": self.lib,
                    "LEAKWATCH_REPORT": os.path.join(self.out, name + ".json"),
                    "LEAKWATCH_LOG": os.path.join(self.out, name + ".leakwatch.log"),
                }
            )
            e.update(shim)
        with open(os.path.join(self.out, name + ".out"), "w") as fo, open(
            os.path.join(self.out, name + ".err"), "w"
        ) as fe:
            try:
                p = subprocess.Popen(argv, stdout=fo, stderr=fe, env=e, cwd=cwd or ROOT, start_new_session=True)
                rc = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.wait()
                rc = 124
            except OSError as ex:
                fe.write(f"{ex}\n")
                rc = 127
        with open(os.path.join(self.out, name + ".out")) as f:
            return rc, f.read()

    def last_json(self, text):
        for line in reversed(text.strip().splitlines()):
            try:
                return json.loads(line)
            except ValueError:
                continue
        return {}

    def report(self, name):
        try:
            with open(os.path.join(self.out, name + ".json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def standin_lacks(self, name):
        with open(os.path.join(self.out, name + ".err")) as f:
            err = f.read()
        return re.search(r"No module named|cannot import name '\w+' from 'torch|AttributeError: module 'torch[.\w]*' has no attribute", err)

    def status_of(self, rc, problems=()):
        if rc is None:
            return "skip", "budget spent"
        if rc == 124:
            return "FAIL", "timed out"
        if rc == 3:
            return "skip", "the stand-in torch lacks an API this part needs"
        if rc != 0:
            return "FAIL", f"exit {rc}"
        if problems:
            return "FAIL", "; ".join(problems)
        return "ok", ""

    # ---- parts ----
    def preflight(self):
        missing = []
        for path in (self.lib, self.cmd):
            if not os.path.exists(path):
                missing.append(path)
        if missing:
            print(
                f"missing: {', '.join(missing)}: build first (`make all` where the build "
                "dependencies are installed) and carry build/ with the working tree",
                flush=True,
            )
            return False
        ldd = subprocess.run(["ldd", self.lib], capture_output=True, text=True)
        notfound = re.findall(r"^\s*(\S+) => not found", ldd.stdout, re.M)
        with open(os.path.join(self.out, "ldd.txt"), "w") as f:
            f.write(ldd.stdout + ldd.stderr)
        if notfound:
            print(f"missing: {' '.join(notfound)} (needed by {self.lib}; see ldd.txt)", flush=True)
            return False
        self.results["library_needs"] = [l.split()[0] for l in ldd.stdout.splitlines() if l.strip()]
        code = ("import sys, torch; c = getattr(torch, 'cuda', None); "
                "print(sys.version.split()[0], getattr(torch, '__version__', '?'), "
                "getattr(getattr(torch, 'version', None), 'cuda', None), "
                "bool(c and c.is_available()))")
        probe = subprocess.run([self.py, "-c", code], capture_output=True, text=True, env=self.env, timeout=120)
        self.results["python_torch"] = probe.stdout.strip() or probe.stderr.strip()[-300:]
        if probe.returncode != 0 or not probe.stdout.strip().endswith("True"):
            if self.dry and probe.returncode == 0:
                # The parts this stand-in cannot run say so one by one.
                self.note("preflight", "python torch cuda available", "skip", "the stand-in torch has no torch.cuda")
                return True
            print(f"missing: a PyTorch with a usable CUDA device for {self.py}: "
                  f"{self.results['python_torch']}", flush=True)
            return False
        self.note("preflight", "python torch cuda available", "ok", self.results["python_torch"])
        return True

    def doctor(self):
        helptext = subprocess.run([self.cmd, "help"], capture_output=True, text=True, env=self.env)
        dh = subprocess.run([self.cmd, "help", "doctor"], capture_output=True, text=True, env=self.env)
        self.doctor_help = dh.stdout + dh.stderr
        if not re.search(r"^\s*doctor\b", helptext.stdout + helptext.stderr, re.M):
            self.note("doctor", "leakwatch doctor", "skip", "this leakwatch has no doctor command")
            return
        # The machine's own driver, runtime and PyTorch under the shim: every
        # allocation path seen with its exact bytes. A failure is reported; the
        # other parts still run (their results then mean less).
        argv = [self.cmd, "doctor", "--python", self.py]
        if self.dry:
            argv.append("--cuda-stand-ins") if "--cuda-stand-ins" in self.doctor_help else None
        argv += ["--library", self.lib]
        rc, out = self.run("doctor", argv, 120)
        st, detail = self.status_of(rc)
        missing = [l.strip() for l in out.splitlines() if l.strip().startswith(("MISSING", "FAIL"))]
        if self.dry and rc == 1 and missing and all("PyTorch" in l for l in missing):
            # The stand-in torch is not PyTorch: the doctor says so, rightly.
            st, detail = "ok", "every CUDA path seen; PyTorch: the stand-in torch is not PyTorch"
        elif missing:
            detail = "; ".join(missing)[:300]
        self.note("doctor", "leakwatch doctor", st, detail or "see doctor.out")

    def backend(self):
        configs = [
            ("none", {}),
            ("alloc_conf", {"PYTORCH_ALLOC_CONF": "expandable_segments:True"}),
            (
                "both",
                {
                    "PYTORCH_ALLOC_CONF": "expandable_segments:True",
                    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                },
            ),
        ]
        res = {}
        self.modes()
        default = self.results["torch_modes"].get("default")
        self.note("backend", "default LEAKWATCH_TORCH_MODE", "ok" if default == DEFAULT_MODE else "FAIL",
                  f"{default} (want {DEFAULT_MODE}: PyTorch's allocator untouched)")
        for label, env in configs:
            off = None
            for shim in (None, {}):
                name = f"backend.{label}.{'shim' if shim is not None else 'off'}"
                rc, out = self.run(name, [self.py, os.path.join(HERE, "probe.py"), "backend"], 90, env=env, shim=shim)
                j = self.last_json(out)
                res[name] = j
                problems = []
                if shim is None:
                    off = j if rc == 0 else None
                elif rc == 0:
                    # Default settings: nothing in the job's allocator
                    # configuration changes.
                    for k in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
                        if j.get(k) != env.get(k):
                            problems.append(f"{k}={j.get(k)!r} under the shim (set: {env.get(k)!r})")
                    if off is not None and j.get("backend") != off.get("backend"):
                        problems.append(f"backend {j.get('backend')} under the shim, {off.get('backend')} without")
                st, detail = self.status_of(rc, problems)
                self.note("backend", name, st, j.get("backend", j.get("error", detail)) if st != "FAIL" else detail)
        self.results["parts"]["backend"] = res

    def modes(self):
        """The torch modes this leakwatch offers (`leakwatch help env`)."""
        if not hasattr(self, "_modes"):
            text = subprocess.run([self.cmd, "help", "env"], capture_output=True, text=True, env=self.env).stdout
            m = re.search(r"LEAKWATCH_TORCH_MODE \(default (\w+); one of: ([^)]*)\)", text)
            self._modes = m.group(2).split() if m else ["tensors", "segments"]
            self.results["torch_modes"] = {"default": m.group(1) if m else None, "all": self._modes}
        return self._modes

    def cudart(self):
        """The CUDA runtime train_loop.py loads through ctypes: the stand-in in
        a dry run, else the one PyTorch's wheels carry."""
        if self.dry:
            return self.env["LW_CUDART"]
        code = ("import glob, os, site, sys; dirs = site.getsitepackages() + [site.getusersitepackages()]; "
                "libs = [p for d in dirs for p in sorted(glob.glob(os.path.join(d, 'nvidia', '*', 'lib', 'libcudart.so*')))]; "
                "print(libs[0] if libs else '')")
        r = subprocess.run([self.py, "-c", code], capture_output=True, text=True, env=self.env, timeout=60)
        return r.stdout.strip() or None

    def train_loop(self):
        """examples/train_loop.py (the CUDA runtime through ctypes, no torch)."""
        lib = self.cudart()
        if not lib:
            self.note("examples", "train_loop", "skip", "no libcudart.so found for ctypes")
            return
        env = {"LEAKWATCH_CUDART": lib,
               "PYTHONPATH": os.pathsep.join(filter(None, [os.path.join(ROOT, "python"), self.env.get("PYTHONPATH")]))}
        for variant in ("leak", "fixed"):
            for mode in self.modes():
                name = f"train_loop.{variant}.{mode}"
                argv = [self.py, os.path.join(ROOT, "examples", "train_loop.py")] + (["--fixed"] if variant == "fixed" else [])
                rc, _ = self.run(name, argv, 90, env=env, shim={"LEAKWATCH_TORCH_MODE": mode})
                problems = []
                rep = self.report(name) if rc == 0 else None
                verdict = rep.get("verdict") if rep else None
                want = "leak" if variant == "leak" else "no_leak"
                if rc == 0 and verdict != want:
                    problems.append(f"verdict {verdict} (want {want})")
                st, detail = self.status_of(rc, problems)
                self.note("examples", name, st, detail or f"verdict {verdict}")

    def examples(self):
        steps = self.args.steps
        modes = self.modes()
        res, times = [], {}
        self.train_loop()
        for ex in EXAMPLES:
            script = os.path.join(ROOT, "examples", ex + ".py")
            runs = [(v, m) for m in modes for v in ("leak", "fixed")] + [("fixed", "off"), ("fixed", "off-async")]
            for variant, mode in runs:
                name = f"{ex}.{variant}.{mode}"
                argv = [self.py, script, "--steps", str(steps)] + (["--fixed"] if variant == "fixed" else [])
                env, shim = {}, None
                if mode == "off-async":
                    env["PYTORCH_ALLOC_CONF"] = "backend:cudaMallocAsync"
                elif mode == DEFAULT_MODE:
                    shim = {}  # the default settings: no LEAKWATCH_* variable
                elif mode != "off":
                    shim = {"LEAKWATCH_TORCH_MODE": mode}
                rc, out = self.run(name, argv, 120, env=env, shim=shim, cwd=os.path.join(ROOT, "examples"))
                fields = dict(w.split("=", 1) for w in out.split() if "=" in w)
                problems, notes, verdict = [], [], "-"
                if shim is not None and rc == 0:
                    rep = self.report(name)
                    if rep is None:
                        problems.append("no report")
                    else:
                        verdict = rep.get("verdict")
                        want = EXPECT.get((ex, variant, mode), {"no_leak"})
                        g = rep.get("growth", {})
                        bad = []
                        if mode in ("tensors", "segments") and verdict not in want:
                            bad.append(f"verdict {verdict} (want {'|'.join(sorted(want))})")
                        if g.get("steps") != steps or g.get("step_source") != "marker":
                            bad.append(f"steps {g.get('steps')} from {g.get('step_source')} (want {steps} from marker)")
                        site = (rep.get("sites") or [{}])[0]
                        # The place to look leakwatch names (sites[].where):
                        # the example's own line, not torch's.
                        place = (site.get("where") or {}).get("label") or "(none)"
                        notes.append(f"place to look {place}")
                        if variant == "leak" and verdict == "leak" and mode == "tensors":
                            if not place.startswith("torch_"):
                                bad.append(f"the place to look is {place}, not a line of the example")
                            line_no = leak_line(script)
                            mine = [f for f in site.get("frames", []) if f.get("kind") == "python" and f.get("file")
                                    and os.path.realpath(f["file"]) == os.path.realpath(script)]
                            if not any(f.get("line") == line_no for f in mine):
                                bad.append(f"leak-line {line_no} not in the leaking site's stack")
                        if mode == DEFAULT_MODE:
                            hard = []
                            if fields.get("backend") not in (None, "native"):
                                hard.append(f"backend {fields.get('backend')} (want native: allocator untouched)")
                            if g.get("signal") != "torch_allocated":
                                bad.append(f"signal {g.get('signal')} (want torch_allocated)")
                            if variant == "leak" and verdict == "leak":
                                line_no = leak_line(script)
                                look = site.get("place_to_look") or {}
                                notes.append(f"first site {site.get('source')} at {look.get('file')}:{look.get('line')}")
                                if site.get("source") != "pytorch_history" or look.get("line") != line_no or \
                                        os.path.basename(look.get("file") or "") != os.path.basename(script):
                                    bad.append(f"first site {site.get('source')} at {look} "
                                               f"(want pytorch_history at leak-line {line_no})")
                            problems.extend(hard)
                        # The stand-in torch does not allocate like PyTorch:
                        # a dry run shows these, it does not fail on them.
                        (notes if self.dry else problems).extend(bad)
                st, detail = self.status_of(rc, problems)
                if st == "FAIL" and self.dry and rc == 1 and self.standin_lacks(name):
                    st, detail = "skip", "the stand-in torch lacks an API the example uses"
                if variant == "fixed":
                    try:
                        times[(ex, mode)] = float(fields.get("step_ms", "nan"))
                    except ValueError:
                        pass
                detail = "; ".join(filter(None, [detail, f"verdict {verdict}" if verdict != "-" else "",
                                                 f"backend {fields.get('backend', '?')}", f"{fields.get('step_ms', '?')} ms/step"] + notes))
                self.note("examples", name, st, detail)
                res.append({"name": name, "rc": rc, "status": st, "verdict": verdict, "fields": fields})
        overhead = {}
        for ex in EXAMPLES:
            base, base_async = times.get((ex, "off")), times.get((ex, "off-async"))
            o = {}
            for m in modes:
                t = times.get((ex, m))
                ref = base_async if m == "tensors" else base
                if t and ref and t == t and ref == ref:
                    o[m] = round(t / ref, 3)
            o.update({"off_ms": base, "off_async_ms": base_async})
            o.update({f"{m}_ms": times.get((ex, m)) for m in modes})
            overhead[ex] = o
        self.results["parts"]["examples"] = res
        self.results["overhead"] = overhead

    def features(self):
        """What the cudaMallocAsync backend refuses, used as a job would: must
        work under the default settings (PyTorch's allocator untouched, the
        diagnosis window opening while the feature is in use)."""
        script = os.path.join(ROOT, "tests", "python", "torch_features.py")
        res = {}
        for feature in FEATURES:
            for mode in (DEFAULT_MODE, "tensors"):
                if mode not in self.modes():
                    continue
                name = f"features.{feature}.{mode}"
                shim = {} if mode == DEFAULT_MODE else {"LEAKWATCH_TORCH_MODE": mode}
                rc, out = self.run(name, [self.py, script, feature], 180, shim=shim)
                worked = rc == 0 and f"{feature} ok" in out
                lines = out.strip().splitlines()
                rep = self.report(name)
                verdict = rep.get("verdict") if rep else None
                site = ((rep or {}).get("sites") or [{}])[0]
                res[name] = {"rc": rc, "worked": worked, "verdict": verdict, "last": lines[-1] if lines else "",
                             "first_site": site.get("source"), "place_to_look": site.get("place_to_look")}
                if rc is None or rc == 124:
                    st, detail = self.status_of(rc)
                elif mode == DEFAULT_MODE:
                    problems = [] if worked else [(lines or [f"exit {rc}"])[-1][:200]]
                    if worked and rep is None:
                        problems.append("no report")
                    st, detail = self.status_of(0, problems)
                    if st == "FAIL" and self.dry and self.standin_lacks(name):
                        st, detail = "skip", "the stand-in torch lacks an API this feature uses"
                    detail = detail or f"worked; verdict {verdict}; first site {site.get('source')}"
                else:
                    # PyTorch's refusal under cudaMallocAsync is what tensors
                    # mode documents; a newer PyTorch may accept it.
                    st = "ok"
                    detail = "worked under cudaMallocAsync" if worked else \
                        f"refused as documented: {(lines or ['exit ' + str(rc)])[-1][:160]}"
                self.note("features", name, st, detail)
        self.results["parts"]["features"] = res

    def compare(self):
        res = {}
        for mode in self.modes():
            name = f"compare.{mode}"
            rc, out = self.run(
                name, [self.py, os.path.join(HERE, "probe.py"), "compare", "20"], 120,
                shim={"LEAKWATCH_TORCH_MODE": mode, "LEAKWATCH_SOURCE_LINES": "0", "LEAKWATCH_REPORT_EVERY": "0"},
            )
            j = self.last_json(out)
            res[name] = j
            problems = []
            rows = j.get("rows") or []
            if rc == 0 and rows:
                lw = [r["leakwatch"] for r in rows]
                if any(x is None for x in lw):
                    problems.append("leakwatch's live bytes unreadable (no leakwatch_dump?)")
                else:
                    dev = [x.get("device", 0) + x.get("physical", 0) for x in lw]
                    grew = dev[-1] - dev[0]
                    truth = rows[-1]["allocated"] - rows[0]["allocated"]
                    if mode == "tensors" and not self.dry and grew != truth:
                        problems.append(f"leakwatch grew {grew} B, memory_allocated {truth} B")
            st, detail = self.status_of(rc, problems)
            self.note("compare", name, st, detail or j.get("error", f"{len(rows)} steps, table in summary.md"))
        self.results["parts"]["compare"] = res

    def probe_part(self, part, arg, timeout):
        name = f"{part}"
        env = {"LW_GPU_PART_OUT": os.path.join(self.out, part + ".data.json")}
        rc, out = self.run(name, [self.py, os.path.join(HERE, "probe.py"), part, str(arg)], timeout, env=env, shim={})
        j = self.last_json(out)
        problems = []
        rep = self.report(name)
        if rc == 0 and rep is None:
            problems.append("no report")
        if rep:
            j["report_verdict"] = rep.get("verdict")
            j["report_unknown_frees"] = rep.get("totals", {}).get("unknown_free_count")
        st, detail = self.status_of(rc, problems)
        self.results["parts"][part] = j
        brief = {k: j[k] for k in ("error", "replay_ms", "trace_events", "segments", "report_verdict",
                                   "report_unknown_frees", "problems", "own_handle_open_result") if k in j}
        self.note(part, f"{part} ({arg})" if arg else part, st, detail or json.dumps(brief))

    # ---- summary ----
    def summary(self, elapsed):
        lines = [
            "# leakwatch GPU check" + (" (dry run: CPU stand-ins, stand-in torch)" if self.dry else ""),
            "",
            f"- when: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; total {elapsed:.0f} s",
            f"- python / torch / cuda / available: {self.results.get('python_torch', '?')}",
            "",
            "| part | run | status | detail |",
            "| --- | --- | --- | --- |",
        ]
        for part, name, st, detail in self.rows:
            lines.append(f"| {part} | {name} | {st} | {detail.replace('|', '/')} |")
        ov = self.results.get("overhead")
        if ov:
            lines += ["", "## Time per step (fixed examples; ratio to the same run without the shim)", "",
                      "| example | off ms | off (cudaMallocAsync) ms | mode: ratio |", "| --- | --- | --- | --- |"]
            for ex, o in ov.items():
                if all(v is None or v != v for k, v in o.items() if k.endswith("_ms")):
                    continue  # no timed run (a dry run's stand-in torch)
                ratios = ", ".join(f"{m}: {o[m]}x" for m in self.modes() if m in o)
                lines.append(f"| {ex} | {o.get('off_ms')} | {o.get('off_async_ms')} | {ratios or '-'} |")
        cmp_ = self.results["parts"].get("compare", {})
        for name, j in cmp_.items():
            rows = j.get("rows") or []
            if not rows:
                continue
            lines += ["", f"## {name}: live bytes per step ({j.get('backend')})", "",
                      "| step | memory_allocated | memory_reserved | driver used | leakwatch device | leakwatch physical | mapped |",
                      "| --- | --- | --- | --- | --- | --- | --- |"]
            for r in rows:
                lw = r.get("leakwatch") or {}
                lines.append(f"| {r['step']} | {r['allocated']} | {r['reserved']} | {r['driver_used']} | "
                             f"{lw.get('device', '-')} | {lw.get('physical', '-')} | {lw.get('mapped', '-')} |")
        with open(os.path.join(self.out, "summary.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(self.out, "results.json"), "w") as f:
            json.dump({"rows": self.rows, **self.results}, f, indent=1, default=str)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dry-run", action="store_true", help="CPU stand-ins and a stand-in torch (no GPU)")
    p.add_argument("--out", default=os.environ.get("OUT"), help="results folder (default $OUT)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build to use (default build/)")
    p.add_argument("--python", default=os.environ.get("PYTHON", "python3"))
    p.add_argument("--budget", type=float, default=480, help="seconds for everything (default 480)")
    p.add_argument("--steps", type=int, default=None, help="optimizer steps per example (default 300; dry 100)")
    p.add_argument("--torch-path", default=os.path.join(ROOT, "tests", "python", "faketorch"),
                   help="dry run: the folder holding the stand-in torch package")
    p.add_argument("--parts", default="doctor,backend,examples,features,ipc,snapshot,compile,compare,graph")
    a = p.parse_args()
    a.build = os.path.realpath(a.build)
    if a.steps is None:
        a.steps = 100 if a.dry_run else 300
    if not a.out:
        a.out = tempfile.mkdtemp(prefix="leakwatch-gpu.")
    # Absolute: the examples run in examples/, and each run's report goes here.
    a.out = os.path.realpath(a.out)
    os.makedirs(a.out, exist_ok=True)
    if not shutil.which(a.python):
        print(f"missing: the Python interpreter {a.python} (set PYTHON=...)")
        return 2
    c = Check(a)
    print(f"leakwatch GPU check{' (dry run)' if a.dry_run else ''}: results in {a.out}", flush=True)
    if not c.preflight():
        c.summary(time.monotonic() - c.t0)
        return 2
    parts = a.parts.split(",")
    for part in parts:
        if part == "doctor":
            c.doctor()
        elif part == "backend":
            c.backend()
        elif part == "examples":
            c.examples()
        elif part == "features":
            c.features()
        elif part == "compare":
            c.compare()
        elif part == "graph":
            c.probe_part("graph", 300, 150)
        elif part == "snapshot":
            c.probe_part("snapshot", 0, 120)
        elif part == "compile":
            c.probe_part("compile", 5, 240)
        elif part == "ipc":
            c.probe_part("ipc", 64, 60)
    elapsed = time.monotonic() - c.t0
    c.summary(elapsed)
    failed = [r for r in c.rows if r[2] == "FAIL"]
    print(f"total {elapsed:.0f} s; {len(failed)} failed; summary: {os.path.join(a.out, 'summary.md')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
