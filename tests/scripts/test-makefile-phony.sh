#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Makefile keeps its goals that name no file in one .PHONY list, and
# every such goal (a rule whose target is a plain word: all, check-layers,
# ...), in the Makefile or in the fragments it includes (mk/*.mk), is in it.
#   tests/scripts/test-makefile-phony.sh      (make check-scripts)
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
mk="$root/Makefile"
n=$(cat "$mk" "$root"/mk/*.mk | grep -c '^\.PHONY:')
[ "$n" = 1 ] && grep -q '^\.PHONY:' "$mk" ||
    { echo "test-makefile-phony: FAIL: $n .PHONY lists in the Makefile and mk/*.mk, expected one, in the Makefile" >&2; exit 1; }
# The list, continuation lines joined.
phony=" $(sed -n '/^\.PHONY:/,/[^\\]$/p' "$mk" | tr -d '\\\n' | sed 's/^\.PHONY://') "
missing=""
for t in $(cat "$mk" "$root"/mk/*.mk | grep -o '^[a-z][a-z0-9-]*:' | tr -d : | sort -u); do
    case "$phony" in *" $t "*) ;; *) missing="$missing $t" ;; esac
done
[ -z "$missing" ] || { echo "test-makefile-phony: FAIL: goals not in .PHONY:$missing" >&2; exit 1; }
echo "test-makefile-phony: one .PHONY list, holding every goal that names no file"
