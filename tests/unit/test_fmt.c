/* SPDX-License-Identifier: Apache-2.0 */
/* The report's formats (src/vocab/fmt.c): bytes and counts, and the answer
 * line every output prints. */
#include "fmt.h"

#include "../check_run.h"

#include <check.h>
#include <math.h>
#include <string.h>

/* The library's lines and the command's views share one format. */
START_TEST(byte_formats) {
    char b[32];
    lw_format_bytes(512, b, sizeof b);
    ck_assert_str_eq(b, "512 B");
    lw_format_bytes(1536, b, sizeof b);
    ck_assert_str_eq(b, "1.50 KiB");
    lw_format_bytes(-3.0 * 1024 * 1024, b, sizeof b);
    ck_assert_str_eq(b, "-3.00 MiB");
    lw_format_bytes(150.0 * 1024, b, sizeof b);
    ck_assert_str_eq(b, "150.0 KiB");
    lw_format_bytes(2.0 * 1024 * 1024 * 1024 * 1024 * 1024 * 1024, b, sizeof b);
    ck_assert_str_eq(b, "2.00 EiB");
    ck_assert_str_eq(lw_fmt_count(18002, b, sizeof b), "18,002");
    ck_assert_str_eq(lw_fmt_bytes(NAN, b, sizeof b), "?");
}
END_TEST

START_TEST(answer_line_is_one_format) {
    lw_answer a;
    lw_answer_init(&a);
    a.verdict = "leak";
    a.where = "train.py:27 in train";
    a.rate = a.lo = a.hi = 512;
    a.onset = 2;
    a.free_bytes = 80.0 * 1024 * 1024 * 1024;
    a.total_bytes = 80.0 * 1024 * 1024 * 1024;
    lw_answer_oom(a.free_bytes, 1024, 512, &a.oom_seconds, &a.oom_steps);
    char line[512];
    lw_answer_line(&a, line, sizeof line);
    ck_assert_msg(!strncmp(line,
                           "LEAK in train.py:27 in train: +512 B/step (95% CI 512 B .. "
                           "512 B) since step 2; out of memory in 970 d 21 h "
                           "(167,772,160 steps) at this rate (80.0 GiB free of 80.0 GiB)",
                           200),
                  "%s", line);
    a.computed_at = 64;
    lw_answer_line(&a, line, sizeof line);
    ck_assert_ptr_nonnull(strstr(line, "[as of step 64]"));
    double s, st;
    lw_answer_oom(NAN, 1, 1, &s, &st);
    ck_assert(isnan(s) && isnan(st));
    lw_answer_oom(100, -1, 0, &s, &st);
    ck_assert(isnan(s) && isnan(st));
    a.verdict = "no_leak";
    a.where_live = 1024;
    a.computed_at = NAN;
    a.steps = 300;
    lw_answer_line(&a, line, sizeof line);
    ck_assert_str_eq(line, "no leak: the floor of live memory is flat over 300 steps; largest "
                           "site: train.py:27 in train (1.00 KiB live)");
}
END_TEST

/* A "no leak" whose floor rose once and held level (issue 42, item 7: the
 * line said "flat" while the report beside it said +7.42 MiB/step, the
 * window's straight line through the jump): said as a rise that stopped. */
START_TEST(one_time_rise_is_not_flat) {
    /* 512 MiB at step 150 of 300: the fit, 1.83 MiB/step over 300 steps,
     * climbs far more than 8 bins' noise (3.8 MiB). */
    ck_assert_int_eq(lw_answer_rose_once(1917396, 300, 3828128), 1);
    /* Noise: a fit that climbs less than 8 times a bin's noise. */
    ck_assert_int_eq(lw_answer_rose_once(74, 2000, 1e6), 0);
    /* A floor without noise: one granule (256 B) is the least. */
    ck_assert_int_eq(lw_answer_rose_once(1, 2000, 0), 0);
    ck_assert_int_eq(lw_answer_rose_once(2, 2000, 0), 1);
    /* Flat, falling, unknown. */
    ck_assert_int_eq(lw_answer_rose_once(0, 300, 1e6), 0);
    ck_assert_int_eq(lw_answer_rose_once(-1e6, 300, 1), 0);
    ck_assert_int_eq(lw_answer_rose_once(NAN, 300, 1), 0);
    ck_assert_int_eq(lw_answer_rose_once(1e6, NAN, 1), 0);
    lw_answer a;
    char line[768];
    lw_answer_init(&a);
    a.verdict = "no_leak";
    a.where = "rt_workload.c:468 in staircase_site";
    a.where_live = 512.0 * 1024 * 1024;
    a.steps = 300;
    a.rose_once = 1;
    lw_answer_line(&a, line, sizeof line);
    ck_assert_str_eq(line, "no leak: the floor of live memory rose, then held level (no growth "
                           "per step) over 300 steps; largest site: rt_workload.c:468 in "
                           "staircase_site (512.0 MiB live)");
}
END_TEST

/* inconclusive says its real reason, the evidence so far, the growing site
 * and the one thing that would decide it (issue 42, item 4: it said "not
 * enough intervals or too much noise" whatever the reason, named the largest
 * site, and suggested nothing). */
START_TEST(inconclusive_says_why_and_what_decides_it) {
    lw_answer a;
    char line[768];
    lw_answer_init(&a);
    a.verdict = "inconclusive";
    a.unit = "interval";
    a.steps = 25;
    a.reason = "the floor grows; confirming (2 of 3 evaluations in a row)";
    a.more_steps = 3.2;
    a.where = "train.py:40 in train";
    a.where_grows = 1;
    a.where_live = 1024;
    lw_answer_line(&a, line, sizeof line);
    ck_assert_str_eq(line, "inconclusive: the floor grows; confirming (2 of 3 evaluations in a "
                           "row) over 25 intervals; growing site: train.py:40 in train (1.00 KiB "
                           "live); to decide: mark steps (leakwatch_step() in C, leakwatch.step() "
                           "in Python) or a shorter --interval, or about 4 more intervals");
    a.unit = "step";
    a.reason = "too few steps yet";
    a.more_steps = NAN;
    a.where_grows = 0;
    lw_answer_line(&a, line, sizeof line);
    ck_assert_str_eq(line, "inconclusive: too few steps yet over 25 steps; largest site: "
                           "train.py:40 in train (1.00 KiB live); to decide: run more steps");
    a.more_steps = 40;
    a.reason = "noisy\033[2J";
    lw_answer_line(&a, line, sizeof line);
    ck_assert_msg(strstr(line, "inconclusive: noisy?[2J over") &&
                      strstr(line, "run about 40 more steps"),
                  "%s", line);
}
END_TEST

/* Issue 37: growth per second beside growth per unit, and an undecided run
 * that saw growth says its size instead of "not enough steps". */
START_TEST(answer_line_gives_per_second_and_undecided_growth) {
    lw_answer a;
    lw_answer_init(&a);
    a.verdict = "leak";
    a.where = "server.py:46 in forward";
    a.unit = "call";
    a.rate = a.lo = a.hi = 2048;
    a.per_second = 97.5 * 1024;
    a.onset = 1;
    char line[512];
    lw_answer_line(&a, line, sizeof line);
    const char *want = "LEAK in server.py:46 in forward: +2.00 KiB/call (95% CI 2.00 KiB .. "
                       "2.00 KiB), +97.5 KiB/s, since call 1;";
    ck_assert_msg(!strncmp(line, want, strlen(want)), "%s", line);
    lw_answer_init(&a);
    a.verdict = "inconclusive";
    a.unit = "interval";
    a.rate = 82 * 1024;
    a.lo = 62 * 1024;
    a.hi = 98 * 1024;
    a.per_second = 82 * 1024;
    a.steps = 61;
    lw_answer_line(&a, line, sizeof line);
    ck_assert_str_eq(line, "inconclusive: the floor rises +82.0 KiB/interval (95% CI 62.0 KiB .. "
                           "98.0 KiB), +82.0 KiB/s, not yet confirmed over 61 intervals; to "
                           "decide: mark steps (leakwatch_step() in C, leakwatch.step() in "
                           "Python) or a shorter --interval");
    /* Both: the growth's size, then its reason (issues 37 and 42 together). */
    a.reason = "confirming (2 of 3 evaluations in a row)";
    lw_answer_line(&a, line, sizeof line);
    ck_assert_msg(strstr(line, "not yet confirmed (confirming (2 of 3 evaluations in a row)) over "
                               "61 intervals"),
                  "%s", line);
}
END_TEST

int main(void) {
    Suite *s = suite_create("fmt");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, byte_formats);
    tcase_add_test(tc, answer_line_is_one_format);
    tcase_add_test(tc, one_time_rise_is_not_flat);
    tcase_add_test(tc, inconclusive_says_why_and_what_decides_it);
    tcase_add_test(tc, answer_line_gives_per_second_and_undecided_growth);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
