#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Checks that every relative link in README.md, CONTRIBUTING.md, examples/README.md and
# docs/*.md points at a file that exists and, with #anchor, at a heading of that file
# (GitHub's anchor rule: lower case, punctuation but - and _ dropped, spaces to -).
# Usage: scripts/check-doc-links.py [ROOT]; exit 1 and one line per broken link.
import glob, os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
root = os.path.abspath(root)
files = ["README.md", "CONTRIBUTING.md", "examples/README.md"] + sorted(
    os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))


def anchors(path):
    out, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(2).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else "%s-%d" % (slug, n))
    return out


bad = 0
for f in files:
    path = os.path.join(root, f)
    if not os.path.exists(path):
        continue
    text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(dest):
            print("%s: broken link %s (no such file)" % (f, target))
            bad += 1
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            print("%s: broken link %s (no such heading)" % (f, target))
            bad += 1
print("doc links: %d broken" % bad)
sys.exit(1 if bad else 0)
