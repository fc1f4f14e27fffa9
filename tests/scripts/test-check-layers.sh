#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/check-layers.sh on small objects compiled into a build folder of
# its own: a downward call passes; an upward call fails, also when a weak or
# duplicate definition in a lower layer hides it (the linker may pick the
# higher one); a folder the script does not know fails; two files that call
# each other fail (a known pair only warns); a loose object at the top of
# the objects' folder (a source at the top of src/) fails.
#   tests/scripts/test-check-layers.sh      (make check-scripts)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
CC="${CC:-cc}"
T=$(mktemp -d "${TMPDIR:-/tmp}/lw-check-layers.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
failed=0

# obj CASE PATH SOURCE: compiles SOURCE into $T/CASE/obj/PATH.o
obj() {
    mkdir -p "$(dirname "$T/$1/obj/$2")"
    printf '%s\n' "$3" >"$T/src.c"
    "$CC" -std=c11 -O1 -fPIC -c -o "$T/$1/obj/$2.o" "$T/src.c" || { echo "test-check-layers: cannot compile $2" >&2; exit 1; }
}
# expect CASE STATUS [TEXT]: check-layers on CASE exits STATUS (0 or 1) and,
# when given, says TEXT.
expect() {
    "$root/scripts/check-layers.sh" "$T/$1" >"$T/out" 2>&1
    got=$?
    if [ "$got" != "$2" ]; then
        failed=$((failed + 1))
        echo "test-check-layers: FAIL: $1: status $got, expected $2" >&2
        sed 's/^/    /' "$T/out" >&2
    elif [ -n "${3:-}" ] && ! grep -qF -- "$3" "$T/out"; then
        failed=$((failed + 1))
        echo "test-check-layers: FAIL: $1: no '$3' in:" >&2
        sed 's/^/    /' "$T/out" >&2
    fi
}

# A downward call, and the command calling the base layer: clean.
obj down base/util 'int lw_util(void) { return 1; }'
obj down track/live 'int lw_util(void); int lw_live(void) { return lw_util(); }'
obj down tools/cmd 'int lw_util(void); int lw_cmd(void) { return lw_util(); }'
obj down stubs/fake 'int lw_hook_alloc(void) { return 0; }'
expect down 0 "no upward call"

# A plain upward call: base calls the hooks.
obj up base/util 'int lw_hook_alloc(void); int lw_util(void) { return lw_hook_alloc(); }'
obj up hooks/driver 'int lw_hook_alloc(void) { return 2; }'
expect up 1 "base/util.o (base) calls lw_hook_alloc in hooks/driver.o (hooks)"

# A weak default in base, the real one in the hooks: track calls it. The
# first definition in symbol order is base's, which hid the call before.
obj weak base/dflt '__attribute__((weak)) int lw_hook_alloc(void) { return 0; }'
obj weak hooks/driver 'int lw_hook_alloc(void) { return 2; }'
obj weak track/live 'int lw_hook_alloc(void); int lw_live(void) { return lw_hook_alloc(); }'
expect weak 1 "track/live.o (track) calls lw_hook_alloc in hooks/driver.o (hooks)"

# The weak default called only from its own object: no undefined symbol in
# any object, the two definitions alone show the call.
obj weakself base/dflt '__attribute__((weak)) int lw_hook_alloc(void) { return 0; }
int lw_util(void) { return lw_hook_alloc(); }'
obj weakself hooks/driver 'int lw_hook_alloc(void) { return 2; }'
expect weakself 1 "lw_hook_alloc is defined in two layers"

# A duplicate (strong) definition in output and the hooks: the command links
# the archives, where the first member found wins.
obj dup output/report 'int lw_answer(void) { return 0; }'
obj dup hooks/lookup 'int lw_answer(void) { return 1; }'
obj dup analyze/growth 'int lw_answer(void); int lw_growth(void) { return lw_answer(); }'
expect dup 1 "analyze/growth.o (analyze) calls lw_answer in output/report.o (output)"

# The command may use the base and vocab layers only, also when base has a copy.
obj toolsdup base/util '__attribute__((weak)) int lw_rank(void) { return 0; }'
obj toolsdup track/sites 'int lw_rank(void) { return 1; }'
obj toolsdup tools/cmd 'int lw_rank(void); int lw_cmd(void) { return lw_rank(); }'
expect toolsdup 1 "tools/cmd.o (tools) calls lw_rank in track/sites.o (track)"

# The layers between base and track: vocab (the report's words, which the
# command may use too) and loader (the real functions, dlclose), in that order.
obj mid base/util 'int lw_util(void) { return 1; }'
obj mid vocab/verdict 'int lw_util(void); int lw_verdict(void) { return lw_util(); }'
obj mid loader/real 'int lw_util(void); int lw_verdict(void); int lw_real(void) { return lw_util() + lw_verdict(); }'
obj mid track/stack 'int lw_real(void); int lw_verdict(void); int lw_stack(void) { return lw_real() + lw_verdict(); }'
obj mid tools/cmd 'int lw_util(void); int lw_verdict(void); int lw_cmd(void) { return lw_util() + lw_verdict(); }'
expect mid 0 "no upward call"

obj toolsloader loader/real 'int lw_real(void) { return 1; }'
obj toolsloader tools/cmd 'int lw_real(void); int lw_cmd(void) { return lw_real(); }'
expect toolsloader 1 "tools/cmd.o (tools) calls lw_real in loader/real.o (loader)"

obj loaderup loader/real 'int lw_stack(void); int lw_real(void) { return lw_stack(); }'
obj loaderup track/stack 'int lw_stack(void) { return 1; }'
expect loaderup 1 "loader/real.o (loader) calls lw_stack in track/stack.o (track)"

obj vocabup vocab/fmt 'int lw_real(void); int lw_fmt(void) { return lw_real(); }'
obj vocabup loader/real 'int lw_real(void) { return 1; }'
expect vocabup 1 "vocab/fmt.o (vocab) calls lw_real in loader/real.o (loader)"

obj baseup base/log 'int lw_verdict(void); int lw_log(void) { return lw_verdict(); }'
obj baseup vocab/verdict 'int lw_verdict(void) { return 1; }'
expect baseup 1 "base/log.o (base) calls lw_verdict in vocab/verdict.o (vocab)"

# attach, above the hooks: it may call them (and everything below); the
# hooks may not call it, nor may the command.
obj attach hooks/got 'int lw_got_write(void) { return 1; }'
obj attach process/lifecycle 'int lw_lifecycle_attach(void) { return 0; }'
obj attach attach/attach 'int lw_got_write(void); int lw_lifecycle_attach(void);
int lw_attach_now(void) { return lw_got_write() + lw_lifecycle_attach(); }'
expect attach 0 "no upward call"

obj hooksup hooks/driver 'int lw_patch_installed(void); int lw_hook(void) { return lw_patch_installed(); }'
obj hooksup attach/patch 'int lw_patch_installed(void) { return 1; }'
expect hooksup 1 "hooks/driver.o (hooks) calls lw_patch_installed in attach/patch.o (attach)"

obj toolsattach attach/attach 'int lw_attach_now(void) { return 1; }'
obj toolsattach tools/attach/inject 'int lw_attach_now(void); int lw_inject(void) { return lw_attach_now(); }'
expect toolsattach 1 "tools/attach/inject.o (tools) calls lw_attach_now in attach/attach.o (attach)"

# Two files of one layer that call each other: a circle, which fails, also
# through data; one way passes.
obj circle loader/real 'int lw_epoch(void); int lw_real(void) { return lw_epoch(); }'
obj circle loader/code_epoch 'int lw_real(void); int lw_epoch(void) { return lw_real(); }'
expect circle 1 "loader/code_epoch.o and loader/real.o call each other: loader/code_epoch.o calls lw_real, loader/real.o calls lw_epoch"

obj circledata track/a 'extern int lw_b_count; int lw_a_count; int lw_a(void) { return lw_b_count; }'
obj circledata track/b 'extern int lw_a_count; int lw_b_count; int lw_b(void) { return lw_a_count; }'
expect circledata 1 "track/a.o and track/b.o call each other"

obj oneway loader/real 'int lw_real(void) { return 1; }'
obj oneway loader/code_epoch 'int lw_real(void); int lw_epoch(void) { return lw_real(); }'
expect oneway 0 "no circle of files"

# A pair being removed elsewhere (KNOWN_CIRCLES, here given by
# LW_KNOWN_CIRCLES) warns and passes.
obj known hooks/bind 'int lw_hook(void); int lw_bind(void) { return lw_hook(); }'
obj known hooks/runtime 'int lw_bind(void); int lw_hook(void) { return lw_bind(); }'
LW_KNOWN_CIRCLES="hooks/bind.o hooks/runtime.o"
export LW_KNOWN_CIRCLES
expect known 0 "warning: a known circle, being removed: hooks/bind.o calls lw_hook in hooks/runtime.o, hooks/runtime.o calls lw_bind in hooks/bind.o"

unset LW_KNOWN_CIRCLES

# The report and its files no longer call each other: no longer a known pair.
obj reportfile output/report 'int lw_file(void); int lw_report(void) { return lw_file(); }'
obj reportfile output/report_file 'int lw_report(void); int lw_file(void) { return lw_report(); }'
expect reportfile 1 "output/report.o and output/report_file.o call each other"

# A circle of three files (hook_names -> late_dlopen -> patch -> hook_names).
obj three attach/hook_names 'int lw_late(void); int lw_names(void) { return lw_late(); }'
obj three attach/late_dlopen 'int lw_patch(void); int lw_late(void) { return lw_patch(); }'
obj three attach/patch 'int lw_names(void); int lw_patch(void) { return lw_names(); }'
obj three attach/attach 'int lw_names(void); int lw_attach(void) { return lw_names(); }'
expect three 1 "a circle of 3 files: attach/hook_names.o calls lw_late in attach/late_dlopen.o, attach/late_dlopen.o calls lw_patch in attach/patch.o, attach/patch.o calls lw_names in attach/hook_names.o"

# A source at the top of src/ (its object at the top of obj/) fails.
obj loose worker 'int lw_worker(void) { return 0; }'
obj loose base/util 'int lw_util(void) { return 1; }'
expect loose 1 "worker.o: a loose source at the top of src/"

# A folder that is no layer would go unchecked: it fails.
obj unknown plugins/late 'int lw_plugin(void) { return 0; }'
expect unknown 1 "folder plugins is no known layer"

if [ $failed -ne 0 ]; then
    echo "test-check-layers: $failed failed"
    exit 1
fi
echo "test-check-layers: scripts/check-layers.sh fails on upward calls, weak or duplicate definitions included, on two files that call each other and on a loose source"
