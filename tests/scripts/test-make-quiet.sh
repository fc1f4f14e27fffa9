#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A plain make says what it builds in a line or two and echoes no command
# (V=1 shows them): a fresh build's first compile prints one "make: building"
# line; the stand-ins' build (and its libcuda.so link) prints nothing. Built
# in a folder of its own, one object and one stand-in: a few seconds.
#   tests/scripts/test-make-quiet.sh      (make check-scripts)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/lw-make-quiet.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
failed=0
fail() {
    failed=$((failed + 1))
    echo "test-make-quiet: FAIL: $*" >&2
}
cd "$root" || exit 1
make --no-print-directory B="$T/b" "$T/b/obj/base/log.o" >"$T/obj.out" 2>&1 || fail "make of one object failed"
[ "$(grep -c . "$T/obj.out")" -eq 1 ] && grep -q '^make: building ' "$T/obj.out" ||
    fail "a fresh build's first compile should print one 'make: building' line, printed: $(cat "$T/obj.out")"
make --no-print-directory B="$T/b" "$T/b/tests/lib/libcuda.so.1" >"$T/stub.out" 2>&1 || fail "make of the stand-in failed"
[ ! -s "$T/stub.out" ] || fail "the stand-ins' build printed: $(cat "$T/stub.out")"
[ $failed -eq 0 ] || exit 1
echo "test-make-quiet: a fresh make says what it builds in one line, and echoes no command"
