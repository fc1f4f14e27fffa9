#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs a few representative test programs under valgrind (memcheck) with the
# shim preloaded: any invalid read or write, use of uninitialised memory or
# bad free in leakwatch (or in what it does to the program) fails the run.
# valgrind follows LD_PRELOAD from the environment into its client; children
# are not traced. Leaks are not checked: the shim keeps its tables for the
# life of the process on purpose.
B="$1"
VALGRIND="${VALGRIND:-valgrind}"
# A missing valgrind fails the check: scripts/install-deps.sh test installs it.
if ! command -v "$VALGRIND" >/dev/null 2>&1; then
    echo "check-valgrind: FAILED: $VALGRIND is not installed (Debian package valgrind; scripts/install-deps.sh test installs it)" >&2
    exit 1
fi
dir=$(mktemp -d /tmp/lwvalgrind.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
# FAKE_CUDA_NO_RESERVE=1: the stand-in driver hands out device addresses as
# plain numbers instead of pages in its 8 TiB PROT_NONE reservation, which
# memcheck shadows at a cost of minutes and several GiB per process (4
# minutes against 4 seconds for rt_paths). What memcheck is here for (the
# shim's own reads, writes and frees of host memory, uninitialised values)
# does not depend on it: the shim never touches device memory, and a stray
# read of a device address still faults (nothing is mapped there), which
# memcheck reports. The plain and sanitizer runs use the reservation.
run() {
    name="$1"; shift
    FAKE_CUDA_NO_RESERVE=1 LD_PRELOAD="$PWD/$B/libleakwatch.so" LD_LIBRARY_PATH="$PWD/$B/tests/lib" \
        LEAKWATCH_REPORT="$dir/$name.json" LEAKWATCH_QUIET=1 \
        "$VALGRIND" --error-exitcode=99 --trace-children=no --quiet --leak-check=no \
        --suppressions="$PWD/tests/valgrind.supp" "$@" >"$dir/$name.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ] || [ ! -s "$dir/$name.json" ]; then
        echo "check-valgrind: $name failed (exit $rc):"; cat "$dir/$name.log"; return 1
    fi
    echo "check-valgrind: $name clean"
}
status=0
# One at a time (each takes seconds).
run rt_paths "$B/tests/programs/rt_paths" malloc 3 1048576 || status=1
run drv_paths "$B/tests/programs/drv_paths" alloc 3 1048576 || status=1
run rt_safety_threads "$B/tests/programs/rt_safety_threads" 20 || status=1
run rt_safety_dlsym "$B/tests/programs/rt_safety_dlsym" 5 || status=1
exit $status
