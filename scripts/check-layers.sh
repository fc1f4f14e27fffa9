#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Fails when a lower layer of the library calls a higher one, read from the
# compiled objects' symbols (nm): a call is an undefined symbol in one object
# that another object defines. Layers, lowest first (README "Layout"):
#   base < track < analyze < output < top (src/*.c) < hooks
# The command (tools/) may use the base layer only.
#   check-layers.sh BUILD_DIR
B="${1:-build}"
command -v nm >/dev/null 2>&1 ||
    { echo "check-layers: FAILED: nm is not installed (Debian package binutils; scripts/install-deps.sh test installs it)" >&2; exit 1; }
objs=$(find "$B/obj" -name '*.o' | sort)
[ -n "$objs" ] || { echo "check-layers: no objects under $B/obj: run make first" >&2; exit 1; }
rank() {
    case "$1" in
    base) echo 0 ;; track) echo 1 ;; analyze) echo 2 ;; output) echo 3 ;;
    top) echo 4 ;; hooks) echo 5 ;; tools) echo 9 ;; *) echo -1 ;;
    esac
}
layer() { # build/obj/track/live.o -> track; build/obj/lifecycle.o -> top
    rel=${1#"$B/obj/"}
    case "$rel" in */*) echo "${rel%%/*}" ;; *) echo top ;; esac
}
defs=$(mktemp); trap 'rm -f "$defs"' EXIT
for o in $objs; do
    l=$(layer "$o")
    [ "$(rank "$l")" -ge 0 ] || continue
    nm --defined-only -g "$o" | awk -v l="$l" -v f="$o" 'NF == 3 { print $3, l, f }'
done | sort -k1,1 >"$defs"
bad=0
for o in $objs; do
    l=$(layer "$o"); r=$(rank "$l")
    [ "$r" -ge 0 ] || continue
    for sym in $(nm -u "$o" | awk '{ print $2 }'); do
        line=$(grep -m1 "^$sym " "$defs") || continue
        tl=$(echo "$line" | cut -d' ' -f2); tf=$(echo "$line" | cut -d' ' -f3)
        tr=$(rank "$tl")
        if [ "$l" = tools ]; then
            [ "$tl" = tools ] || [ "$tl" = base ] && continue
        elif [ "$tr" -le "$r" ]; then
            continue
        fi
        echo "check-layers: ${o#"$B/obj/"} ($l) calls $sym in ${tf#"$B/obj/"} ($tl)" >&2
        bad=1
    done
done
[ $bad = 0 ] || { echo "check-layers: a lower layer calls a higher one (see README \"Layout\")" >&2; exit 1; }
echo "check-layers: base < track < analyze < output < top < hooks, and the command uses base only: no upward call"
