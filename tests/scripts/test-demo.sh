#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make demo (scripts/demo.sh) on the build: it runs to the end; its loops
# sleep per step, so the time to out-of-memory it shows comes from that pace
# (at least 2 ms per step: at least 3 days for the 167 million steps that fill
# the stand-in's 80 GiB at 512 B per step) and not from how fast this machine
# runs an empty loop (about an hour, different at every run); and its HTML
# page is made from one job's report, not from the C and the Python loops
# read together as if they were two ranks of one job. The commands it prints
# ("$ ...") work when pasted, in order, into a fresh shell at the root of a
# clone where only make has run (leakwatch not on PATH yet): none is "not
# found", and the gate's two runs exit 3 and 0.
#   tests/scripts/test-demo.sh [BUILD]      (make check-scripts; needs make first)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$root/build}
if [ ! -x "$B/leakwatch" ] || [ ! -x "$B/examples/train_loop" ] || [ ! -e "$B/tests/lib/libcudart.so" ]; then
    echo "test-demo: skipped: no build in $B (make, then make check-scripts)"
    exit 0
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/lw-demo.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
failed=0
fail() {
    failed=$((failed + 1))
    echo "test-demo: FAIL: $*" >&2
}
TMPDIR="$T" "$root/scripts/demo.sh" "$B" >"$T/out" 2>&1 || fail "demo.sh exited $?"
# The exit lines (not the live ones, "[as of step N]") of the runs of 1 and 2.
exits=$(grep '^leakwatch: LEAK in train_loop\.' "$T/out" | grep -v '\[as of step' | head -2)
[ "$(printf '%s\n' "$exits" | grep -c .)" -ge 1 ] || fail "no exit verdict line"
printf '%s\n' "$exits" | while IFS= read -r l; do
    [ -n "$l" ] || continue
    days=$(printf '%s\n' "$l" | sed -n 's/.*out of memory in \([0-9][0-9]*\) d .*/\1/p')
    if [ -z "$days" ] || [ "$days" -lt 3 ]; then
        echo "test-demo: FAIL: time to out-of-memory not from the 2 ms steps: $l" >&2
        exit 1
    fi
done || failed=$((failed + 1))
html=$(grep '^\$ leakwatch report --format html' "$T/out")
[ "$(printf '%s\n' "$html" | grep -o '[^ ]*\.json' | wc -l)" -eq 1 ] ||
    fail "the HTML page reads several jobs' reports as ranks of one: $html"
# Pasted into a fresh shell, in a folder that looks like the clone after make
# (the examples and the build), with a PATH that has no leakwatch.
mkdir "$T/clone"
ln -s "$root/examples" "$T/clone/examples"
[ "$B" = "$root/build" ] && ln -s "$B" "$T/clone/build"
sed -n 's/^\$ //p' "$T/out" >"$T/pasted.sh"
(cd "$T/clone" && PATH=/usr/local/bin:/usr/bin:/bin sh "$T/pasted.sh") >"$T/pasted.out" 2>&1
if grep -E ': not found|No such file or directory|command not found' "$T/pasted.out" >&2; then
    fail "a command the demo printed does not work when pasted"
fi
grep -q '^exit status 3$' "$T/pasted.out" && grep -q '^exit status 0$' "$T/pasted.out" ||
    fail "the pasted gate did not exit 3 then 0"
[ $failed -eq 0 ] || sed 's/^/    pasted: /' "$T/pasted.out" >&2
if [ $failed -ne 0 ]; then
    sed 's/^/    /' "$T/out" >&2
    exit 1
fi
echo "test-demo: make demo ran; its time to out-of-memory comes from its steps' pace; one report per page; its commands work when pasted"
