#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make check-aarch64: builds leakwatch for AArch64 with Debian's cross
# compiler against an arm64 sysroot (scripts/setup-arm64-sysroot.sh) and runs
# its tests under qemu-user on this (x86-64) machine, each program started
# explicitly through `qemu-aarch64-static -L <sysroot>` (binfmt_misc is not
# needed): the unit tests, the Python frame walk on Debian 12's arm64
# CPython 3.11 and Debian sid's arm64 CPython 3.14, and the integration tests
# on the CPU stand-ins.
#
#   check-aarch64.sh [TEST...]     default: every test this can host (below);
#                                  make check-aarch64 runs the subset that
#                                  mk/aarch64.mk names, and says why
#
# Not run here: test_cli and test_safety, whose programs exec() further
# aarch64 programs themselves (the command's `leakwatch run`, wrappers such as
# env and sh around the job), which qemu-user cannot follow without
# binfmt_misc; they run on an aarch64 machine with `make check`. Nor
# test_attach: leakwatch attach is x86-64 only (it skips itself elsewhere). Build
# folder: build/aarch64 (B= to change).
set -eu
cd "$(dirname "$0")/.."
B="${B:-build/aarch64}"
CROSS="${CROSS:-aarch64-linux-gnu-}"
need=""
command -v "${CROSS}gcc" >/dev/null 2>&1 || need="$need gcc-aarch64-linux-gnu"
command -v "${CROSS}g++" >/dev/null 2>&1 || need="$need g++-aarch64-linux-gnu"
command -v qemu-aarch64-static >/dev/null 2>&1 || need="$need qemu-user-static"
if [ -n "$need" ]; then
    sh scripts/install-deps.sh aarch64 || {
        echo "check-aarch64: needs$need (Debian: apt-get install$need)" >&2
        exit 1
    }
fi
qemu=$(command -v qemu-aarch64-static)
sysroot=$(sh scripts/setup-arm64-sysroot.sh) || {
    echo "check-aarch64: no arm64 sysroot (see above)" >&2
    exit 1
}
lib="$sysroot/usr/lib/aarch64-linux-gnu"
# CPython 3.14 for arm64 too (Debian sid; its wrapper starts qemu itself):
# the Python tests then cover it besides the sysroot's 3.11.
sh scripts/setup-python314.sh arm64 >/dev/null || true

# CUDA_LIBDIR empty: the host's CUDA toolkit is x86-64, so the layout tests
# with NVIDIA's real runtime are not built.
echo "check-aarch64: building into $B (${CROSS}gcc, sysroot $sysroot)"
nice make --no-print-directory -j"$(nproc)" B="$B" CC="${CROSS}gcc" CXX="${CROSS}g++" \
    LW_EXTRA_CFLAGS="-I$sysroot/usr/include -I$sysroot/usr/include/aarch64-linux-gnu" \
    LW_EXTRA_LDFLAGS="-L$lib -Wl,-rpath-link,$lib -Wl,-rpath-link,$sysroot/lib/aarch64-linux-gnu" \
    CHECK_CFLAGS= CHECK_LIBS="-lcheck_pic -lrt -lm -lsubunit" JSON_LIBS="$lib/libjansson.a" \
    CUDA_LIBDIR= \
    test-bins

if [ $# -eq 0 ]; then
    set -- "$B"/tests/unit/test_* "$B"/tests/integration/test_interpose \
        "$B"/tests/integration/test_detect "$B"/tests/integration/test_python \
        "$B"/tests/integration/test_torch "$B"/tests/integration/test_symbols \
        "$B"/tests/integration/test_stacks
else
    # A bare name (test_stubs) is the unit or integration test of that name
    # in $B (make check-aarch64 passes its list so: mk/aarch64.mk).
    for t in "$@"; do
        case "$t" in
        */*) ;;
        *) if [ -x "$B/tests/unit/$t" ]; then t="$B/tests/unit/$t"; else t="$B/tests/integration/$t"; fi ;;
        esac
        [ -x "$t" ] || { echo "check-aarch64: no test program $t" >&2; exit 1; }
        set -- "$@" "$t"
        shift
    done
fi
# Every program the tests start goes through qemu (tests/test_exec.h), which
# passes the environment (LD_PRELOAD included) on to the aarch64 program.
# The stand-in driver skips its 8 TiB address reservation, which costs
# qemu-user a minute per process; Check's time limits are stretched.
export LW_TEST_EXEC="$qemu -L $sysroot"
export LW_PYTHONS="$sysroot/usr/bin/python3.11"
export FAKE_CUDA_NO_RESERVE=1
export STRIP="${CROSS}strip"
export CK_TIMEOUT_MULTIPLIER="${CK_TIMEOUT_MULTIPLIER:-10}"
# The longest first in a fresh build folder: test_pyframes alone takes most
# of this tier (tests/durations-aarch64).
export LW_TEST_SEED="${LW_TEST_SEED-tests/durations-aarch64}"
# One binary per core: under qemu every binary computes (test_pyframes runs
# one CPython per core itself).
export LW_TEST_JOBS="${LW_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}"
echo "check-aarch64: running $# test programs under $qemu"
scripts/run-tests.sh "$B" "$@"
