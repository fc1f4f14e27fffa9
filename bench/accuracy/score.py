#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Accuracy benchmark of leakwatch's leak detector.

Runs every workload of bench/accuracy/corpus.txt (build/tests/programs/rt_workload)
under the shim on the CPU stand-ins, reads each report, and prints a per-workload
table, a confusion matrix (truth x verdict) and one summary line:

  accuracy: N workloads, FP x, FN y, inconclusive z, max rate error p%, median steps-to-verdict s

A benchmark, not a test: it never fails on the numbers. It fails (exit 1) when a
workload crashes, writes no report or an unreadable one, or does not build the
floor it means to (rt_workload's floor_mismatch), and (exit 2) on a bad corpus.
Python 3 standard library only.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VERDICTS = ("leak", "no_leak", "inconclusive")


class CorpusError(Exception):
    pass


def parse_corpus(path):
    items = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = [x.strip() for x in line.split("|")]
            if len(fields) != 7:
                raise CorpusError("%s:%d: expected 7 fields separated by '|', got %d"
                                  % (path, lineno, len(fields)))
            name, truth, rate, onset, by, args, env = fields
            if truth not in ("leak", "no_leak"):
                raise CorpusError("%s:%d: truth must be leak or no_leak" % (path, lineno))
            try:
                rate = float(rate)
                onset = None if onset == "-" else int(onset)
            except ValueError:
                raise CorpusError("%s:%d: bad rate or onset" % (path, lineno))
            m = re.fullmatch(r"(\d+)(i?)|-", by)
            if not m:
                raise CorpusError("%s:%d: bad goal '%s'" % (path, lineno, by))
            by = None if by == "-" else (int(m.group(1)), m.group(2) == "i")
            if truth == "leak" and (rate <= 0 or onset is None):
                raise CorpusError("%s:%d: a leak needs a rate and an onset" % (path, lineno))
            envd = {}
            if env != "-":
                for kv in shlex.split(env):
                    if "=" not in kv:
                        raise CorpusError("%s:%d: bad env '%s'" % (path, lineno, kv))
                    k, v = kv.split("=", 1)
                    envd[k] = v
            if any(it["name"] == name for it in items):
                raise CorpusError("%s:%d: duplicate name %s" % (path, lineno, name))
            items.append(dict(name=name, truth=truth, rate=rate, onset=onset, by=by,
                              args=shlex.split(args), env=envd, line=lineno))
    return items


def workload_summary(stdout):
    for line in stdout.splitlines():
        if line.startswith("rt_workload: "):
            out = {}
            for tok in line.split()[1:]:
                k, _, v = tok.partition("=")
                try:
                    out[k] = float(v) if "." in v else int(v)
                except ValueError:
                    out[k] = v
            return out
    return None


def get(d, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def site_label(site):
    """The innermost named function of a site's frames (rt_workload's *_site)."""
    names = [f.get("function") for f in site.get("frames", []) if f.get("function")]
    for n in names:
        if n.endswith("_site"):
            return n
    return names[0] if names else "site %s" % site.get("id")


def run_one(it, build, keep, timeout):
    exe = os.path.join(build, "tests", "programs", "rt_workload")
    d = tempfile.mkdtemp(prefix="lwacc.%s." % it["name"].replace("#", "_"))
    report = os.path.join(d, "report.json")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_") and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    env.update({
        "LD_PRELOAD": os.path.join(build, "libleakwatch.so"),
        "LD_LIBRARY_PATH": os.path.join(build, "tests", "lib"),
        "LEAKWATCH_REPORT": report,
        "LEAKWATCH_QUIET": "1",
    })
    env.update(it["env"])
    res = dict(it, errors=[], dir=d)
    t0 = time.monotonic()
    try:
        p = subprocess.run([exe] + it["args"], cwd=d, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout, universal_newlines=True)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", e.stdout or "", e.stderr or ""
        if isinstance(out, bytes):
            out, err = out.decode(errors="replace"), (err or b"").decode(errors="replace")
    res["wall"] = time.monotonic() - t0
    res["stderr"] = err
    if rc != 0:
        why = ("killed by signal %d" % -rc) if isinstance(rc, int) and rc < 0 else (
            "timed out after %d s" % timeout if rc == "timeout" else "exit status %s" % rc)
        res["errors"].append("workload %s" % why)
    res["wl"] = workload_summary(out)
    if res["wl"] is None:
        res["errors"].append("no summary line from rt_workload")
    elif res["wl"].get("floor_mismatch", 0):
        res["errors"].append("rt_workload did not make the floor it meant to (floor_mismatch=%s)"
                             % res["wl"]["floor_mismatch"])
    elif res["wl"].get("shim") != 1:
        res["errors"].append("rt_workload ran without the shim (leakwatch_step not found)")
    res["report"] = None
    if not os.path.exists(report):
        res["errors"].append("no report written")
    else:
        try:
            with open(report, encoding="utf-8") as f:
                res["report"] = json.load(f)
        except (OSError, ValueError) as e:
            res["errors"].append("report does not parse: %s" % e)
    if keep:
        os.makedirs(keep, exist_ok=True)
        if os.path.exists(report):
            shutil.copy(report, os.path.join(keep, it["name"] + ".json"))
        with open(os.path.join(keep, it["name"] + ".log"), "w", encoding="utf-8") as f:
            f.write("$ %s %s\n%s\n--- stderr ---\n%s" % (
                " ".join("%s=%s" % kv for kv in it["env"].items()), " ".join([exe] + it["args"]),
                out, err))
    shutil.rmtree(d, ignore_errors=True)
    if not res["errors"]:
        analyse(res)
    return res


def analyse(res):
    rep, wl = res["report"], res["wl"]
    g = rep.get("growth") or {}
    verdict = rep.get("verdict")
    res["verdict"] = verdict if verdict in VERDICTS else str(verdict)
    steps = wl.get("steps") or 1
    rsteps = g.get("steps")
    marked = g.get("step_source", "marker" if wl.get("marked") else "time") == "marker"
    # Report units -> workload steps. Marked: the same. Time-based: one point
    # per interval; workload steps per interval from the measured step time.
    step_s = (wl.get("wall_s") or 0) / steps
    if marked:
        scale = 1.0
        if rsteps is not None and abs(rsteps - steps) > 1:
            res.setdefault("notes", []).append("report counts %s steps, workload %s"
                                               % (rsteps, steps))
    elif g.get("interval_seconds") and step_s > 0:
        scale = g["interval_seconds"] / step_s
    elif rsteps:
        scale = steps / rsteps
    else:
        scale = None
    res["scale"] = scale

    # Rates: report units -> bytes per workload step (factor k).
    raw = g.get("bytes_per_step")
    k = None
    if marked:
        k = 1.0
    elif raw and g.get("bytes_per_second") is not None and step_s > 0:
        k = g["bytes_per_second"] * step_s / raw
    elif scale:
        k = 1.0 / scale
    res["rate_est"] = raw * k if raw is not None and k is not None else None
    ci = g.get("slope_ci")
    # (Unmarked: the interval-to-step conversion is itself approximate, so a
    # check of the truth against the interval would mean little.)
    if (marked and isinstance(ci, list) and len(ci) == 2
            and all(isinstance(c, (int, float)) for c in ci)):
        ci = [c * k for c in ci]
    else:
        ci = None
    res["ci"] = ci

    def to_steps(x):
        return None if x is None or scale is None else x * scale

    res["onset_est"] = to_steps(g.get("onset_step"))
    fls = g.get("first_leak_step")
    res["first_leak"] = to_steps(fls) if isinstance(fls, (int, float)) and fls >= 0 else None

    if res["truth"] == "leak":
        bps = res["rate_est"]
        res["rate_err"] = (100.0 * (bps - res["rate"]) / res["rate"]) if bps is not None else None
        res["in_ci"] = (ci[0] <= res["rate"] <= ci[1]) if ci else None
        res["ttv"], res["ttv_bound"], res["early"] = None, False, None
        first = res["first_leak"]
        if first is not None and first < res["onset"]:
            # Announced before the leak began: something else (a warm-up) was
            # flagged; when the real leak was called is not in the report.
            res["early"] = first
        elif res["verdict"] == "leak":
            # Steps from onset to verdict; without first_leak_step, the run's end
            # is the only bound known.
            res["ttv_bound"] = first is None
            res["ttv"] = (first if first is not None else steps) - res["onset"]
        if res["by"]:
            n, intervals = res["by"]
            res["goal"] = n * scale if intervals and scale else n
        else:
            res["goal"] = None
        # The workload's own account of the truth.
        if wl.get("leaked_bytes") is not None and steps > res["onset"]:
            real = wl["leaked_bytes"] / (steps - res["onset"])
            if abs(real - res["rate"]) > 0.02 * res["rate"]:
                res.setdefault("notes", []).append(
                    "corpus rate %g B/step, workload leaked %.1f B/step" % (res["rate"], real))
    else:
        res["rate_err"] = res["in_ci"] = res["ttv"] = res["goal"] = res["early"] = None
        res["ttv_bound"] = False
        if wl.get("leaked_bytes"):
            res.setdefault("notes", []).append("no_leak workload leaked %s bytes"
                                               % wl["leaked_bytes"])

    flagged = [s for s in rep.get("sites", []) if s.get("leak")]
    res["sites"] = [site_label(s) for s in flagged]
    # The leak site's own rate (per-site growth), when the report gives one.
    for s in rep.get("sites", []):
        if site_label(s) == "leak_site" and isinstance(s.get("bytes_per_step"), (int, float)):
            if res["truth"] == "leak" and k is not None and s.get("leak"):
                site_rate = s["bytes_per_step"] * k
                if abs(site_rate - res["rate"]) > 0.1 * res["rate"]:
                    res.setdefault("notes", []).append(
                        "leak_site's own rate %s B/step (%+.0f%%)"
                        % (fmt_bytes(site_rate), 100.0 * (site_rate - res["rate"]) / res["rate"]))
            break
    if res["truth"] == "leak":
        res["site_ok"] = "leak_site" in res["sites"] and len(set(res["sites"])) == 1
    else:
        res["site_ok"] = not flagged
    res["reason"] = g.get("reason", "")


def fmt_bytes(x):
    if x is None:
        return "-"
    a = abs(x)
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if a >= div:
            return "%.4g%s" % (x / div, unit)
    return "%.4g" % x


def fmt(x, spec="%.0f"):
    return "-" if x is None else spec % x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="build folder (default: build)")
    ap.add_argument("--corpus", default=os.path.join(HERE, "corpus.txt"))
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", help="run the workloads whose name matches this regular expression")
    ap.add_argument("--keep", metavar="DIR", help="keep each report and log in DIR")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per workload (300)")
    ap.add_argument("--seeds", type=int, default=1, metavar="N",
                    help="run each workload N times, with --seed 1..N (default 1: the corpus "
                         "as written)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the detector's reasons")
    opt = ap.parse_args()

    build = os.path.abspath(opt.build)
    try:
        items = parse_corpus(opt.corpus)
    except (CorpusError, OSError) as e:
        print("bench-accuracy: %s" % e, file=sys.stderr)
        return 2
    if opt.only:
        items = [it for it in items if re.search(opt.only, it["name"])]
    if opt.seeds > 1:
        items = [dict(it, name="%s#%d" % (it["name"], k), args=it["args"] + ["--seed", str(k)])
                 for it in items for k in range(1, opt.seeds + 1)]
    for need in ("libleakwatch.so", "tests/programs/rt_workload", "tests/lib/libcudart.so"):
        if not os.path.exists(os.path.join(build, need)):
            print("bench-accuracy: %s missing (make all %s/tests/programs/rt_workload)"
                  % (os.path.join(build, need), opt.build), file=sys.stderr)
            return 2

    t0 = time.monotonic()
    print("accuracy benchmark: %d workloads from %s, %d at a time"
          % (len(items), os.path.relpath(opt.corpus), max(1, opt.jobs)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opt.jobs)) as ex:
        results = list(ex.map(lambda it: run_one(it, build, opt.keep, opt.timeout), items))
    total_wall = time.monotonic() - t0

    broken = [r for r in results if r["errors"]]
    ok = [r for r in results if not r["errors"]]

    hdr = ("%-26s %-7s %-12s %9s %9s %7s %5s %7s %8s %6s %-4s %s"
           % ("workload", "truth", "verdict", "rate", "estimate", "err%", "inCI", "onset",
              "to-verd", "goal", "site", "wall"))
    print()
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        if r["errors"]:
            print("%-26s %-7s %-12s  BROKEN: %s" % (r["name"], r["truth"], "-",
                                                   "; ".join(r["errors"])))
            continue
        ttv = "-"
        if r["ttv"] is not None:
            ttv = ("<=%.0f" if r["ttv_bound"] else "%.0f") % r["ttv"]
        elif r["early"] is not None:
            ttv = "pre%.0f" % r["early"]  # announced at that step, before the onset
        elif r["truth"] == "no_leak" and r["first_leak"] is not None:
            ttv = "!%.0f" % r["first_leak"]  # a leak announced at that step, later withdrawn
        late = (r["truth"] == "leak" and r["goal"] is not None and r["ttv"] is not None
                and not r["ttv_bound"] and r["ttv"] > r["goal"])
        site = "ok" if r["site_ok"] else "BAD"
        print("%-26s %-7s %-12s %9s %9s %7s %5s %7s %8s %6s %-4s %.1fs"
              % (r["name"], r["truth"], r["verdict"] + ("" if r["verdict"] == r["truth"] or
                                                         r["verdict"] == "inconclusive" else " X"),
                 fmt_bytes(r["rate"]) if r["truth"] == "leak" else "-",
                 fmt_bytes(r["rate_est"]), fmt(r["rate_err"], "%+.1f"),
                 "-" if r["in_ci"] is None else ("yes" if r["in_ci"] else "no"),
                 fmt(r["onset_est"]), ttv + ("*" if late else ""), fmt(r["goal"]), site,
                 r["wall"]))
        if opt.verbose and r.get("reason"):
            print("%-26s   reason: %s" % ("", r["reason"]))
        if not r["site_ok"]:
            print("%-26s   sites marked leak: %s" % ("", ", ".join(r["sites"]) or "none"))
        for n in r.get("notes", []):
            print("%-26s   note: %s" % ("", n))
    print()
    print("  rate, estimate: bytes per step of the workload (unmarked: converted from the")
    print("  sampler's intervals); to-verd: steps from onset to the leak verdict")
    print("  (growth.first_leak_step; <=N: absent, bounded by the run's end; !N on a no_leak")
    print("  workload: a leak announced at step N, later withdrawn; preN: announced at step N,")
    print("  before the onset, so the time to the real verdict is unknown; * beyond the goal);")
    print("  onset: growth.onset_step, in workload steps;")
    print("  site: the sites marked leak are exactly leak_site (leak) or none (no_leak).")

    # Confusion matrix.
    cols = list(VERDICTS) + sorted({r["verdict"] for r in ok} - set(VERDICTS))
    print()
    print("confusion matrix (rows: truth, columns: verdict)")
    print("%-10s" % "" + "".join("%14s" % c for c in cols + ["broken"]))
    for t in ("leak", "no_leak"):
        row = [sum(1 for r in ok if r["truth"] == t and r["verdict"] == c) for c in cols]
        row.append(sum(1 for r in broken if r["truth"] == t))
        print("%-10s" % t + "".join("%14d" % n for n in row))

    fp = sum(1 for r in ok if r["truth"] == "no_leak" and r["verdict"] == "leak")
    fn = sum(1 for r in ok if r["truth"] == "leak" and r["verdict"] == "no_leak")
    inc = sum(1 for r in ok if r["verdict"] not in ("leak", "no_leak"))
    errs = [abs(r["rate_err"]) for r in ok
            if r["truth"] == "leak" and r["verdict"] == "leak" and r["rate_err"] is not None]
    ttvs = [r["ttv"] for r in ok if r["ttv"] is not None]
    late = [r["name"] for r in ok if r["truth"] == "leak" and r["goal"] is not None
            and r["ttv"] is not None and not r["ttv_bound"] and r["ttv"] > r["goal"]]
    bad_sites = [r["name"] for r in ok if not r["site_ok"]]
    withdrawn = [r["name"] for r in ok if r["truth"] == "no_leak" and r["first_leak"] is not None]
    print()
    print("rate error (detected leaks): %s" % (
        "max %.1f%%, median %.1f%%, over 10%%: %d" % (
            max(errs), statistics.median(errs), sum(1 for e in errs if e > 10))
        if errs else "none measured"))
    print("steps from onset to verdict: %s" % (
        "median %.0f, max %.0f%s" % (statistics.median(ttvs), max(ttvs),
                                    " (some bounded by the run's end: no first_leak_step)"
                                    if any(r["ttv_bound"] for r in ok) else "")
        if ttvs else "no leak verdict"))
    print("beyond the goal: %s" % (", ".join(late) if late else "none"))
    early = ["%s (step %.0f, onset %d)" % (r["name"], r["early"], r["onset"]) for r in ok
             if r["early"] is not None]
    print("leak announced before the onset: %s" % (", ".join(early) if early else "none"))
    oerr = [(abs(r["onset_est"] - r["onset"]), r["name"]) for r in ok
            if r["truth"] == "leak" and r["verdict"] == "leak" and r["onset_est"] is not None]
    print("onset error (detected leaks): %s" % (
        "max %.0f steps (%s), median %.0f" % (max(oerr)[0], max(oerr)[1],
                                               statistics.median(e for e, _ in oerr))
        if oerr else "none measured"))
    print("wrong or missing leak site: %s" % (", ".join(bad_sites) if bad_sites else "none"))
    print("leak announced then withdrawn on no_leak workloads: %s"
          % (", ".join(withdrawn) if withdrawn else "none"))
    print("wall time: %.1f s (workloads %.1f s in all)" % (total_wall,
                                                         sum(r["wall"] for r in results)))
    print()
    print("accuracy: %d workloads, FP %d, FN %d, inconclusive %d, max rate error %s, "
          "median steps-to-verdict %s%s"
          % (len(results), fp, fn, inc, ("%.1f%%" % max(errs)) if errs else "-",
             ("%.0f" % statistics.median(ttvs)) if ttvs else "-",
             (", BROKEN %d" % len(broken)) if broken else ""))

    if broken:
        print(file=sys.stderr)
        for r in broken:
            print("bench-accuracy: %s: %s" % (r["name"], "; ".join(r["errors"])), file=sys.stderr)
            tail = (r.get("stderr") or "").strip().splitlines()[-8:]
            for line in tail:
                print("    %s" % line, file=sys.stderr)
        print("bench-accuracy: FAILED: %d workload(s) broken (rerun with --keep DIR for logs)"
              % len(broken), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
