# SPDX-License-Identifier: Apache-2.0
"""The real-clients tier (make check-real): real PyTorch, numba and PyCUDA
from Debian trixie, run under build/leakwatch on leakwatch's CPU stand-ins
(`leakwatch run --cuda-stand-ins`), inside the root that
scripts/setup-real-clients.sh unpacks (entered by scripts/in-real-root.sh).

Each test runs a job as a user would and reads what leakwatch said: the
exit summary on stderr and the report file."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LEAKWATCH = REPO / "build" / "leakwatch"
HERE = Path(__file__).resolve().parent
SEED = REPO / "tests" / "python" / "torch_seed.py"


class Run:
    def __init__(self, proc, report_path):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.report = None
        if report_path.exists():
            with open(report_path) as f:
                self.report = json.load(f)

    @property
    def verdict(self):
        return self.report["verdict"] if self.report else None

    def answer(self):
        """The place the report's answer names, as (file's base name, line)."""
        where = ((self.report or {}).get("answer") or {}).get("where") or {}
        return os.path.basename(where.get("file") or "?"), where.get("line")

    def exit_line(self):
        """The exit summary's verdict line (the live warning ends with
        "[as of step N]")."""
        lines = [l for l in self.err.splitlines()
                 if l.startswith(("leakwatch: LEAK", "leakwatch: no leak", "leakwatch: inconclusive"))
                 and "[as of " not in l]
        return lines[-1] if lines else ""

    def lead(self):
        """The site the report ranks first among the leaking ones."""
        sites = [s for s in (self.report or {}).get("sites", []) if s.get("leak")]
        return sites[0] if sites else None

    def __str__(self):
        growth = (self.report or {}).get("growth", {})
        return (f"rc={self.rc} verdict={self.verdict} reason={growth.get('reason')!r}\n"
                f"--- stderr ---\n{self.err[-6000:]}\n--- stdout ---\n{self.out[-2000:]}")

    __repr__ = __str__


def marker_line(path, marker):
    """The line number of the line of PATH that carries MARKER."""
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if marker in line:
            return n
    raise AssertionError(f"{marker} not in {path}")


def pytest_collection_modifyitems(config, items):
    """LW_REAL_SHARD=I/N (scripts/check-real.sh): keep the I-th of N
    interleaved shares of the tests (1-based), so that N pytest processes
    run the tier at once, each test in exactly one of them."""
    shard = os.environ.get("LW_REAL_SHARD")
    if not shard:
        return
    i, n = (int(x) for x in shard.split("/"))
    if not 1 <= i <= n:
        raise pytest.UsageError(f"LW_REAL_SHARD={shard}: not I/N with 1 <= I <= N")
    keep = [t for k, t in enumerate(items) if k % n == i - 1]
    config.hook.pytest_deselected(items=[t for t in items if t not in keep])
    items[:] = keep


@pytest.fixture
def lw(tmp_path):
    """lw(script, *args, env=..., options=[...]) runs `leakwatch run
    --cuda-stand-ins -r REPORT OPTIONS -- python3 SCRIPT ARGS` and returns a
    Run."""

    def run(script, *args, env=None, options=(), timeout=900, how="run", libs=None):
        """how: run (leakwatch run), preload (LD_PRELOAD of the library, as
        without the command) or bare (no leakwatch). libs: the stand-in
        folders to put on LD_LIBRARY_PATH instead of --cuda-stand-ins."""
        report = tmp_path / "report.json"
        if report.exists():
            report.unlink()
        e = dict(os.environ)
        e.update({"LEAKWATCH_QUIET": "0", "PYTHONDONTWRITEBYTECODE": "1"})
        if libs is not None or how != "run":
            e["LD_LIBRARY_PATH"] = ":".join(str(p) for p in (libs or [stand_ins()]))
        e.update(env or {})
        py = [sys.executable, str(script), *map(str, args)]
        if how == "bare":
            cmd = py
        elif how == "preload":
            e.update({"LD_PRELOAD": str(REPO / "build" / "libleakwatch.so"),
                      "PYTHONPATH": str(REPO / "python"), "LEAKWATCH_REPORT": str(report)})
            cmd = py
        else:
            cmd = [str(LEAKWATCH), "run", "-r", str(report), *options, "--", *py]
            if libs is None:
                cmd.insert(2, "--cuda-stand-ins")
        proc = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout,
                              cwd=tmp_path)
        return Run(proc, report)

    return run


def stand_ins():
    return REPO / "build" / "tests" / "lib"


def summary_rate(text):
    """Bytes per step in a LEAK line of the summary (B/KiB/MiB/GiB)."""
    m = re.search(r"LEAK\b.*?: \+([\d.,]+) (B|KiB|MiB|GiB)/step", text)
    if not m:
        return None
    scale = {"B": 1, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]
    return float(m.group(1).replace(",", "")) * scale
