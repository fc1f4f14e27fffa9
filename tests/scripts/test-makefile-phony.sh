#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Makefile keeps its goals that name no file in one .PHONY list, and
# every such goal (a rule whose target is a plain word: all, check-layers,
# ...) is in it.
#   tests/scripts/test-makefile-phony.sh      (make check-scripts)
set -u
mk="$(cd "$(dirname "$0")/../.." && pwd)/Makefile"
n=$(grep -c '^\.PHONY:' "$mk")
[ "$n" = 1 ] || { echo "test-makefile-phony: FAIL: $n .PHONY lists in the Makefile, expected one" >&2; exit 1; }
# The list, continuation lines joined.
phony=" $(sed -n '/^\.PHONY:/,/[^\\]$/p' "$mk" | tr -d '\\\n' | sed 's/^\.PHONY://') "
missing=""
for t in $(grep -o '^[a-z][a-z0-9-]*:' "$mk" | tr -d : | sort -u); do
    case "$phony" in *" $t "*) ;; *) missing="$missing $t" ;; esac
done
[ -z "$missing" ] || { echo "test-makefile-phony: FAIL: goals not in .PHONY:$missing" >&2; exit 1; }
echo "test-makefile-phony: one .PHONY list, holding every goal that names no file"
