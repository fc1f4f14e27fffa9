/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for src/analyze/tracked.c: one tracked series (its points, the
 * latest evaluation, the announced verdict, the evaluation schedule, the
 * pace), the structure every series of growth.c is made of. */
#include "../check_run.h"
#include "tracked.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static lw_tracked a, b;

/* Deterministic noise of +-2 KiB around the floor. */
static double noise(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)((int64_t)((*s >> 33) % 4097) - 2048);
}

/* Steps 1..n of a floor growing by per_step, 10 ms each, evaluated when
 * due; returns how many evaluations ran. */
static int feed(lw_tracked *t, int n, double per_step, uint64_t *seed) {
    int evaluated = 0;
    for (int i = 0; i < n; i++) {
        double x = t->last_x + 1;
        double floor = 1e9 + per_step * x + noise(seed);
        lw_tracked_add(t, x, x / 100, floor, floor);
        if (lw_tracked_due(t)) {
            lw_tracked_evaluate(t);
            evaluated++;
        }
    }
    return evaluated;
}

/* Evaluations follow the data: at every point while there are fewer than
 * 64, then every 1/32 of the points seen (so about 32 per doubling). */
START_TEST(evaluations_follow_the_points) {
    lw_tracked_init(&a, 0);
    for (int p = 1; p <= 63; p++) {
        lw_tracked_add(&a, p, p, 0, 0);
        ck_assert_msg(lw_tracked_due(&a), "point %d not due", p);
    }
    int due = 0;
    for (int p = 64; p <= 1024; p++) {
        lw_tracked_add(&a, p, p, 0, 0);
        int d = lw_tracked_due(&a);
        if (p == 64 || p == 66) ck_assert_msg(d, "point %d not due", p);
        if (p == 65) ck_assert_msg(!d, "point 65 due");
        due += d;
    }
    /* From 64 to 1024 points: four doublings, about 32 evaluations each. */
    ck_assert_int_ge(due, 4 * 22);
    ck_assert_int_le(due, 4 * 33);
}
END_TEST

/* A series at rest (no leak, no trend: a job that does not leak) is
 * evaluated about every 1/8 of its points (at the first point of the 1/32
 * schedule after that), not every 1/32: from 64 to 1024 points, four
 * doublings of 4 to 8 evaluations each (about 32 each before). */
START_TEST(a_series_at_rest_is_evaluated_less_often) {
    lw_tracked_init(&a, 0);
    uint64_t seed = 11;
    feed(&a, 63, 0, &seed);
    ck_assert_int_eq(a.decision.announced, LW_VERDICT_NO_LEAK);
    int evaluated = feed(&a, 1024 - 63, 0, &seed);
    ck_assert_int_eq(a.decision.announced, LW_VERDICT_NO_LEAK);
    ck_assert_msg(evaluated >= 4 * 4 && evaluated <= 4 * 8, "%d evaluations", evaluated);
}
END_TEST

/* ... and once growth shows, every 1/32 again, on the very points a
 * series never at rest is evaluated at: a leak that begins after 1,000
 * flat steps is announced within two gaps of 1/32 of the points after the
 * first evaluation that calls it (LEAKWATCH_CONFIRM 3). */
START_TEST(growth_brings_the_dense_schedule_back) {
    lw_tracked_init(&a, 0);
    uint64_t seed = 5;
    feed(&a, 1000, 0, &seed);
    ck_assert_int_eq(a.decision.announced, LW_VERDICT_NO_LEAK);
    uint64_t seen = 0, announced = 0;
    for (int i = 0; i < 2000 && !announced; i++) {
        double x = a.last_x + 1;
        double floor = 1e9 + 8192 * (x - 1000) + noise(&seed);
        lw_tracked_add(&a, x, x / 100, floor, floor);
        if (!lw_tracked_due(&a)) continue;
        lw_tracked_evaluate(&a);
        /* Every evaluation falls on a point of the 1/32 schedule of a
         * series never at rest (1, 2, ..., then + points/32). */
        uint64_t on = 1;
        while (on < a.series.points)
            on += on / 32 ? on / 32 : 1;
        ck_assert_msg(on == a.series.points, "evaluated at %llu, off the 1/32 schedule",
                      (unsigned long long)a.series.points);
        if (!seen && a.last.verdict == LW_VERDICT_LEAK) seen = a.series.points;
        if (a.decision.announced == LW_VERDICT_LEAK) announced = a.series.points;
        /* Not at rest: the next evaluation after 1/32 of the points. */
        if (a.last.verdict != LW_VERDICT_NO_LEAK && !announced)
            ck_assert_uint_le(a.next_eval_at, a.series.points + a.series.points / 32);
    }
    ck_assert_uint_gt(seen, 0);
    ck_assert_uint_gt(announced, 0);
    ck_assert_msg(announced - seen <= 2 * (announced / 32) + 2, "seen at %llu, announced at %llu",
                  (unsigned long long)seen, (unsigned long long)announced);
}
END_TEST

/* A steady leak is announced after LEAKWATCH_CONFIRM evaluations and said
 * on stderr only later: at 64 points at the least, and twice the points
 * at which it was first seen. */
START_TEST(a_leak_is_confirmed_then_warned) {
    lw_tracked_init(&a, LW_TRACKED_PACE);
    uint64_t seed = 3;
    int warned_at = 0;
    for (int i = 0; i < 600 && !warned_at; i++) {
        feed(&a, 1, 4096, &seed);
        if (lw_tracked_warning_due(&a)) warned_at = (int)a.series.points;
    }
    ck_assert_int_eq(a.decision.announced, LW_VERDICT_LEAK);
    ck_assert_int_ge(warned_at, 64);
    ck_assert_uint_ge((uint64_t)warned_at, 2 * a.decision.raw_leak_since);
    int64_t first = lw_tracked_first_leak_step(&a);
    ck_assert_int_ge(first, 1);
    ck_assert_int_le(first, warned_at);
    ck_assert_str_eq(a.decision.reason, "the floor grows steadily");
    /* With the pace kept: 4 KiB per step at 100 steps per second. */
    ck_assert_msg(fabs(a.last.bytes_per_second - 409600) < 0.05 * 409600, "rate %g",
                  a.last.bytes_per_second);
}
END_TEST

/* The live alarm with a hold (issue 38): a floor that grows for 200 steps
 * and then stops is announced while it grows, but never alarmed; a steady
 * leak is alarmed once it has held for the hold since first seen, and the
 * alarm stands. */
START_TEST(the_live_alarm_waits_for_the_hold) {
    lw_tracked_init(&a, LW_TRACKED_CYCLES);
    uint64_t seed = 7;
    int announced = 0, alarmed = 0;
    for (int i = 0; i < 800; i++) {
        feed(&a, 1, i < 200 ? 4096 : 0, &seed);
        announced |= a.decision.announced == LW_VERDICT_LEAK;
        alarmed |= lw_tracked_alarm(&a, 256);
    }
    ck_assert_msg(announced, "the growth was never announced");
    ck_assert_msg(!alarmed, "a fill that stopped was alarmed");
    ck_assert_int_ne(a.decision.announced, LW_VERDICT_LEAK);

    lw_tracked_init(&b, LW_TRACKED_CYCLES);
    seed = 7;
    int alarmed_at = 0;
    for (int i = 0; i < 800; i++) {
        feed(&b, 1, 4096, &seed);
        if (lw_tracked_alarm(&b, 256) && !alarmed_at) alarmed_at = (int)b.series.points;
        if (alarmed_at) ck_assert_msg(b.alarm, "the alarm fell at %d", (int)b.series.points);
    }
    ck_assert_int_gt(alarmed_at, 0);
    ck_assert_int_ge(alarmed_at, 256);
    ck_assert_int_le(alarmed_at, 256 + 32);
    /* Hold 0: the former rule, alarmed as lw_tracked_warning_due says. */
    ck_assert_int_eq(lw_tracked_alarm(&b, 0), 1);
}
END_TEST

/* A flat series: no leak, no warning, no first leak step. */
/* Steps 1..n of a floor that rises by one 256 KiB block every `every`
 * steps (from step 2), evaluated when due; the announced verdict at the end. */
static lw_verdict blocks(lw_tracked *t, int n, int every) {
    for (int x = 1; x <= n; x++) {
        double floor = 262144.0 * (1 + (x >= 2 ? (x - 2) / every + 1 : 0));
        lw_tracked_add(t, x, x / 100.0, floor, floor);
        if (lw_tracked_due(t)) lw_tracked_evaluate(t);
    }
    lw_tracked_evaluate(t);
    lw_tracked_final(t);
    return t->decision.announced;
}

/* Whole-block growth (pinned host memory, LW_TRACKED_RISES): a cache that
 * took a new block four times in 400 steps, evenly spread (a staircase the
 * detector alone calls a leak), is not; a block kept every step, or every
 * 40 steps (10 rises), is. */
START_TEST(whole_blocks_need_eight_rises) {
    lw_tracked_init(&a, 0);
    ck_assert_int_eq(blocks(&a, 400, 100), LW_VERDICT_LEAK);
    lw_tracked_init(&a, LW_TRACKED_RISES);
    ck_assert_int_ne(blocks(&a, 400, 100), LW_VERDICT_LEAK);
    ck_assert_uint_eq(a.rises, 4);
    ck_assert_int_eq(a.last.verdict, LW_VERDICT_INCONCLUSIVE);
    ck_assert_ptr_nonnull(strstr(a.last.reason, "new high"));
    lw_tracked_init(&a, LW_TRACKED_RISES);
    ck_assert_int_eq(blocks(&a, 400, 1), LW_VERDICT_LEAK);
    lw_tracked_init(&a, LW_TRACKED_RISES);
    ck_assert_int_eq(blocks(&a, 400, 40), LW_VERDICT_LEAK);
    ck_assert_uint_eq(a.rises, 10);
}
END_TEST

START_TEST(a_flat_series_is_no_leak) {
    lw_tracked_init(&a, 0);
    uint64_t seed = 11;
    feed(&a, 500, 0, &seed);
    ck_assert_int_ne(a.decision.announced, LW_VERDICT_LEAK);
    ck_assert(!lw_tracked_warning_due(&a));
    ck_assert_int_eq(lw_tracked_first_leak_step(&a), -1);
}
END_TEST

/* Forgetting empties the series and the verdict; the count at the last
 * evaluation stays, so the emptied series counts as changed and its next
 * look evaluates it again. The next point is evaluated at once. */
START_TEST(forget_starts_over) {
    lw_tracked_init(&a, LW_TRACKED_PACE | LW_TRACKED_CYCLES);
    uint64_t seed = 5;
    feed(&a, 300, 4096, &seed);
    ck_assert_int_eq(a.decision.announced, LW_VERDICT_LEAK);
    lw_tracked_forget(&a);
    ck_assert_uint_eq(a.series.points, 0);
    ck_assert_uint_eq(a.pace.points, 0);
    ck_assert_int_eq(a.decision.announced, LW_VERDICT_INCONCLUSIVE);
    ck_assert_str_eq(a.decision.reason, "not evaluated yet");
    ck_assert(lw_tracked_changed(&a));
    ck_assert_int_eq(feed(&a, 1, 0, &seed), 1);
    ck_assert(!lw_tracked_changed(&a));
}
END_TEST

/* A copy (the series kept aside before a release, or put back) has the
 * source's points, evaluation and verdict in its own bins; the
 * destination's pace stays its own. */
START_TEST(copy_takes_the_series_not_the_pace) {
    lw_tracked_init(&a, LW_TRACKED_PACE);
    lw_tracked_init(&b, LW_TRACKED_PACE);
    uint64_t seed = 9;
    feed(&a, 700, 4096, &seed);
    feed(&b, 10, 0, &seed);
    lw_tracked_copy(&b, &a);
    ck_assert_ptr_eq(b.series.bins, b.bins);
    ck_assert_uint_eq(b.series.points, a.series.points);
    ck_assert_int_eq(b.series.len, a.series.len);
    ck_assert_int_eq(memcmp(b.bins, a.bins, sizeof(lw_bin) * (size_t)a.series.len), 0);
    ck_assert_int_eq(b.decision.announced, a.decision.announced);
    ck_assert(b.last_x == a.last_x && b.last.slope == a.last.slope);
    ck_assert_int_eq(lw_tracked_changed(&b), lw_tracked_changed(&a));
    ck_assert_uint_eq(b.pace.points, 10);
    /* The copy goes on by itself: a's later points do not reach it. */
    feed(&a, 50, 4096, &seed);
    ck_assert_uint_ne(b.series.points, a.series.points);
}
END_TEST

int main(void) {
    Suite *s = suite_create("tracked");
    TCase *tc = tcase_create("tracked");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, evaluations_follow_the_points);
    tcase_add_test(tc, a_series_at_rest_is_evaluated_less_often);
    tcase_add_test(tc, growth_brings_the_dense_schedule_back);
    tcase_add_test(tc, a_leak_is_confirmed_then_warned);
    tcase_add_test(tc, a_flat_series_is_no_leak);
    tcase_add_test(tc, whole_blocks_need_eight_rises);
    tcase_add_test(tc, the_live_alarm_waits_for_the_hold);
    tcase_add_test(tc, forget_starts_over);
    tcase_add_test(tc, copy_takes_the_series_not_the_pace);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
