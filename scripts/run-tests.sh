#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs each test binary given, with LW_BUILD set to the build folder, and
# fails if any fails. Each binary prints Check's own summary line. With
# LW_TEST_EXEC set (make check-aarch64: qemu-user), each runs through it.
#
# Check has no "skipped" status: a test that cannot run a case here prints a
# line with "skipped" in it and passes. This script collects those lines
# (each distinct line once per binary) and ends with a tally:
#   tests: 22 binaries: 22 passed, 0 failed; 417 checks; 3 skips:
#     test_layouts: ... skipped
#   417 passed, 0 failed, 3 skipped
# The last line, alone, is the form CI reads ("passed" and "failed" count
# Check's tests; "skipped" counts the skip lines, parts of passed tests).
# With CI=true (or CI=1), a skip of something CI is supposed to have
# (required_skip below: what scripts/install-deps.sh test installs or
# unpacks) fails the run.
B="$1"; shift
export LW_BUILD="$B"
tmp=$(mktemp -d /tmp/lwtests.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# Prints what CI lacks when a skip line says a required component is
# missing; nothing otherwise.
required_skip() {
    case "$1" in
    *"CPython 3.14 is not unpacked"*) echo "CPython 3.14 (sh scripts/setup-python314.sh)" ;;
    *"libcuda1 and libcudart11.0 are not unpacked"*) echo "NVIDIA's Debian libraries (sh scripts/setup-nvidia-debian.sh)" ;;
    *"chromium is not installed"*) echo "chromium (Debian package chromium)" ;;
    *"no CPython >= 3.8 found"* | *"no CPython found"* | *"no python3"* | *"no /usr/bin/python3"* | \
        *"python3 is not installed"*) echo "python3 (Debian package python3)" ;;
    *"no addr2line"*) echo "addr2line (Debian package binutils)" ;;
    esac
}
case "${CI:-}" in "" | 0 | false | no) in_ci=0 ;; *) in_ci=1 ;; esac

nbin=0 nfail=0 failed="" passed_checks=0 failed_checks=0
: >"$tmp/skips"
: >"$tmp/failures"
for t in "$@"; do
    nbin=$((nbin + 1))
    name=${t##*/}
    # Shown as it runs and kept, stdout and stderr together.
    # shellcheck disable=SC2086
    { $LW_TEST_EXEC "$t" 2>&1; echo $? >"$tmp/rc"; } | tee "$tmp/out"
    rc=$(cat "$tmp/rc" 2>/dev/null || echo 1)
    # Check's summary: "100%: Checks: 27, Failures: 0, Errors: 0".
    summary=$(sed -n 's/^[0-9]*%: Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' \
        "$tmp/out" | tail -1)
    n=0 f=0 e=0
    [ -z "$summary" ] || read -r n f e <<EOF_SUMMARY
$summary
EOF_SUMMARY
    passed_checks=$((passed_checks + n - f - e))
    failed_checks=$((failed_checks + f + e))
    if [ "$rc" -ne 0 ]; then
        nfail=$((nfail + 1)); failed="$failed $name"
        # A binary that died before its summary, or failed after it (a
        # sanitizer at exit), is one failed test more.
        [ $((f + e)) -gt 0 ] || failed_checks=$((failed_checks + 1))
        # Kept for the end, where a CI log's tail shows them: Check's
        # failure lines, or the binary's last lines when it has none.
        {
            echo "--- $name:"
            grep -E ':[FE]:|ERROR: AddressSanitizer|runtime error:|ThreadSanitizer' "$tmp/out" |
                head -20 >"$tmp/flines"
            if [ -s "$tmp/flines" ]; then cat "$tmp/flines"; else tail -15 "$tmp/out"; fi
        } >>"$tmp/failures"
    fi
    grep -i 'skipped' "$tmp/out" | grep -v '^[0-9]*%: Checks:' | awk '!seen[$0]++' |
        sed "s|^|$name	|" >>"$tmp/skips"
done

nskip=$(wc -l <"$tmp/skips" | tr -d ' ')
status=0
[ $nfail -eq 0 ] || status=1
list=""
[ "$nskip" -eq 0 ] || list=":"
echo "tests: $nbin binaries: $((nbin - nfail)) passed, $nfail failed${failed:+ (${failed# })};" \
    "$((passed_checks + failed_checks)) checks; $nskip skips$list"
missing=""
while IFS='	' read -r bin line; do
    case "$line" in "$bin"*) echo "  $line" ;; *) echo "  $bin: $line" ;; esac
    if [ $in_ci = 1 ]; then
        need=$(required_skip "$line")
        if [ -n "$need" ]; then
            echo "  ^ FAILED under CI: CI is supposed to have $need"
            missing="$missing; $need"
            status=1
        fi
    fi
done <"$tmp/skips"
if [ -n "$missing" ]; then echo "tests: FAILED under CI: skipped for want of${missing#;}" >&2; fi
if [ $nfail -ne 0 ]; then
    echo "what failed:"
    cut -c1-600 "$tmp/failures"
    echo "FAILED:$failed" >&2
fi
echo "$passed_checks passed, $failed_checks failed, $nskip skipped"
exit $status
