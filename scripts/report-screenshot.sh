#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make screenshot: docs/report-screenshot.png from a real run, never drawn by
# hand: make demo's C loop under leakwatch on the CPU stand-ins, its HTML
# report, and a headless Chromium's picture of the page (1200x900). make
# docs-check fails when the picture is older, in git's history, than the
# renderer (tools/render/render_html.c, tools/render/templates/).
#   scripts/report-screenshot.sh [BUILD] [OUT.png]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-$ROOT/build}" && pwd)
OUT=${2:-$ROOT/docs/report-screenshot.png}
chrome=
for c in chromium chromium-browser google-chrome; do
    if command -v "$c" >/dev/null 2>&1; then chrome=$(command -v "$c") && break; fi
done
if [ -z "$chrome" ]; then
    echo "report-screenshot: no headless Chromium (apt-get install chromium)" >&2
    exit 1
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/leakwatch-shot.XXXXXX")
trap 'rm -rf "$T"' EXIT
cd "$T"
"$B/leakwatch" run --cuda-stand-ins -q --report train_loop.json -- \
    "$B/examples/train_loop" --steps 600 --step-us 2000 >/dev/null
"$B/leakwatch" report --format html -o report.html train_loop.json 2>/dev/null
timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --window-size=1200,900 --user-data-dir="$T/profile" \
    --screenshot="$T/shot.png" "file://$T/report.html" >/dev/null 2>&1
cp "$T/shot.png" "$OUT"
echo "report-screenshot: wrote $OUT (make demo's C loop, a real run)"
