#!/bin/sh
# Installs what leakwatch needs to build and test, when it is missing.
# Debian/Ubuntu: apt-get as root, or through sudo. Elsewhere: one message.
PKGS="build-essential pkg-config libunwind-dev uthash-dev check"
missing=""
have_pkgconf() { pkg-config --exists "$1" 2>/dev/null; }
command -v cc >/dev/null 2>&1 || missing="$missing build-essential"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
[ -f /usr/include/libunwind.h ] || have_pkgconf libunwind || missing="$missing libunwind-dev"
[ -f /usr/include/uthash.h ] || missing="$missing uthash-dev"
have_pkgconf check || missing="$missing check"
[ -z "$missing" ] && exit 0
echo "leakwatch: installing missing build dependencies:$missing" >&2
if command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO=none; fi
    if [ "$SUDO" != none ]; then
        export DEBIAN_FRONTEND=noninteractive
        $SUDO apt-get update -qq >/dev/null 2>&1 || true
        if $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null; then exit 0; fi
    fi
fi
echo "leakwatch: cannot install build dependencies here. Install these packages, then run make again:$missing" >&2
echo "           (Debian/Ubuntu: sudo apt-get install$missing)" >&2
exit 1
