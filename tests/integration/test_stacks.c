/* SPDX-License-Identifier: Apache-2.0 */
/* Call stacks: the known-stack cache of the fast walker (docs/stacks.md)
 * against programs written to defeat it, and the fallback unwinder on a
 * machine without libunwind. Every run is made with
 * LEAKWATCH_VERIFY_STACKS=1: the harness fails a run whose recorded stacks
 * differ from a full unwind. */
#include "../check_run.h"
#include "harness.h"
#include "harness_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long long live_of(const lw_run *r, const char *fn) {
    const lw_json *site = lw_rep_site_named(r, fn);
    ck_assert_msg(site != NULL, "no site with a frame %s\nstderr: %s", fn, r->err);
    long long v = -1;
    ck_assert_int_eq(lw_json_int64(lw_json_get(site, "live_bytes"), &v), 0);
    return v;
}

/* Whether the report's stacks come from leakwatch's own walker (x86-64);
 * elsewhere every stack is the fallback's, and the cache is not there to test. */
static int has_walker(const lw_run *r) {
    const char *u = lw_json_string(lw_json_path(r->report, "tracker.unwinder"));
    int walker = u && strstr(u, "CFI walker") != NULL;
#if defined(__x86_64__)
    /* There it must be there: a walker that went missing must not turn the
     * checks below into skips. */
    ck_assert_msg(walker, "x86-64 stacks without leakwatch's CFI walker: unwinder %s",
                  u ? u : "(none)");
#endif
    return walker;
}

static void run_scenario(lw_run *r, const char *scenario, const char *const *env) {
    const char *args[] = {scenario, "400", NULL};
    lw_run_prog(r, 1, "rt_stacks", args, env);
    RUN_OK(r);
    ck_assert_ptr_nonnull(r->report);
}

/* Each scenario: zero differences (the harness checks), every stack by the
 * fast walker, and each leaking function's bytes on its own site. */
START_TEST(adversarial_stacks_are_exact) {
    static const char *const scenarios[] = {"recursion", "alloca",  "longjmp",
                                            "signals",   "threads", "samedepth",
                                            "optimised", "dlclose", "samedepth_nofp"};
    const char *env[] = {"LEAKWATCH_QUIET=1", "LEAKWATCH_WARN=0", "LEAKWATCH_MAX_FRAMES=128", NULL};
    for (size_t k = 0; k < sizeof scenarios / sizeof *scenarios; k++) {
        lw_run r;
        run_scenario(&r, scenarios[k], env);
        if (has_walker(&r)) {
            ck_assert_msg(lw_rep_int(&r, "tracker.stacks_verified") > 0, "%s: nothing verified",
                          scenarios[k]);
            ck_assert_msg(lw_rep_int(&r, "tracker.stacks_by_fallback_unwinder") == 0,
                          "%s: the fast walker gave up on %lld stacks", scenarios[k],
                          lw_rep_int(&r, "tracker.stacks_by_fallback_unwinder"));
        }
        if (!strcmp(scenarios[k], "samedepth")) {
            /* 400 calls each, every one leaks */
            ck_assert_int_eq(live_of(&r, "leak_same_a"), 400 * 6001);
            ck_assert_int_eq(live_of(&r, "leak_same_b"), 400 * 6002);
            ck_assert_int_eq(live_of(&r, "leak_same_c"), 400 * 6003);
        }
        if (!strcmp(scenarios[k], "samedepth_nofp")) {
            /* the same, told apart by one word checked alone */
            ck_assert_int_eq(live_of(&r, "leak_nofp_a"), 400 * 7101);
            ck_assert_int_eq(live_of(&r, "leak_nofp_b"), 400 * 7102);
            ck_assert_int_eq(live_of(&r, "leak_nofp_c"), 400 * 7103);
        }
        if (!strcmp(scenarios[k], "alloca")) {
            /* x and y take turns at the same stack pointer: 200 each */
            ck_assert_int_eq(live_of(&r, "outer_x"), 200 * 2100);
            ck_assert_int_eq(live_of(&r, "outer_y"), 200 * 2100);
        }
        lw_run_free(&r);
    }
}
END_TEST

/* The tests above can fail: a cache believed on its anchor alone, one that
 * confirms return addresses but not saved frame pointers, record wrong
 * stacks on these programs, and verification counts them. */
START_TEST(verification_catches_a_blind_cache) {
    lw_expect_stack_mismatches = 1;
    static const struct {
        const char *mode, *scenario;
    } cases[] = {{"trust-cache", "samedepth"}, {"trust-cache", "longjmp"}, {"ra-only", "alloca"}};
    /* No keep-rules control on the dlclose scenario: its libraries call CUDA
     * through leakwatch, and the hooks keep every calling module loaded
     * (src/loader/real.c), so its code never changes under a kept rule. The
     * dlclose scenario above still runs with verification. */
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char mode[64];
        snprintf(mode, sizeof mode, "LEAKWATCH_TEST_UNWIND=%s", cases[k].mode);
        const char *env[] = {"LEAKWATCH_QUIET=1", "LEAKWATCH_WARN=0", mode, NULL};
        lw_run r;
        run_scenario(&r, cases[k].scenario, env);
        if (!has_walker(&r)) {
            printf("test_stacks: no fast walker on this machine; cache controls skipped\n");
            lw_run_free(&r);
            break;
        }
        ck_assert_msg(lw_rep_int(&r, "tracker.stack_mismatches") > 0,
                      "%s on %s: no difference found", cases[k].mode, cases[k].scenario);
        ck_assert_msg(strstr(r.err, "LEAKWATCH_VERIFY_STACKS") != NULL, "no message: %s", r.err);
        lw_run_free(&r);
    }
    lw_expect_stack_mismatches = 0;
}
END_TEST

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* Without libunwind the shim still loads and records: libgcc_s's unwinder
 * takes the stacks the walker does not, and the shim says so once. */
START_TEST(records_without_libunwind) {
    for (int fallback_only = 0; fallback_only < 2; fallback_only++) {
        /* Not LEAKWATCH_QUIET: it silences the note (test_cli). */
        const char *env[] = {"LEAKWATCH_WARN=0", "LEAKWATCH_TEST_NO_LIBUNWIND=1",
                             fallback_only ? "LEAKWATCH_TEST_UNWIND=fallback" : NULL, NULL};
        lw_run r;
        const char *args[] = {"recursion", "50", NULL};
        lw_run_prog(&r, 1, "rt_stacks", args, env);
        RUN_OK(&r);
        const char *unwinder = lw_json_string(lw_json_path(r.report, "tracker.unwinder"));
        ck_assert_msg(unwinder && strstr(unwinder, "libgcc_s"), "unwinder %s", unwinder);
        ck_assert_int_eq(count(r.err, "libunwind.so.8 not found"), 1);
        long long by_fallback = lw_rep_int(&r, "tracker.stacks_by_fallback_unwinder");
        if (fallback_only || !has_walker(&r))
            ck_assert_int_gt(by_fallback, 0);
        else
            ck_assert_int_gt(lw_rep_int(&r, "tracker.stacks_verified"), 0);
        /* the stacks are whole: the leaking function and its callers */
        const lw_json *site = lw_rep_site_named(&r, "leak_recursion");
        ck_assert_msg(site != NULL, "no leak_recursion site; stderr %s", r.err);
        const lw_json *frames = lw_json_get(site, "frames");
        int recs = 0, has_main = 0;
        for (size_t j = 0; j < lw_json_len(frames); j++) {
            const char *fn = lw_json_string(lw_json_get(lw_json_at(frames, j), "function"));
            recs += fn && !strcmp(fn, "rec");
            has_main |= fn && !strcmp(fn, "main");
        }
        ck_assert_int_gt(recs, 0);
        ck_assert_int_eq(has_main, 1);
        lw_run_free(&r);
    }
}
END_TEST

/* The library needs nothing at run time beyond the C library. */
START_TEST(needs_only_glibc) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "readelf -d '%s/libleakwatch.so' 2>/dev/null", lw_build_dir());
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char line[512];
    int needed = 0;
    /* glibc, and the sanitizers' runtimes in the sanitizer builds (make check-san,
     * check-tsan) */
    static const char *const allowed[] = {"libc.so.",       "libm.so.",         "libdl.so.",
                                          "libpthread.so.", "ld-linux-x86-64.", "ld-linux-aarch64.",
                                          "libasan.so.",    "libubsan.so.",     "libtsan.so."};
    while (fgets(line, sizeof line, p)) {
        if (!strstr(line, "(NEEDED)")) continue;
        needed++;
        const char *lib = strchr(line, '[');
        ck_assert_ptr_nonnull(lib);
        int ok = 0;
        for (size_t k = 0; k < sizeof allowed / sizeof *allowed; k++)
            ok |= !strncmp(lib + 1, allowed[k], strlen(allowed[k]));
        ck_assert_msg(ok, "libleakwatch.so needs %s", lib);
    }
    int rc = pclose(p);
    if (needed == 0 && rc != 0) {
        printf("test_stacks: readelf not found; NEEDED entries not checked\n");
        return;
    }
    ck_assert_int_gt(needed, 0);
}
END_TEST

/* The line of tests/programs/rt_shared_wrapper.c that holds marker. */
static int marked_line(const char *marker) {
    FILE *f = fopen("tests/programs/rt_shared_wrapper.c", "r");
    ck_assert_ptr_nonnull(f);
    char buf[512];
    int line = 0, found = 0;
    while (!found && fgets(buf, sizeof buf, f)) {
        line++;
        if (strstr(buf, marker)) found = line;
    }
    fclose(f);
    ck_assert_int_gt(found, 0);
    return found;
}

/* A shared allocation wrapper in native code (issue 26, item 6): stash()
 * leaks and scratch() does not, both through device_alloc(). The live line,
 * the exit summary, the report and leakwatch report name stash's call of the
 * wrapper by way of it; before, all of them named device_alloc's line. */
START_TEST(shared_wrapper_names_the_caller) {
    char want[200], clean[200], place[200], line[300], bad[300];
    snprintf(want, sizeof want,
             "rt_shared_wrapper.c:%d in stash (via device_alloc, rt_shared_wrapper.c:%d)",
             marked_line("STASH-LINE"), marked_line("WRAPPER-LINE"));
    snprintf(clean, sizeof clean,
             "rt_shared_wrapper.c:%d in scratch (via device_alloc, rt_shared_wrapper.c:%d)",
             marked_line("SCRATCH-LINE"), marked_line("WRAPPER-LINE"));
    snprintf(place, sizeof place, "rt_shared_wrapper.c:%d in device_alloc",
             marked_line("WRAPPER-LINE"));
    snprintf(line, sizeof line, "LEAK in %s", want);
    snprintf(bad, sizeof bad, "LEAK in %s", place);
    lw_run r;
    const char *args[] = {"300", NULL};
    lw_run_prog(&r, 1, "rt_shared_wrapper", args, NULL);
    RUN_OK(&r);
    ck_assert_ptr_nonnull(r.report);
    ck_assert_msg(strstr(r.err, line) && !strstr(r.err, bad), "stderr:\n%s", r.err);
    ck_assert_str_eq(lw_json_string(lw_json_path(r.report, "answer.where.label")), want);
    ck_assert_str_eq(lw_json_string(lw_json_path(r.report, "answer.where.place_label")), place);
    const lw_json *sites = lw_json_get(r.report, "sites");
    ck_assert_int_eq(lw_json_len(sites), 2);
    for (size_t k = 0; k < 2; k++) {
        const lw_json *s = lw_json_at(sites, k);
        int leak = lw_json_bool(lw_json_get(s, "leak"), 0);
        ck_assert_str_eq(lw_json_string(lw_json_path(s, "where.label")), leak ? want : clean);
    }
    const char *rep[] = {"report", r.report_path, NULL};
    lw_run c;
    lw_cli_run(&c, rep, NULL);
    ck_assert_msg(c.exit_code == 0 && strstr(c.out, line) && strstr(c.out, clean) &&
                      !strstr(c.out, bad),
                  "report:\n%s%s", c.out, c.err);
    lw_run_free(&c);
    lw_run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("stacks");
    TCase *tc = tcase_create("stacks");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, adversarial_stacks_are_exact);
    tcase_add_test(tc, verification_catches_a_blind_cache);
    tcase_add_test(tc, records_without_libunwind);
    tcase_add_test(tc, needs_only_glibc);
    tcase_add_test(tc, shared_wrapper_names_the_caller);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
