#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The real clients of the test bed (make check-real): Debian trixie's real
# PyTorch 2.6 CUDA 12 build (python3-torch-cuda, contrib), numba and PyCUDA,
# with their dependency closure (Python 3.13, numpy, trixie's C library and
# loader, pytest), unpacked into a cache folder with scripts/apt-unpack.sh:
# nothing is installed and the system's apt setup is left alone. NVIDIA's
# own libraries (driver, runtime, cuBLAS, cuDNN, ...) are left out: the
# tests run these clients on leakwatch's CPU stand-ins (build/tests/lib),
# so about 700 MB are downloaded once, not the 3 GB of NVIDIA's libraries.
# Run commands in the root with scripts/in-real-root.sh (chroot: needs root).
#
#   setup-real-clients.sh     prints the root on stdout
#
# The folder: ${XDG_CACHE_HOME:-$HOME/.cache}/leakwatch/real-clients-amd64
# (root/ inside); a second run reuses it (delete it to refresh). Exit status
# 1, with the reason on stderr, when the clients cannot be had here (not
# amd64, no network, the registry lacks contrib): make check-real then says
# so and fails, since a skipped tier is not a pass.
set -eu
arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
if [ "$arch" != amd64 ]; then
    echo "setup-real-clients: Debian's CUDA build of PyTorch exists for amd64 only (this is $arch)" >&2
    exit 1
fi
dir="${XDG_CACHE_HOME:-$HOME/.cache}/leakwatch/real-clients-$arch"
root="$dir/root"
stamp="v1: trixie python3-torch-cuda python3-numba python3-pycuda python3-pytest libunwind8 base-files"
# What the packages' installation scripts would have done and the clients
# need (run on every call, so that a root unpacked by an older version of
# this script gets it too): the BLAS/LAPACK alternatives (numpy links
# libblas.so.3), the loader's cache (trixie's ld.so.conf.d is in the root),
# a root user.
finish() {
    lib="$root/usr/lib/x86_64-linux-gnu"
    for alt in blas/libblas.so.3 lapack/liblapack.so.3; do
        [ -e "$lib/$alt" ] && [ ! -e "$lib/${alt#*/}" ] && ln -s "$alt" "$lib/${alt#*/}"
    done
    ldconfig -r "$root" 2>/dev/null || true
    [ -s "$root/etc/passwd" ] || printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
    [ -s "$root/etc/group" ] || printf 'root:x:0:\n' >"$root/etc/group"
    mkdir -p "$root/root" "$root/proc" "$root/dev" "$root/tmp"
    echo "$root"
}
if [ -f "$dir/done" ] && [ "$(cat "$dir/done")" = "$stamp" ]; then
    finish
    exit 0
fi
rm -rf "$root" "$dir/done"
mkdir -p "$dir"
# NVIDIA's libraries that the clients' packages depend on, replaced by the
# stand-ins (and nvidia-cudnn, whose install step downloads from NVIDIA).
nvidia="libcuda1 libcudart12 libcublas12 libcublaslt12 libcufft11 libcurand10 libcusolver11
    libcusparse12 libnccl2 libnvrtc12 libnvtoolsext1 libnvjitlink12 libcupti12 nvidia-cudnn
    nvidia-cuda-toolkit"
rc=0
LW_APT_COMPONENTS="main contrib non-free" LW_APT_CLOSURE=1 LW_APT_ASSUME_INSTALLED="$nvidia" \
    sh "$(dirname "$0")/apt-unpack.sh" trixie "$arch" "$dir" "$root" \
    python3-torch-cuda python3-numba python3-pycuda python3-pytest libunwind8 base-files dash coreutils ||
    rc=$?
if [ $rc != 0 ]; then
    echo "setup-real-clients: Debian trixie's python3-torch-cuda, python3-numba and python3-pycuda" \
        "cannot be had here (apt-unpack exit $rc)" >&2
    rm -rf "$root"
    exit 1
fi
echo "$stamp" >"$dir/done"
finish
