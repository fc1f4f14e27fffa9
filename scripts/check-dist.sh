#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The release tarball (make dist): the same bytes twice, exactly the tracked
# files, and, unpacked on its own, a tree that builds (the library, the
# command, the unit tests) and passes the unit tests (make distcheck runs its
# whole make check).
#   check-dist.sh BUILD_DIR [full]
set -eu
mkdir -p "$1"; B=$(cd "$1" && pwd); full="${2:-}"
root=$(cd "$(dirname "$0")/.." && pwd)
a=$("$root/scripts/dist.sh" "$B/dist-a")
b=$("$root/scripts/dist.sh" "$B/dist-b")
cmp -s "$a" "$b" || { echo "check-dist: two tarballs of the same tree differ" >&2; exit 1; }
name=$(basename "$a" .tar.gz)
if [ "$(git -C "$root" rev-parse --show-toplevel 2>/dev/null)" = "$root" ]; then
    want=$(git -C "$root" ls-files | LC_ALL=C sort)
    got=$(tar -tzf "$a" | sed "s,^$name/,," | LC_ALL=C sort)
    [ "$want" = "$got" ] || { echo "check-dist: the tarball's files are not the tracked files" >&2; exit 1; }
fi
work="$B/dist-unpacked"
rm -rf "$work"; mkdir -p "$work"
tar -xzf "$a" -C "$work"
if [ "$full" = full ]; then
    make -C "$work/$name" check
else
    # The library, the command and the unit tests but test_pyframes and
    # test_stubs: those two run the CPythons found and the stand-ins'
    # programs, built from the same files (src/track/pyframes.c,
    # tests/python/, tests/stubs/, tests/programs/) the checkout's plain run
    # builds and runs; here they could only find a file missing from the
    # tarball, and the tarball's files were compared with the tracked files
    # above. Nor the integration tests and their programs, for the same
    # reason: what this adds is a build and unit run of a tree with no .git
    # and no untracked file. (make distcheck builds and runs everything.)
    units=""
    for t in "$work/$name"/tests/unit/test_*.c; do
        t=${t##*/}
        t=${t%.c}
        case "$t" in test_pyframes | test_stubs) ;; *) units="$units build/tests/unit/$t" ;; esac
    done
    # shellcheck disable=SC2086
    make -s -C "$work/$name" -j"$(nproc 2>/dev/null || echo 2)" all $units >"$work/build.log" 2>&1 ||
        { tail -30 "$work/build.log"; echo "check-dist: the unpacked tarball does not build" >&2; exit 1; }
    # shellcheck disable=SC2086
    (cd "$work/$name" && scripts/run-tests.sh build $units) >"$work/test.log" 2>&1 ||
        { tail -30 "$work/test.log"; echo "check-dist: the unpacked tarball's unit tests fail" >&2; exit 1; }
    # The tarball of the unpacked tree is the same tarball.
    c=$("$work/$name/scripts/dist.sh" "$B/dist-c")
    cmp -s "$a" "$c" || { echo "check-dist: a tarball made from the unpacked tarball differs" >&2; exit 1; }
fi
rm -rf "$work" "$B/dist-a" "$B/dist-b" "$B/dist-c"
echo "check-dist: $name.tar.gz is reproducible, holds the tracked files, and builds and passes its unit tests on its own"
