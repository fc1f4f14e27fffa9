#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions a first report spends naming its frames (issue 44: the
# symbolisation of a PyTorch step's report), counted by valgrind's callgrind:
# bench/perf/sym_bench.c looks up N distinct return addresses inside one
# large library through the shared symbol cache, and only its lookups are
# counted (--toggle-collect). Source lines are off (addr2line is a process
# of its own).
#
#   bench/perf/callgrind_sym.sh BUILD_DIR [BASE_BUILD_DIR]
#
# BASE_BUILD_DIR: another build (main's, say: `git archive main | tar -x -C
# DIR && make -C DIR -j2 build/liblw_core.a`), whose liblw_core.a the same
# bench is linked against, for before/after on the same libraries.
#
# The libraries (LW_SYM_LIBS, default all four):
#   many      BUILD_DIR/bench/lib/libmanysyms.so: 20,000 exported functions,
#             each calling a static one of its own (40,000 in .symtab)
#   stripped  the same without .symtab (strip --strip-all): only the 20,000
#             exported ones have a name, as in Debian's libtorch_cpu (29,000
#             functions in .dynsym); the others go to dladdr's fallback
#   libstdc++ and libc of this machine (their .dynsym)
# LW_SYM_N: addresses per library (default 2000; a PyTorch report names
# about 1,700: 49 sites of 35 frames).
set -u
B=${1:?usage: callgrind_sym.sh BUILD_DIR [BASE_BUILD_DIR]}
BASE=${2:-}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
N=${LW_SYM_N:-2000}
LIBS=${LW_SYM_LIBS:-many stripped libstdc++ libc}
command -v valgrind >/dev/null || { echo "callgrind_sym: valgrind is not installed" >&2; exit 2; }
B=$(cd "$B" && pwd) || exit 2
for f in "$B/bench/sym_bench" "$B/bench/lib/libmanysyms.so"; do
    [ -e "$f" ] || { echo "callgrind_sym: $f is missing (make $B/bench/sym_bench $B/bench/lib/libmanysyms.so)" >&2; exit 2; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/lw-cgsym.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
BENCHES="this=$B/bench/sym_bench"
if [ -n "$BASE" ]; then
    BASE=$(cd "$BASE" && pwd) || exit 2
    [ -e "$BASE/liblw_core.a" ] || { echo "callgrind_sym: $BASE/liblw_core.a is missing" >&2; exit 2; }
    ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -I"$HERE/src/output" -o "$TMP/sym_bench_base" \
        "$HERE/bench/perf/sym_bench.c" "$BASE/liblw_core.a" -ldl -pthread -lm || exit 2
    BENCHES="base=$TMP/sym_bench_base $BENCHES"
fi
strip --strip-all -o "$TMP/libmanysyms-stripped.so" "$B/bench/lib/libmanysyms.so" || exit 2

lib_path() {
    case $1 in
    many) echo "$B/bench/lib/libmanysyms.so" ;;
    stripped) echo "$TMP/libmanysyms-stripped.so" ;;
    libstdc++ | libc)
        # The machine's own, by the path the loader gives it.
        local so=$1.so.6
        ${CC:-cc} -print-file-name="$so" | xargs readlink -f ;;
    *) echo "$1" ;;
    esac
}

printf '%-10s %-6s %8s %14s %12s\n' library build named instructions per_address
for lib in $LIBS; do
    path=$(lib_path "$lib")
    [ -e "$path" ] || { echo "callgrind_sym: no $lib ($path)" >&2; continue; }
    for b in $BENCHES; do
        tag=${b%%=*} bin=${b#*=}
        out="$TMP/$lib.$tag"
        valgrind --tool=callgrind --toggle-collect=sym_bench_symbolise \
            --callgrind-out-file="$out.cg" "$bin" "$path" "$N" >"$out.log" 2>&1 || {
            echo "callgrind_sym: $tag on $lib failed:" >&2
            tail -5 "$out.log" >&2
            continue
        }
        ir=$(sed -n 's/^summary: *//p;s/^totals: *//p' "$out.cg" | head -1 | awk '{print $1}')
        named=$(sed -n 's/^sym_bench: \([0-9]*\) of.*/\1/p' "$out.log")
        printf '%-10s %-6s %8s %14s %12s\n' "$lib" "$tag" "$named/$N" "$ir" "$((ir / N))"
        # Every answer, outside callgrind, to compare the two builds'.
        LW_SYM_PRINT=1 "$bin" "$path" "$N" >"$TMP/$lib.$tag.names" 2>&1
    done
    if [ -e "$TMP/$lib.base.names" ] && ! cmp -s "$TMP/$lib.base.names" "$TMP/$lib.this.names"; then
        echo "callgrind_sym: $lib: the builds name the addresses differently:" >&2
        diff "$TMP/$lib.base.names" "$TMP/$lib.this.names" | head -10 >&2
        status=1
    fi
done
exit "${status:-0}"
