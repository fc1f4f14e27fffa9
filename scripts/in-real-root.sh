#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs a command inside the real-clients root (Debian trixie's real PyTorch,
# numba and PyCUDA, unpacked by scripts/setup-real-clients.sh), through that
# root's own loader and C library: a private mount namespace (nothing is left
# mounted when the command ends) with /proc, /dev, /tmp and this checkout
# bound at the same paths, then chroot, a clean environment, and the command
# run from this checkout's folder. Needs root (mount, chroot).
#
#   in-real-root.sh ROOT [VAR=VALUE...] CMD [ARG...]
set -eu
[ $# -ge 2 ] || {
    echo "usage: in-real-root.sh ROOT [VAR=VALUE...] CMD [ARG...]" >&2
    exit 64
}
root=$1
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
exec unshare -m --propagation private sh -c '
root=$1 repo=$2
shift 2
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --bind /tmp "$root/tmp"
mkdir -p "$root$repo"
mount --bind "$repo" "$root$repo"
exec chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    TERM=dumb /bin/sh -c "cd \"\$0\" && exec /usr/bin/env \"\$@\"" "$repo" "$@"
' sh "$root" "$repo" "$@"
