#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs what leakwatch needs to build and test, when it is missing.
# Debian/Ubuntu: apt-get as root, or through sudo. Elsewhere: one message.
#
# Build: a C compiler, make, pkg-config, uthash, jansson (the command's JSON reader;
# linked in statically). Nothing else: a plain make, make install and pip install need
# only these.
# Test programs (make test-bins, make check) and make bench: Check (the test framework)
# and libunwind (the tests compare stacks with its unwinder; bench links it).
# Tests (make check): clang with libFuzzer (fuzzing runs), valgrind, cppcheck and
# clang-format (lint), binutils' addr2line (source lines), python3 (Python frames),
# python3-venv and man-db (the install test: a wheel in a venv, the man page),
# tmux and script(1) (leakwatch top and the HTML report on a terminal, driven
# by test_answer).
# Optional: chromium (the HTML report test; skipped with a message without it).
# Tests also: CPython 3.14 from Debian sid, unpacked into a cache folder by
# scripts/setup-python314.sh (not installed; skipped with a message offline);
# and NVIDIA's libcuda1 and libcudart11.0 from Debian's non-free component,
# unpacked likewise by scripts/setup-nvidia-debian.sh.
#
#   install-deps.sh          what the build needs (make deps, make demo)
#   install-deps.sh test     that and what the tests need (make check, CI)
#   install-deps.sh aarch64  the cross compiler and qemu-user (make check-aarch64)
#   install-deps.sh check    installs nothing: exit 1 with one line naming what
#                            the build lacks (a plain make)
#   install-deps.sh check-test  the same for the test programs and make bench
what="${1:-build}"
only_check=0
if [ "$what" = check ]; then only_check=1; what=build; fi
if [ "$what" = check-test ]; then only_check=1; what=test-libs; fi
missing=""
have_pkgconf() { pkg-config --exists "$1" 2>/dev/null; }
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need_cmd cc build-essential
need_cmd make build-essential
need_cmd pkg-config pkg-config
[ -f /usr/include/uthash.h ] || missing="$missing uthash-dev"
have_pkgconf jansson || [ -f /usr/include/jansson.h ] || missing="$missing libjansson-dev"
if [ "$what" = test ] || [ "$what" = test-libs ]; then
    have_pkgconf libunwind || [ -f /usr/include/libunwind.h ] || missing="$missing libunwind-dev"
    have_pkgconf check || missing="$missing check"
fi
if [ "$what" = aarch64 ]; then
    need_cmd aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
    need_cmd aarch64-linux-gnu-g++ g++-aarch64-linux-gnu
    need_cmd qemu-aarch64-static qemu-user-static
fi
if [ $only_check = 1 ]; then
    [ -z "$missing" ] && exit 0
    if [ "$what" = test-libs ]; then
        echo "leakwatch: missing what the test programs need (Debian packages):$missing; run 'make test-deps' to install them (apt-get), or install them yourself" >&2
    else
        echo "leakwatch: missing build dependencies (Debian packages):$missing; run 'make deps' to install them (apt-get), or install them yourself" >&2
    fi
    exit 1
fi
optional=""
if [ "$what" = test ]; then
need_cmd clang clang
need_cmd valgrind valgrind
need_cmd cppcheck cppcheck
need_cmd clang-format clang-format
need_cmd addr2line binutils
need_cmd python3 python3
need_cmd man man-db
need_cmd tmux tmux
need_cmd script bsdutils
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    missing="$missing python3-venv"
fi
if command -v clang >/dev/null 2>&1; then
    probe=$(mktemp -d)
    echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }' \
        > "$probe/f.c"
    clang -fsanitize=fuzzer "$probe/f.c" -o "$probe/f" >/dev/null 2>&1 ||
        missing="$missing libclang-rt-dev"
    rm -rf "$probe"
fi
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
    optional="chromium"
fi
if [ "$what" = test ]; then
    # CPython 3.14 for the Python-frame tests (Debian 12 has none): unpacked
    # from Debian sid into a cache folder; says why and goes on if it cannot.
    sh "$(dirname "$0")/setup-python314.sh" >/dev/null || true
    # NVIDIA's real driver library and an 11.8 runtime from Debian's non-free
    # component, unpacked into a cache folder for the layout tests; says why
    # and goes on if the registry does not serve them.
    sh "$(dirname "$0")/setup-nvidia-debian.sh" >/dev/null || true
fi
[ -z "$missing" ] && [ -z "$optional" ] && exit 0

if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO=none; fi
can_apt=0
command -v apt-get >/dev/null 2>&1 && [ "$SUDO" != none ] && can_apt=1
if [ $can_apt = 1 ]; then
    export DEBIAN_FRONTEND=noninteractive
    [ -n "$missing" ] && echo "leakwatch: installing missing dependencies:$missing" >&2
    $SUDO apt-get update -qq >/dev/null 2>&1 || true
    if [ -n "$optional" ]; then
        # Best effort: without it one test is skipped, with a message.
        $SUDO apt-get install -y -qq --no-install-recommends $optional >/dev/null 2>&1 ||
            echo "leakwatch: could not install $optional (optional: the HTML report test will be skipped)" >&2
    fi
    if [ -z "$missing" ] || $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null; then
        exit 0
    fi
fi
[ -z "$missing" ] && exit 0
echo "leakwatch: cannot install dependencies here. Install these packages, then run make again:$missing" >&2
echo "           (Debian/Ubuntu: sudo apt-get install$missing)" >&2
exit 1
