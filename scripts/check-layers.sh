#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Fails when a lower layer of the library calls a higher one, read from the
# compiled objects' symbols (nm): a call is an undefined symbol in one object
# that another object defines. Layers, lowest first (docs/layout.md):
#   base < vocab < loader < track < analyze < output < process < hooks
#   < attach
# The command (tools/) may use the base and vocab layers only.
# Two more rules on the library's files, from the same symbols:
# - no circle of files: a file that calls another (or uses its data) is not
#   reached back from it, directly or through other files, so the calls
#   between files go one way (KNOWN_CIRCLES below lists the files of the
#   circles being removed elsewhere: a warning, not a failure);
# - no loose file at the top of src/: every source is in a layer's folder
#   (an object build/obj/NAME.o, but the command's empty.o, fails).
# Every definition of a called symbol counts, not only the first: a weak or
# duplicate definition in a lower layer does not hide the higher one that the
# linker may pick. And a symbol defined in two layers fails by itself (the
# lower one's own calls to it, which nm does not show as undefined, may reach
# the higher one).
# One nm over all objects and one awk: a second or less.
#   check-layers.sh BUILD_DIR
B="${1:-build}"
command -v nm >/dev/null 2>&1 ||
    { echo "check-layers: FAILED: nm is not installed (Debian package binutils; scripts/install-deps.sh test installs it)" >&2; exit 1; }
# The files still in a circle, each being removed by work under way (issue
# 39): a circle of these files only is warned about, not failed on. Remove
# them from the list once their circle is gone. None now (the report and its
# files, the hooks' tables and wrappers were the last).
KNOWN_CIRCLES="${LW_KNOWN_CIRCLES-}"
loose=$(find "$B/obj" -maxdepth 1 -name '*.o' ! -name empty.o | LC_ALL=C sort)
if [ -n "$loose" ]; then
    for o in $loose; do
        echo "check-layers: $o: a loose source at the top of src/: put $(basename "$o" .o).c in the folder of its layer (docs/layout.md)" >&2
    done
    exit 1
fi
objs=$(find "$B/obj" -name '*.o' | LC_ALL=C sort)
[ -n "$objs" ] || { echo "check-layers: no objects under $B/obj: run make first" >&2; exit 1; }
syms=$(mktemp); trap 'rm -f "$syms"' EXIT
# POSIX format, each line "OBJECT: SYMBOL TYPE [VALUE SIZE]", external symbols.
# shellcheck disable=SC2086
nm -A -P -g $objs >"$syms" || { echo "check-layers: nm failed" >&2; exit 1; }
awk -v B="$B/obj/" -v known="$KNOWN_CIRCLES" '
function layer(f, rel) { # build/obj/track/live.o -> track; build/obj/x.o -> loose
    rel = substr(f, length(B) + 1)
    return index(rel, "/") ? substr(rel, 1, index(rel, "/") - 1) : "loose"
}
BEGIN {
    split("base vocab loader track analyze output process hooks attach", order, " ")
    for (i in order) rank[order[i]] = i + 0
    rank["tools"] = 99
    nk = split(known, kp, " ")
    for (i = 1; i <= nk; i++) known_file[kp[i]] = 1
}
{
    f = $1; sub(/:$/, "", f); sym = $2; t = $3
    l = layer(f)
    if (l == "stubs") next # CPU stand-ins of the tests (make test-bins): no layer
    if (!(l in rank)) { # a folder no rule covers would go unchecked
        if (!(l in unknown)) printf "check-layers: %s: folder %s is no known layer (scripts/check-layers.sh)\n", rel(f), l > "/dev/stderr"
        unknown[l] = 1; bad = 1
        next
    }
    if (t == "U" || t == "w" || t == "v") { # undefined (lowercase w, v: weak undefined)
        nref++; rf[nref] = f; rl[nref] = l; rs[nref] = sym
    } else {
        nd[sym]++; df[sym, nd[sym]] = f; dl[sym, nd[sym]] = l; dt[sym, nd[sym]] = t
    }
}
function rel(f) { return substr(f, length(B) + 1) }
function allowed(from, to) { # may a caller in layer from reach layer to?
    if (from == "tools") return to == "tools" || to == "base" || to == "vocab"
    return rank[to] <= rank[from]
}
# Circles of files: the files each reaches through its calls (reach[a, b]),
# then each set of files that reach one another, named by its first file.
function circles(e, ab, n, v, w, k, j, nb, top, stack, a, b, id, m, line, known_all) {
    for (e in edge) {
        split(e, ab, SUBSEP)
        adj[ab[1]] = adj[ab[1]] " " ab[2]
        node[ab[1]] = node[ab[2]] = 1
    }
    for (n in node) {
        top = 0
        stack[++top] = n
        while (top) {
            v = stack[top--]
            k = split(adj[v], nb, " ")
            for (j = 1; j <= k; j++) {
                w = nb[j]
                if (!((n, w) in reach)) { reach[n, w] = 1; stack[++top] = w }
            }
        }
    }
    for (a in node) {
        if (!((a, a) in reach)) continue
        id = a
        for (b in node)
            if (b < id && (a, b) in reach && (b, a) in reach) id = b
        members[id] = insert(members[id], a)
    }
    for (id in members) {
        m = split(members[id], ab, " ")
        known_all = 1
        line = ""
        for (j = 1; j <= m; j++) {
            if (!(ab[j] in known_file)) known_all = 0
            # one call of each file to another of the circle
            for (k = 1; k <= m; k++)
                if ((ab[j], ab[k]) in edge) {
                    line = line (j > 1 ? ", " : "") ab[j] " calls " edge[ab[j], ab[k]] " in " ab[k]
                    break
                }
        }
        if (m == 2 && !known_all)
            printf "check-layers: %s and %s call each other: %s calls %s, %s calls %s; make the calls go one way\n",
                ab[1], ab[2], ab[1], edge[ab[1], ab[2]], ab[2], edge[ab[2], ab[1]] > "/dev/stderr"
        else if (known_all)
            printf "check-layers: warning: a known circle, being removed: %s\n", line > "/dev/stderr"
        else
            printf "check-layers: a circle of %d files: %s; make the calls go one way\n", m, line > "/dev/stderr"
        if (!known_all) bad = 1
    }
}
# list, a space-separated sorted list of names, with name added in its place.
function insert(list, name, parts, n, i, out, done) {
    n = split(list, parts, " ")
    out = ""
    for (i = 1; i <= n; i++) {
        if (!done && name < parts[i]) { out = out " " name; done = 1 }
        out = out " " parts[i]
    }
    if (!done) out = out " " name
    return substr(out, 2)
}
END {
    for (i = 1; i <= nref; i++) {
        s = rs[i]
        for (k = 1; k <= nd[s]; k++) {
            # A call between two files of the library: one edge of the
            # file graph (the first symbol that makes it is named).
            if (rl[i] != "tools" && dl[s, k] != "tools" && rf[i] != df[s, k] &&
                !((rel(rf[i]), rel(df[s, k])) in edge))
                edge[rel(rf[i]), rel(df[s, k])] = s
            if (allowed(rl[i], dl[s, k])) continue
            printf "check-layers: %s (%s) calls %s in %s (%s)%s\n", rel(rf[i]), rl[i], s, rel(df[s, k]),
                dl[s, k], (nd[s] > 1 ? " (one of its " nd[s] " definitions)" : "") > "/dev/stderr"
            bad = 1
        }
    }
    for (s in nd) {
        if (nd[s] < 2) continue
        for (k = 2; k <= nd[s]; k++) {
            if (dl[s, k] == dl[s, 1]) continue
            desc = ""
            for (j = 1; j <= nd[s]; j++)
                desc = desc (j > 1 ? ", " : "") rel(df[s, j]) " (" dl[s, j] ", " dt[s, j] ")"
            printf "check-layers: %s is defined in two layers: %s; the lower one hides a call to the higher\n",
                s, desc > "/dev/stderr"
            bad = 1
            break
        }
    }
    circles()
    exit bad
}' "$syms" || {
    echo "check-layers: a lower layer calls a higher one, or files call each other in a circle (see docs/layout.md)" >&2
    exit 1
}
echo "check-layers: base < vocab < loader < track < analyze < output < process < hooks < attach, the command uses base and vocab only: no upward call and no circle of files"
