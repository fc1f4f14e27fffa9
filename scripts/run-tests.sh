#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs each test binary given, with LW_BUILD set to the build folder, and
# fails if any fails. Each binary prints Check's own summary line. With
# LW_TEST_EXEC set (make check-aarch64: qemu-user), each runs through it.
B="$1"; shift
export LW_BUILD="$B"
status=0; failed=""
for t in "$@"; do
    # shellcheck disable=SC2086
    if ! $LW_TEST_EXEC "$t"; then status=1; failed="$failed $t"; fi
done
if [ $status -ne 0 ]; then echo "FAILED:$failed" >&2; fi
exit $status
