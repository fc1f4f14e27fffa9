/* SPDX-License-Identifier: Apache-2.0 */
/* Verdicts end to end: example training loops run under the shim on the CPU
 * stand-ins, with and without the leak, with marked and unmarked steps. */
#include "../check_run.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void run_example(lw_run *r, const char *const *args, const char *const *env) {
    char exe[4200];
    snprintf(exe, sizeof exe, "%s/examples/train_loop", lw_build_dir());
    lw_run_exe(r, 1, exe, args, env);
    RUN_OK(r);
    ck_assert_msg(r->report != NULL, "no report; stderr: %s", r->err);
}

static const char *str_at(const lw_run *r, const char *path) {
    const char *s = lw_json_string(lw_json_path(r->report, path));
    ck_assert_msg(s != NULL, "no string at %s", path);
    return s;
}

static double num_at(const lw_run *r, const char *path) {
    const lw_json *v = lw_json_path(r->report, path);
    ck_assert_msg(lw_json_type_of(v) == LW_JSON_NUMBER, "no number at %s", path);
    return lw_json_number(v, NAN);
}

START_TEST(marked_leak_is_found_and_attributed) {
    lw_run r;
    const char *args[] = {"--steps", "300", "--leak", "512", NULL};
    run_example(&r, args, NULL);
    ck_assert_str_eq(str_at(&r, "verdict"), "leak");
    ck_assert_str_eq(str_at(&r, "growth.step_source"), "marker");
    ck_assert_double_eq_tol(num_at(&r, "growth.bytes_per_step"), 512, 1e-6);
    ck_assert(num_at(&r, "growth.slope_ci[0]") <= 512 && num_at(&r, "growth.slope_ci[1]") >= 512);
    ck_assert(num_at(&r, "growth.p_value") < 1e-3);
    ck_assert(num_at(&r, "growth.oom_eta_steps") > 0);
    ck_assert(num_at(&r, "growth.oom_eta_seconds") > 0);
    ck_assert_int_eq(lw_rep_int(&r, "growth.steps"), 300);
    /* A steady leak with a deterministic floor: called within 100 steps. */
    ck_assert_int_le(lw_rep_int(&r, "growth.first_leak_step"), 100);
    /* The leaking site comes first, marked, with its own rate. */
    const lw_json *site = lw_rep_site_named(&r, "keep_loss_history");
    ck_assert_ptr_nonnull(site);
    ck_assert_ptr_eq(site, lw_json_path(r.report, "sites[0]"));
    ck_assert_int_eq(lw_json_bool(lw_json_get(site, "leak"), 0), 1);
    ck_assert_double_eq_tol(lw_json_number(lw_json_get(site, "bytes_per_step"), 0), 512, 1e-6);
    /* Other sites (weights, activations) are not blamed. */
    const lw_json *sites = lw_json_get(r.report, "sites");
    for (size_t i = 1; i < lw_json_len(sites); i++)
        ck_assert_int_eq(lw_json_bool(lw_json_get(lw_json_at(sites, i), "leak"), 1), 0);
    /* The series for plotting. */
    ck_assert_uint_gt(lw_json_len(lw_json_path(r.report, "series.floor")), 24);
    ck_assert_uint_eq(lw_json_len(lw_json_path(r.report, "series.floor")),
                      lw_json_len(lw_json_path(r.report, "series.x")));
    /* The live warning, once (it says at which step it was computed; the
     * exit summary's first line is the same answer, now). */
    const char *w = strstr(r.err, "leakwatch: LEAK in ");
    ck_assert_msg(w != NULL && strstr(w, "[as of step"), "stderr: %s", r.err);
    const char *again = strstr(strstr(w, "[as of step") + 1, "[as of step");
    ck_assert_msg(again == NULL, "two warnings: %s", r.err);
    ck_assert_msg(strstr(r.err, "keep_loss_history"), "stderr: %s", r.err);
    lw_run_free(&r);
}
END_TEST

START_TEST(fixed_loop_is_no_leak) {
    lw_run r;
    const char *args[] = {"--steps", "300", "--leak", "0", NULL};
    run_example(&r, args, NULL);
    ck_assert_str_eq(str_at(&r, "verdict"), "no_leak");
    ck_assert_ptr_null(strstr(r.err, "LEAK"));
    const lw_json *sites = lw_json_get(r.report, "sites");
    for (size_t i = 0; i < lw_json_len(sites); i++)
        ck_assert_int_eq(lw_json_bool(lw_json_get(lw_json_at(sites, i), "leak"), 1), 0);
    lw_run_free(&r);
}
END_TEST

START_TEST(few_steps_are_inconclusive) {
    lw_run r;
    const char *args[] = {"--steps", "10", "--leak", "512", NULL};
    run_example(&r, args, NULL);
    ck_assert_str_eq(str_at(&r, "verdict"), "inconclusive");
    lw_run_free(&r);
}
END_TEST

START_TEST(unmarked_steps_use_time_intervals) {
    lw_run r;
    /* 2 ms steps, 20 ms intervals: each interval holds ten leaks. The steps'
     * time is the test clock's (LEAKWATCH_TEST_CLOCK: the job moves the
     * run's time and the sampler closes each interval on time), so the
     * intervals see the same growth whatever the machine's load. */
    const char *args[] = {"--steps",    "1500",      "--leak", "4096",
                          "--no-marks", "--step-us", "2000",   NULL};
    const char *env[] = {"LEAKWATCH_INTERVAL_MS=20", "LEAKWATCH_TEST_CLOCK=1", NULL};
    run_example(&r, args, env);
    ck_assert_str_eq(str_at(&r, "growth.step_source"), "time");
    ck_assert_msg(!strcmp(str_at(&r, "verdict"), "leak"), "verdict %s: %s\n%s",
                  str_at(&r, "verdict"), str_at(&r, "growth.reason"), r.err);
    /* 3 s of the job's time in 20 ms intervals. */
    ck_assert_int_eq(lw_rep_int(&r, "growth.steps"), 150);
    /* Ten leaks of 4 KiB each 20 ms. */
    ck_assert_double_eq_tol(num_at(&r, "growth.bytes_per_second"), 4096 * 500, 1e-6);
    const lw_json *site = lw_rep_site_named(&r, "keep_loss_history");
    ck_assert_ptr_nonnull(site);
    ck_assert_int_eq(lw_json_bool(lw_json_get(site, "leak"), 0), 1);
    lw_run_free(&r);
}
END_TEST

/* The same on the wall clock, as a user's job runs: what does not depend on
 * the machine's speed (each step sleeps its 2 ms, so intervals are closed;
 * the verdict over them depends on the pace, and is the case above's). */
START_TEST(unmarked_steps_on_the_wall_clock_are_time_intervals) {
    lw_run r;
    const char *args[] = {"--steps",    "300",       "--leak", "4096",
                          "--no-marks", "--step-us", "2000",   NULL};
    const char *env[] = {"LEAKWATCH_INTERVAL_MS=20", NULL};
    run_example(&r, args, env);
    ck_assert_str_eq(str_at(&r, "growth.step_source"), "time");
    ck_assert_int_gt(lw_rep_int(&r, "growth.steps"), 0);
    ck_assert_msg(strstr(r.err, "no step marks yet"), "stderr: %s", r.err);
    lw_run_free(&r);
}
END_TEST

START_TEST(warning_can_be_turned_off) {
    lw_run r;
    const char *args[] = {"--steps", "300", NULL};
    const char *env[] = {"LEAKWATCH_WARN=0", NULL};
    run_example(&r, args, env);
    ck_assert_str_eq(str_at(&r, "verdict"), "leak");
    /* No live warning; the exit summary still gives the answer. */
    ck_assert_msg(!strstr(r.err, "[as of step") && strstr(r.err, "leakwatch: LEAK in "), "%s",
                  r.err);
    lw_run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("detect");
    TCase *tc = tcase_create("verdicts");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, marked_leak_is_found_and_attributed);
    tcase_add_test(tc, fixed_loop_is_no_leak);
    tcase_add_test(tc, few_steps_are_inconclusive);
    tcase_add_test(tc, unmarked_steps_use_time_intervals);
    tcase_add_test(tc, unmarked_steps_on_the_wall_clock_are_time_intervals);
    tcase_add_test(tc, warning_can_be_turned_off);
    suite_add_tcase(s, tc);
    int failed = lw_check_run(s);
    return failed ? 1 : 0;
}
