#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The library's thread-local block stays small: it uses initial-exec TLS on
# its hot path, so `leakwatch attach` must load the whole block into the
# static TLS reserve of a running process, which glibc keeps small (about
# 1.6 KiB, shared with every library loaded later). A 1.9 KiB thread-local
# struct once made every attach fail with "cannot allocate memory in static
# TLS block". Keep large per-thread state on the heap behind a pointer.
#   check-static-tls.sh LIBRARY [LIMIT_BYTES]      (make check-layers)
set -eu
lib=$1
limit=${2:-1280}
command -v readelf >/dev/null 2>&1 || {
    echo "check-static-tls: FAILED: readelf is not installed (Debian package binutils)" >&2
    exit 2
}
hex=$(readelf -lW "$lib" | awk '$1 == "TLS" { print $6 }')
size=$((${hex:-0}))
if [ "$size" -gt "$limit" ]; then
    echo "check-static-tls: FAILED: $lib's thread-local block is $size bytes (at most $limit): an attach could not load it; put large per-thread state on the heap" >&2
    exit 1
fi
echo "check-static-tls: $lib's thread-local block is $size bytes (at most $limit)"
