#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make install / make uninstall.
#   scripts/install.sh install|uninstall DESTDIR PREFIX BUILD
#
# Installs, under DESTDIR/PREFIX:
#   bin/leakwatch                                the command
#   lib/libleakwatch.so                          the library it preloads (../lib)
#   lib/leakwatch/stand-ins/libcuda.so.1, libcudart.so, and the CUDA 12 stack
#   (libcudart.so.12, cuBLAS, cuBLASLt, cuDNN, ...) that PyTorch's CUDA 12
#   builds load                                  CPU stand-ins (run --cuda-stand-ins)
#   include/leakwatch.h, include/leakwatch/version.h
#   share/leakwatch/python/leakwatch/...         the Python package and its
#                                                auto-start (found from lib/)
#   share/man/man1/leakwatch.1                   the man page
#   share/bash-completion/completions/leakwatch  bash completion
#
# The folders that did not exist before are listed in
# share/leakwatch/created-dirs (not under DESTDIR); uninstall removes the files
# above, then those folders when empty, so PREFIX is left as it was before.
set -eu
action=${1:?usage: install.sh install|uninstall DESTDIR PREFIX BUILD}
DESTDIR=${2-}
PREFIX=${3:?PREFIX is empty}
B=${4:-build}
case "$PREFIX" in
/*) ;;
*) echo "make $action: PREFIX=$PREFIX must be an absolute path (e.g. PREFIX=\$HOME/.local)" >&2
   exit 2 ;;
esac
P="$DESTDIR$PREFIX"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYDIR=share/leakwatch/python/leakwatch
VERSION=$(cat "$ROOT/VERSION")

# The CUDA 12 stand-ins (the Makefile's CUDA12_LIBS and libcudart.so.12).
CUDA12_STAND_INS="libcudart.so.12 libcublas.so.12 libcublasLt.so.12 libcudnn.so.9 libcufft.so.11
    libcurand.so.10 libcusparse.so.12 libcusolver.so.11 libnccl.so.2 libnvToolsExt.so.1
    libnvrtc.so.12"
# "source destination mode" lines; destinations are relative to PREFIX.
files() {
    cat <<EOF
$B/leakwatch bin/leakwatch 0755
$B/libleakwatch.so lib/libleakwatch.so 0755
$B/tests/lib/libcuda.so.1 lib/leakwatch/stand-ins/libcuda.so.1 0755
$B/tests/lib/libcudart.so lib/leakwatch/stand-ins/libcudart.so 0755
EOF
    for lib in $CUDA12_STAND_INS; do
        echo "$B/tests/lib/$lib lib/leakwatch/stand-ins/$lib 0755"
    done
    cat <<EOF
include/leakwatch.h include/leakwatch.h 0644
$B/include/leakwatch/version.h include/leakwatch/version.h 0644
python/leakwatch/__init__.py $PYDIR/__init__.py 0644
python/leakwatch/__main__.py $PYDIR/__main__.py 0644
python/leakwatch/_torch.py $PYDIR/_torch.py 0644
python/leakwatch/_anatomy.py $PYDIR/_anatomy.py 0644
python/leakwatch/_autostart/sitecustomize.py $PYDIR/_autostart/sitecustomize.py 0644
- $PYDIR/_version.py 0644
$B/doc/leakwatch.1 share/man/man1/leakwatch.1 0644
$B/doc/leakwatch.bash share/bash-completion/completions/leakwatch 0644
EOF
}
MANIFEST=share/leakwatch/created-dirs

install_all() {
    cd "$ROOT"
    files | while read -r src dst mode; do
        [ "$src" = - ] || [ -f "$src" ] || {
            echo "make install: $src is missing; run make first" >&2
            exit 1
        }
    done
    # The folders to create, parents first; those that do not exist yet are
    # remembered for uninstall.
    created=$(mktemp)
    trap 'rm -f "$created"' EXIT
    for d in "" $(files | while read -r src dst mode; do
        d=$(dirname "$dst")
        while [ "$d" != . ]; do echo "$d"; d=$(dirname "$d"); done
    done | sort -u); do
        if [ ! -d "$P/$d" ]; then
            mkdir -p "$P/$d"
            [ -n "$d" ] && echo "$d" >>"$created"
        fi
    done
    [ -d "$P/share/leakwatch" ] || mkdir -p "$P/share/leakwatch"
    files | while read -r src dst mode; do
        if [ "$src" = - ]; then
            printf '"""Written by make install from the VERSION file."""\nversion = "%s"\n' \
                "$VERSION" >"$P/$dst"
            chmod "$mode" "$P/$dst"
        else
            # A temporary name, then rename: a running job keeps its mapping
            # of the old library.
            cp "$src" "$P/$dst.tmp.$$" && chmod "$mode" "$P/$dst.tmp.$$" &&
                mv -f "$P/$dst.tmp.$$" "$P/$dst"
        fi
        echo "  $PREFIX/$dst"
    done
    # Keep the list of an earlier install: its folders are ours too. A staged
    # install (DESTDIR, for a package) has none: the package manager removes it.
    if [ -z "$DESTDIR" ]; then
        if [ -f "$P/$MANIFEST" ]; then cat "$P/$MANIFEST" >>"$created"; fi
        sort -u "$created" >"$P/$MANIFEST.tmp" && mv "$P/$MANIFEST.tmp" "$P/$MANIFEST"
    fi
    echo "leakwatch $VERSION installed in $PREFIX; make uninstall PREFIX=$PREFIX removes it"
    case ":${PATH:-}:" in
    *":$PREFIX/bin:"*) ;;
    *) echo "note: $PREFIX/bin is not on PATH" ;;
    esac
}

uninstall_all() {
    [ -d "$P" ] || { echo "make uninstall: $P does not exist" >&2; exit 1; }
    files | while read -r src dst mode; do
        if [ -e "$P/$dst" ]; then rm -f "$P/$dst" && echo "  removed $PREFIX/$dst"; fi
    done
    rm -rf "$P/$PYDIR/__pycache__" "$P/$PYDIR/_autostart/__pycache__"
    # Our own folders always; the others (bin, lib, share/man, ...) only when
    # install created them, and only when empty. Deepest first.
    dirs=$( (
        [ -f "$P/$MANIFEST" ] && cat "$P/$MANIFEST"
        echo "$PYDIR/_autostart"; echo "$PYDIR"; echo share/leakwatch/python
        echo share/leakwatch; echo lib/leakwatch/stand-ins; echo lib/leakwatch; echo include/leakwatch
    ) | sort -u | awk '{print length($0) " " $0}' | sort -rn | cut -d' ' -f2-)
    rm -f "$P/$MANIFEST"
    for d in $dirs; do
        [ -d "$P/$d" ] && rmdir "$P/$d" 2>/dev/null || true
    done
    for d in share/leakwatch lib/leakwatch include/leakwatch; do
        [ -e "$P/$d" ] && echo "make uninstall: $PREFIX/$d holds files not installed by leakwatch: left as it is" >&2
    done
    echo "leakwatch uninstalled from $PREFIX"
}

case "$action" in
install) install_all ;;
uninstall) uninstall_all ;;
*) echo "install.sh: unknown action '$action'" >&2; exit 2 ;;
esac
