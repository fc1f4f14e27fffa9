#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# NVIDIA's real CUDA libraries from Debian 12's non-free component, for the
# layout tests (tests/integration/test_layouts.c): the driver library
# (libcuda1, 535 series) and a real runtime (libcudart11.0, CUDA 11.8),
# unpacked into a cache folder with scripts/apt-unpack.sh (nothing installed;
# the system's apt setup is left alone). With no GPU, the driver answers its
# lookups (cuGetProcAddress, cuDriverGetVersion) and cuInit fails, as on a
# machine whose GPU or kernel module is missing.
#
#   setup-nvidia-debian.sh       prints the unpacked tree's root on stdout
#
# The folder: ${XDG_CACHE_HOME:-$HOME/.cache}/leakwatch/nvidia-ARCH (root/
# inside); a second run reuses it. Exit status 1, with the reason, when the
# registry does not serve them (a mirror without non-free, no network): the
# tests that need them are then skipped with a message.
set -eu
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/leakwatch/nvidia-$arch"
root="$dir/root"
stamp="v1: libcuda1, libcudart11.0 (bookworm non-free)"
if [ -f "$dir/done" ] && [ "$(cat "$dir/done")" = "$stamp" ]; then
    echo "$root"
    exit 0
fi
rm -rf "$root"
mkdir -p "$dir"
rc=0
LW_APT_COMPONENTS="main contrib non-free non-free-firmware" \
    sh "$(dirname "$0")/apt-unpack.sh" bookworm "$arch" "$dir" "$root" libcuda1 libcudart11.0 ||
    rc=$?
if [ $rc != 0 ]; then
    echo "setup-nvidia-debian: Debian's libcuda1 and libcudart11.0 (non-free) cannot be had" \
        "(apt-unpack exit $rc): the tests with NVIDIA's real driver are skipped" >&2
    rm -rf "$root"
    exit 1
fi
echo "$stamp" >"$dir/done"
echo "$root"
