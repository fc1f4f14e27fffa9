#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes a reproducible source tarball, OUT_DIR/leakwatch-VERSION.tar.gz:
# the tracked files (or, in an unpacked tarball, every file but build/),
# names sorted, owners 0, modes normalised, every mtime set to the last
# commit's time (SOURCE_DATE_EPOCH when set), gzip without a timestamp.
# Two runs on the same tree give the same bytes.
#   dist.sh OUT_DIR
set -eu
out="${1:-build}"
cd "$(dirname "$0")/.."
version=$(cat VERSION 2>/dev/null || echo 0.1.0)
name="leakwatch-$version"
# A checkout of its own (an unpacked tarball inside another checkout is not).
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
    list=$(git ls-files | LC_ALL=C sort)
    epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
else
    # What .gitignore leaves out of a checkout is left out here too.
    list=$(find . -type f ! -path './build/*' ! -name '*.o' ! -name '*.pyc' ! -path '*/__pycache__/*' \
        ! -name 'leakwatch-*.json' | sed 's,^\./,,' | LC_ALL=C sort)
    epoch="${SOURCE_DATE_EPOCH:-$(stat -c %Y Makefile)}"
fi
mkdir -p "$out"
tmp="$out/.$name.tar.gz.$$"
# shellcheck disable=SC2086
printf '%s\n' $list | tar --create --no-recursion --files-from=- --sort=name \
    --owner=0 --group=0 --numeric-owner --mode='u+rw,go=rX' --mtime="@$epoch" \
    --transform "s,^,$name/," --format=gnu |
    gzip -9 -n >"$tmp"
mv "$tmp" "$out/$name.tar.gz"
echo "$out/$name.tar.gz"
