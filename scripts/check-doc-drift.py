#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# make docs-check: the line numbers and the outputs that README.md,
# CONTRIBUTING.md, examples/README.md and docs/*.md quote are still true.
#
# 1. A cited line of an example, FILE:LINE [in FUNC] (FILE an example:
#    examples/FILE exists; train.py and other invented names are left alone),
#    is a line the example marks with `leak-line` (the line leakwatch names),
#    in FUNC when one is given. In examples/README.md, "line N" in a table row
#    that names an example is that example's leak-line.
# 2. A fenced block right after a comment
#        <!-- docs-check: run CMD -->     (the block quotes CMD's output)
#        <!-- docs-check: shape CMD -->   (the block shows lines of that form)
#    is compared with a real run of CMD (once per command), in a fresh folder
#    where build/ is the build folder and `leakwatch` the one built. Each
#    quoted line that starts "leakwatch:" must appear, in order, among the
#    lines the run printed. Lines are compared by their stable parts: "run"
#    compares the place (file:line in function), the rate and its interval,
#    the verdict words and the words around them; numbers that move from run
#    to run (times, counts, steps, free memory, pids) are not compared.
#    "shape" compares the words only (an invented place and rate are fine).
# 3. A fenced block right after
#        <!-- docs-check: paste -->
#    is pasted, line by line in order, into one fresh shell in a folder that
#    looks like a clone where only make has run (build/ and examples/; no
#    leakwatch on PATH: the block must say how it gets there). No line may
#    print "not found" or "No such file or directory", and a line that ends
#    `echo $?   # N` must print N.
# 4. docs/report-screenshot.png (README's picture of the HTML report) is not
#    older, in git's history, than the renderer that draws the page
#    (tools/render/render_html.c, tools/render/templates/): make screenshot
#    takes it again from a real run. Skipped outside a git checkout.
# 5. README.md has at most 250 lines.
#
# Usage: scripts/check-doc-drift.py [--root DIR] [--build DIR] [--no-run]
# Exit 1 with one line per drift, naming the file and line to fix.
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
ap.add_argument("--build", default=None, help="the build folder (default ROOT/build)")
ap.add_argument("--no-run", action="store_true", help="check cited lines only")
args = ap.parse_args()
root = os.path.abspath(args.root)
build = os.path.abspath(args.build or os.path.join(root, "build"))
docs = ["README.md", "CONTRIBUTING.md", "examples/README.md"] + sorted(
    os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))
problems = []


def bad(doc, lineno, msg):
    problems.append("%s:%d: %s" % (doc, lineno, msg))


# ---- 1. cited lines ----

def example_path(name):
    """examples/NAME for a cited file name or path, or None."""
    base = os.path.basename(name)
    for cand in (os.path.join(root, name), os.path.join(root, "examples", base)):
        if os.path.isfile(cand) and os.path.dirname(os.path.abspath(cand)) == os.path.join(
                root, "examples"):
            return cand
    return None


_lines = {}


def lines_of(path):
    if path not in _lines:
        _lines[path] = open(path, encoding="utf-8").read().split("\n")
    return _lines[path]


def leak_lines(path):
    return [i + 1 for i, l in enumerate(lines_of(path)) if "leak-line" in l]


def enclosing_function(path, n):
    """The function (C or Python) that line n is in, by the nearest
    definition above it."""
    src = lines_of(path)
    for i in range(n - 1, -1, -1):
        l = src[i]
        m = re.match(r"\s*def (\w+)\s*\(", l) if path.endswith(".py") else re.match(
            r"^[A-Za-z_].*?\b(\w+)\s*\([^;]*$", l)
        if m:
            return m.group(1)
    return None


CITE = re.compile(r"(?<![\w/.-])([\w./-]+\.(?:c|h|py)):(\d+)(?: in (\w+))?")
LINE_N = re.compile(r"\bline (\d+)\b")

for doc in docs:
    path = os.path.join(root, doc)
    if not os.path.exists(path):
        continue
    for lineno, text in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        for m in CITE.finditer(text):
            ex = example_path(m.group(1))
            if not ex:
                continue
            n, func = int(m.group(2)), m.group(3)
            rel = os.path.relpath(ex, root)
            marked = leak_lines(ex)
            if n not in marked:
                bad(doc, lineno, "%s cites %s line %d, which is not marked leak-line (marked: %s)"
                    % (m.group(0), rel, n, ", ".join(map(str, marked)) or "none"))
            elif func and enclosing_function(ex, n) != func:
                bad(doc, lineno, "%s: %s line %d is in %s, not %s"
                    % (m.group(0), rel, n, enclosing_function(ex, n), func))
        # A table row naming an example: its "line N" is the example's leak-line.
        if doc == "examples/README.md" and text.startswith("|"):
            cells = text.split("|")
            named = re.findall(r"`([\w.]+\.(?:py|c))`", cells[1] if len(cells) > 1 else "")
            ex = example_path(named[0]) if named else None
            if not ex:
                continue
            marked = leak_lines(ex)
            for m in LINE_N.finditer(text):
                if int(m.group(1)) not in marked:
                    bad(doc, lineno, "%s for %s, whose leak-line is %s"
                        % (m.group(0), named[0], ", ".join(map(str, marked)) or "not marked"))

# ---- 2. quoted outputs ----

DURATION = re.compile(r"\d+(?:\.\d+)? (?:d|h|min|s|ms)\b(?: \d+(?:\.\d+)? (?:d|h|min|s|ms)\b)*")
PLACE = re.compile(r"[\w./-]+\.\w+:\d+ in [\w.<>]+")
RATE = re.compile(r"[+-][\d.,]+ [KMGT]?i?B/(?:step|interval)(?: \(95% CI [^)]*\))?")
NUMBER = re.compile(r"\d[\d,.]*")
PID_CMD = re.compile(r"(watching PID #) \(.*?\)")


def skeleton(line, shape):
    s = line.rstrip()
    if shape:
        s = PLACE.sub("<place>", s)
        s = RATE.sub("<rate>", s)
    s = DURATION.sub("<time>", s)
    s = NUMBER.sub("#", s)
    # The command a PID line names is the run's (a shape may invent one).
    if shape:
        s = PID_CMD.sub(r"\1 (<command>)", s)
    return s


def facts(line):
    """What must not move between runs: the places and rates, in order."""
    return PLACE.findall(line) + RATE.findall(line)


def same(quoted, real, shape):
    if skeleton(quoted, shape) != skeleton(real, shape):
        return False
    return shape or facts(quoted) == facts(real)


_runs = {}


def run(cmd, doc, lineno):
    """CMD's stdout and stderr lines, from a fresh folder where build/ is the
    build folder and leakwatch is on PATH."""
    if cmd in _runs:
        return _runs[cmd]
    if not os.path.exists(os.path.join(build, "leakwatch")):
        bad(doc, lineno, "no %s/leakwatch: build first (make docs-check builds it)" % build)
        _runs[cmd] = None
        return None
    tmp = tempfile.mkdtemp(prefix="leakwatch-docs-check.")
    try:
        os.symlink(build, os.path.join(tmp, "build"))
        env = dict(os.environ)
        env["PATH"] = build + os.pathsep + env.get("PATH", "")
        for k in list(env):
            if k.startswith("LEAKWATCH_"):
                del env[k]
        p = subprocess.run(cmd, shell=True, cwd=tmp, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=300)
        out = p.stdout.decode("utf-8", "replace").split("\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _runs[cmd] = out
    return out


MARK = re.compile(r"^<!-- docs-check: (run|shape) (.+?) -->\s*$")
PASTE = re.compile(r"^<!-- docs-check: paste -->\s*$")
STATUS = re.compile(r"^(.*\becho \$\?)\s+#\s*(\d+)\s*$")


def paste(block, doc):
    """Runs the block's lines as pasted into a fresh shell at a clone's root."""
    if not os.path.exists(os.path.join(build, "leakwatch")):
        bad(doc, block[0][0] if block else 0, "no %s/leakwatch: build first" % build)
        return
    tmp = tempfile.mkdtemp(prefix="leakwatch-docs-paste.")
    try:
        os.symlink(build, os.path.join(tmp, "build"))
        os.symlink(os.path.join(root, "examples"), os.path.join(tmp, "examples"))
        script, expect = [], {}
        for ln, line in block:
            m = STATUS.match(line)
            if m:
                line = m.group(1)[:-len("echo $?")] + 'echo "docs-check-status %d $?"' % ln
                expect[ln] = m.group(2)
            script.append(line)
        env = dict((k, v) for k, v in os.environ.items() if not k.startswith("LEAKWATCH_"))
        env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                      if not os.path.exists(os.path.join(d, "leakwatch")))
        p = subprocess.run(["sh", "-c", "\n".join(script)], cwd=tmp, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        out = p.stdout.decode("utf-8", "replace").split("\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for o in out:
        if re.search(r": not found|No such file or directory|command not found", o):
            bad(doc, block[0][0], "a pasted command fails: %s" % o)
    seen = {}
    for o in out:
        m = re.match(r"docs-check-status (\d+) (\d+)$", o)
        if m:
            seen[int(m.group(1))] = m.group(2)
    for ln, want in expect.items():
        if seen.get(ln) != want:
            bad(doc, ln, "pasted, this line's status is %s, the doc says %s"
                % (seen.get(ln, "(not printed)"), want))

if not args.no_run:
    for doc in docs:
        path = os.path.join(root, doc)
        if not os.path.exists(path):
            continue
        text = open(path, encoding="utf-8").read().split("\n")
        i = 0
        while i < len(text):
            m = MARK.match(text[i])
            pm = PASTE.match(text[i])
            i += 1
            if pm and i < len(text) and text[i].startswith("```"):
                block = []
                i += 1
                while i < len(text) and not text[i].startswith("```"):
                    block.append((i + 1, text[i]))
                    i += 1
                paste(block, doc)
                continue
            if not m:
                continue
            mode, cmd, at = m.group(1), m.group(2), i
            if i >= len(text) or not text[i].startswith("```"):
                bad(doc, at, "docs-check comment not followed by a fenced block")
                continue
            block = []
            i += 1
            while i < len(text) and not text[i].startswith("```"):
                block.append((i + 1, text[i]))
                i += 1
            out = run(cmd, doc, at)
            if out is None:
                continue
            k = 0
            for ln, q in block:
                if not q.startswith("leakwatch:"):
                    continue
                j = k
                while j < len(out) and not same(q, out[j], mode == "shape"):
                    j += 1
                if j == len(out):
                    near = [o for o in out[k:] if o.startswith("leakwatch:")]
                    bad(doc, ln, "quoted output no longer printed by `%s` (%s):\n    quoted: %s\n"
                        "    run:    %s" % (cmd, mode, q, "\n            ".join(near) or "(none)"))
                else:
                    k = j + 1



def screenshot_is_current():
    shot = "docs/report-screenshot.png"
    drawn_by = ["tools/render/render_html.c", "tools/render/templates"]
    if not os.path.exists(os.path.join(root, shot)):
        return

    def git(*a):
        p = subprocess.run(["git", "-C", root] + list(a), stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
        return p.returncode, p.stdout.decode().strip()

    rc, taken = git("log", "-1", "--format=%H", "--", shot)
    if rc != 0 or not taken:
        return  # not a git checkout, or not committed yet
    rc, changed = git("log", "-1", "--format=%H", "--", *drawn_by)
    if rc != 0 or not changed:
        return
    if git("merge-base", "--is-ancestor", changed, taken)[0] != 0:
        bad(shot, 1, "older than the renderer's last change (%s, commit %s): run make screenshot"
            " (a real run, drawn by headless Chromium) and commit it" % (" ".join(drawn_by),
                                                                        changed[:12]))


screenshot_is_current()

# 5. README.md is a first page, not a manual: at most 250 lines.
README_MAX_LINES = 250
if os.path.exists(os.path.join(root, "README.md")):
    n = len(open(os.path.join(root, "README.md"), encoding="utf-8").read().splitlines())
    if n > README_MAX_LINES:
        bad("README.md", n, "%d lines, over %d: move detail to docs/" % (n, README_MAX_LINES))

for p in problems:
    print("docs-check: " + p)
if problems:
    print("docs-check: FAILED: %d drift%s (fix the docs, or the leak-line marks)"
          % (len(problems), "" if len(problems) == 1 else "s"))
    sys.exit(1)
print("docs-check: cited example lines and quoted outputs match the examples and a real run")
