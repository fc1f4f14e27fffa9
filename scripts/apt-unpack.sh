#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Downloads Debian packages of one suite and architecture and unpacks them
# into a folder, without installing anything and without touching the
# system's apt configuration or package state: the suite goes into a private
# sources list, and apt's lists and cache live under WORK (Dir::Etc /
# Dir::State / Dir::Cache settings). Used by setup-python314.sh,
# setup-arm64-sysroot.sh and setup-nvidia-debian.sh.
#
#   apt-unpack.sh SUITE ARCH WORK ROOT PKG...
#     SUITE  sid, bookworm, ...      ARCH  amd64, arm64, ...
#     WORK   scratch folder (kept: apt.log; lists are removed at the end)
#     ROOT   where the packages are unpacked (dpkg-deb -x)
#     PKG    package names; a name ending in '?' is optional (skipped when
#            the suite does not have it)
#
# Exit status: 0 done; 2 the mirror cannot be reached (no network); 3 a
# required package is missing; 4 a download failed. Says why on stderr.
# LW_DEBIAN_MIRROR overrides the mirror (default http://deb.debian.org/debian);
# LW_APT_COMPONENTS the archive components (default main).
# LW_APT_CLOSURE=1 unpacks the packages' whole dependency closure (as apt
# would install it on an empty system, without recommends), except the
# packages named in LW_APT_ASSUME_INSTALLED, which apt takes as present
# (setup-real-clients.sh: NVIDIA's libraries, replaced by stand-ins).
set -eu
[ $# -ge 5 ] || {
    echo "usage: apt-unpack.sh SUITE ARCH WORK ROOT PKG..." >&2
    exit 64
}
suite=$1 arch=$2 work=$3 root=$4
shift 4
mirror="${LW_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
components="${LW_APT_COMPONENTS:-main}"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
    echo "apt-unpack: apt-get/dpkg-deb not available" >&2
    exit 2
fi
[ -f "$keyring" ] || {
    echo "apt-unpack: no Debian archive keyring ($keyring)" >&2
    exit 2
}

apt_dir="$work/apt"
rm -rf "$apt_dir"
mkdir -p "$apt_dir/etc/sources.list.d" "$apt_dir/etc/preferences.d" "$apt_dir/etc/apt.conf.d" \
    "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$work/debs" "$root"
echo "deb [arch=$arch signed-by=$keyring] $mirror $suite $components" >"$apt_dir/etc/sources.list"
: >"$apt_dir/status"
# A package taken as installed satisfies any versioned dependency on it
# (libcuda1 also the virtual libcuda.so.1 that some packages ask for).
for p in ${LW_APT_ASSUME_INSTALLED:-}; do
    provides=""
    [ "$p" = libcuda1 ] && provides="Provides: libcuda.so.1 (= 99999)\n"
    printf "Package: %s\nStatus: install ok installed\nPriority: optional\nSection: libs\nArchitecture: %s\nVersion: 99999\n${provides}Description: taken as installed\n\n" \
        "$p" "$arch" >>"$apt_dir/status"
done
pkgs="$*"
# Every path apt reads or writes points into WORK. As root, apt would drop to
# the _apt user for downloads, which may not be able to write there.
set -- -q -o Dir::Etc="$apt_dir/etc" -o Dir::Etc::sourcelist="$apt_dir/etc/sources.list" \
    -o Dir::Etc::sourceparts="$apt_dir/etc/sources.list.d" \
    -o Dir::Etc::preferencesparts="$apt_dir/etc/preferences.d" \
    -o Dir::Etc::parts="$apt_dir/etc/apt.conf.d" \
    -o Dir::State="$apt_dir" -o Dir::State::Lists="$apt_dir/lists" \
    -o Dir::State::status="$apt_dir/status" -o Dir::Cache="$apt_dir/cache" \
    -o APT::Architecture="$arch" -o APT::Architectures="$arch" \
    -o Acquire::Languages=none -o Acquire::Retries=2 -o APT::Sandbox::User="$(id -un)"

log="$work/apt.log"
echo "apt-unpack: fetching the package list of $suite ($arch)" >&2
if ! timeout 600 apt-get "$@" update >"$log" 2>&1 ||
    grep -q '^\(W\|E\): Failed to fetch' "$log"; then
    echo "apt-unpack: cannot reach $mirror ($suite, $arch): see $log" >&2
    exit 2
fi
want=""
for p in $pkgs; do
    name=${p%\?}
    if apt-cache "$@" show "$name" >/dev/null 2>&1; then
        want="$want $name"
    elif [ "$name" = "$p" ]; then
        echo "apt-unpack: $suite has no $name for $arch" >&2
        exit 3
    fi
done
if [ "${LW_APT_CLOSURE:-0}" = 1 ]; then
    # shellcheck disable=SC2086
    if ! apt-get "$@" -s install --no-install-recommends $want >"$work/closure.log" 2>&1; then
        echo "apt-unpack: the dependencies of$want cannot be resolved: see $work/closure.log" >&2
        exit 3
    fi
    want=$(awk '/^Inst /{printf " %s", $2}' "$work/closure.log")
fi
rm -f "$work/debs"/*.deb
# shellcheck disable=SC2086
if ! (cd "$work/debs" && timeout 900 apt-get "$@" download $want) >>"$log" 2>&1; then
    echo "apt-unpack: download failed: see $log" >&2
    exit 4
fi
for deb in "$work/debs"/*.deb; do
    dpkg-deb -x "$deb" "$root"
done
rm -rf "$work/debs" "$apt_dir/cache" "$apt_dir/lists"
exit 0
