#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Unpacks CPython 3.14 from Debian's development suite (sid) into a cache
# folder, for the Python-frame tests: Debian 12 has no 3.14, and sid's
# packages need sid's newer C library, so that comes along and the
# interpreter is started through its loader by a small wrapper.
# libunwind comes along too: leakwatch links it, and for another
# architecture (arm64 under qemu-user) the host has none.
#
#   setup-python314.sh [ARCH]     ARCH: a Debian architecture (default: this
#                                 machine's, e.g. amd64; arm64 for the
#                                 aarch64 checks under qemu-user)
#
# Result: $LW_PY314_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/leakwatch/
# py314-ARCH)/root/usr/bin/python3.14, a wrapper that runs
#   <root>/usr/lib/<triplet>/<loader> --library-path <root libs> --argv0 <wrapper>
#       <root>/usr/libexec/leakwatch/python3.14 ARGS
# (the interpreter, moved out of bin/: sys.executable is the wrapper, so
# subprocesses work too, and the prefix is found from it; LD_PRELOAD is
# honoured by that loader). Also python3.14t when the suite has a
# free-threaded build (python3.14t-minimal / python3.14-nogil). Prints the
# wrapper path(s) on stdout.
#
# apt is used only to download (scripts/apt-unpack.sh: a private sources
# list, lists and cache under the cache folder); the system's apt
# configuration and package state are not touched, nothing is installed.
# Needs apt-get, dpkg-deb and network access to the Debian archive; without
# them it says why and exits 0 (the tests then run on the other
# interpreters). A second run with the folder in place downloads nothing
# (delete the folder to refresh); it writes the wrappers again.
set -eu

arch="${1:-$(dpkg --print-architecture 2>/dev/null || echo amd64)}"
case "$arch" in
amd64) triplet=x86_64-linux-gnu loader=ld-linux-x86-64.so.2 qemu=qemu-x86_64-static ;;
arm64) triplet=aarch64-linux-gnu loader=ld-linux-aarch64.so.1 qemu=qemu-aarch64-static ;;
*)
    echo "setup-python314: architecture $arch not supported (amd64 or arm64)" >&2
    exit 0
    ;;
esac
cache="${LW_PY314_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/leakwatch/py314-$arch}"
root="$cache/root"
wrap="$root/usr/bin/python3.14"

skip() {
    echo "setup-python314: $*; the Python-frame tests will not cover CPython 3.14" >&2
    exit 0
}

here=$(dirname "$0")
# What the tree holds; a tree made from another list is made again.
stamp="v2: python3.14, libc6, libunwind8"
[ -f "$cache/done" ] && [ "$(cat "$cache/done")" != "$stamp" ] && rm -f "$cache/done"
if [ ! -f "$cache/done" ]; then
    rm -rf "$root"
    # The '?' ones: a free-threaded build, under either name Debian may use.
    rc=0
    sh "$here/apt-unpack.sh" sid "$arch" "$cache" "$root" \
        python3.14-minimal libpython3.14-minimal libpython3.14-stdlib libffi8 libc6 libgcc-s1 \
        zlib1g libexpat1 libzstd1 liblzma5 libbz2-1.0 libunwind8 \
        'python3.14t-minimal?' 'libpython3.14t-minimal?' 'libpython3.14t-stdlib?' \
        'python3.14-nogil?' 'libpython3.14-nogil?' || rc=$?
    case $rc in
    0) ;;
    2) skip "the Debian archive (sid) cannot be reached" ;;
    3) skip "sid does not have the packages (see above)" ;;
    *) skip "download failed (see $cache/apt.log)" ;;
    esac
fi

lib="$root/usr/lib/$triplet"
real="$root/usr/libexec/leakwatch"
if [ ! -f "$cache/done" ]; then
    mkdir -p "$real"
    for py in python3.14 python3.14t; do
        [ -f "$root/usr/bin/$py" ] && mv "$root/usr/bin/$py" "$real/$py"
    done
fi
if [ ! -x "$real/python3.14" ] || [ ! -e "$lib/$loader" ]; then
    skip "unpacked tree is incomplete"
fi
# Another architecture's interpreter (make check-aarch64 on x86-64) runs
# under qemu-user, named here so that the wrapper works without binfmt_misc.
emu=""
if [ "$arch" != "$(dpkg --print-architecture 2>/dev/null)" ]; then
    emu="$(command -v "$qemu" || echo "/usr/bin/$qemu") "
fi
make_wrapper() { # $1 interpreter name
    cat >"$root/usr/bin/$1" <<EOF
#!/bin/sh
# CPython from Debian sid, started through sid's C library (setup-python314.sh).
# --library-path replaces LD_LIBRARY_PATH for the loader: that is passed on
# after sid's own folders (CUDA libraries, the tests' stand-ins).
exec $emu"$lib/$loader" --library-path "$lib:$root/lib/$triplet\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" \\
    --argv0 "\$0" "$real/$1" "\$@"
EOF
    chmod +x "$root/usr/bin/$1"
}
make_wrapper python3.14
[ -x "$real/python3.14t" ] && make_wrapper python3.14t
if [ ! -f "$cache/done" ]; then
    if [ "$arch" = "$(dpkg --print-architecture 2>/dev/null)" ]; then
        "$wrap" -c 'import ctypes, sys; assert sys.version_info[:2] == (3, 14)' ||
            skip "the unpacked interpreter does not start"
    fi
    [ -x "$real/python3.14t" ] ||
        echo "setup-python314: sid has no free-threaded 3.14 build for $arch" >&2
    echo "$stamp" >"$cache/done"
fi
echo "$wrap"
[ -x "${wrap}t" ] && echo "${wrap}t"
exit 0
