#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# An arm64 (AArch64) sysroot for `make check-aarch64`: Debian 12's arm64
# packages of what the build links (libunwind, Check, jansson) and of what the tests
# run (the C library, libstdc++, CPython 3.11, coreutils), unpacked into a cache folder
# with scripts/apt-unpack.sh (nothing installed; the system's apt setup is
# left alone). The cross compiler itself is Debian's gcc-aarch64-linux-gnu
# (installed by `install-deps.sh aarch64`); binaries run under
# `qemu-aarch64-static -L <sysroot>`.
#
#   setup-arm64-sysroot.sh        prints the sysroot path on stdout
#
# $LW_ARM64_SYSROOT overrides the folder (default ${XDG_CACHE_HOME:-$HOME/
# .cache}/leakwatch/arm64-bookworm). A second run reuses it. Exit status 1,
# with the reason, when the packages cannot be had.
set -eu
suite="${LW_ARM64_SUITE:-bookworm}"
dir="${LW_ARM64_SYSROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/leakwatch/arm64-$suite}"
root="$dir/root"
# What the tree holds; a tree made from another list is made again.
stamp="v3: libc, libunwind, check, jansson, python3.11, coreutils"
if [ -f "$dir/done" ] && [ "$(cat "$dir/done")" = "$stamp" ]; then
    echo "$root"
    exit 0
fi
rm -rf "$root"
rc=0
sh "$(dirname "$0")/apt-unpack.sh" "$suite" arm64 "$dir" "$root" \
    libc6 libgcc-s1 libstdc++6 libunwind8 libunwind-dev liblzma5 check libsubunit0 \
    libjansson4 libjansson-dev \
    libsubunit-dev \
    python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libffi8 zlib1g libexpat1 \
    libbz2-1.0 libzstd1 libuuid1 libcrypt1 \
    coreutils libacl1 libattr1 libgmp10 libselinux1 libpcre2-8-0 || rc=$?
if [ $rc != 0 ]; then
    echo "setup-arm64-sysroot: cannot build the arm64 sysroot (apt-unpack exit $rc)" >&2
    exit 1
fi
# Absolute symbolic links inside the tree (libfoo.so -> /lib/...) point at
# the host: make them relative to the sysroot for the cross linker.
find "$root" -type l | while read -r link; do
    target=$(readlink "$link")
    case "$target" in
    /*) ln -sfn "$root$target" "$link" ;;
    esac
done
echo "$stamp" >"$dir/done"
echo "$root"
