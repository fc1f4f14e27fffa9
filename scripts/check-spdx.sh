#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Fails when a source file (C, C++, Python, shell, Makefile, mk/*.mk) lacks the SPDX
# license line near its top (within its first 3 lines, after a #! line).
#   check-spdx.sh [DIR]
cd "${1:-.}" || exit 1
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
    files=$(git ls-files)
else
    files=$(find . -type f ! -path './build/*' | sed 's,^\./,,')
fi
missing=""
for f in $files; do
    case "$f" in
    *.c | *.h | *.cpp | *.py | *.sh | *.mk | Makefile | */Makefile | .ci/run) ;;
    *) continue ;;
    esac
    [ -f "$f" ] || continue
    head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || missing="$missing $f"
done
if [ -n "$missing" ]; then
    echo "check-spdx: these source files lack 'SPDX-License-Identifier: Apache-2.0' in their first lines:" >&2
    for f in $missing; do echo "  $f" >&2; done
    exit 1
fi
echo "check-spdx: every source file carries the Apache-2.0 SPDX line"
