/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for src/analyze/release_watch.c: a release at the end of a
 * series, the one rule of the device's floor and of PyTorch's tensors per
 * device. The newest points back near the start-up level after a high one
 * are a release: a run that ends within it is judged on the series before
 * it; a drop longer than the last quarter of the run is its new start. */
#include "../check_run.h"
#include "release_watch.h"

#include <check.h>
#include <stdint.h>

static lw_tracked t;
static lw_release_watch w;

/* One point of level v at the next step, watched before it joins t. */
static void point(int64_t v) {
    lw_release_point(&w, &t, v);
    double x = t.last_x + 1;
    lw_tracked_add(&t, x, x / 100, (double)v, (double)v);
}

static void fresh(int skip_first) {
    lw_tracked_init(&t, 0);
    lw_release_init(&w, skip_first);
}

/* 40 steps from 1 MiB up by 64 KiB each, then 4 low points (a teardown):
 * the run that ends there is judged on the 40 steps before it. */
START_TEST(a_teardown_is_left_out_at_the_end) {
    fresh(1);
    for (int i = 0; i < 40; i++)
        point((1 << 20) + (int64_t)i * (64 << 10));
    ck_assert_int_eq(w.releasing, 0);
    for (int i = 0; i < 4; i++)
        point(1 << 20);
    ck_assert_int_eq(w.releasing, 1);
    ck_assert_uint_eq(w.pre.series.points, 40);
    ck_assert_int_eq(w.pre_level, (1 << 20) + 39 * (64 << 10));
    ck_assert_uint_eq(t.series.points, 44);
    ck_assert_int_eq(lw_release_ended_within(&w, &t), 1);
    ck_assert_uint_eq(t.series.points, 40);
    ck_assert_double_eq(t.last_x, 40);
}
END_TEST

/* A drop longer than the last quarter of the run: the run goes on at the
 * lower level, its new start; nothing is left out at the end. */
START_TEST(a_long_drop_is_the_new_start) {
    fresh(1);
    for (int i = 0; i < 40; i++)
        point((1 << 20) + (int64_t)i * (64 << 10));
    for (int i = 0; i < 20; i++)
        point(1 << 20);
    ck_assert_int_eq(w.releasing, 0);
    ck_assert_double_eq(w.base, 1 << 20);
    ck_assert_double_eq(w.high, 1 << 20);
    ck_assert_int_eq(lw_release_ended_within(&w, &t), 0);
    ck_assert_uint_eq(t.series.points, 60);
    ck_assert_uint_eq(lw_release_tail_max(60), 15);
    ck_assert_uint_eq(lw_release_tail_max(8), 4);
}
END_TEST

/* The device's floor: its first point (before the first allocation) sets
 * no base; PyTorch's series: it does. A rise under 4 KiB is no release. */
START_TEST(the_first_point_and_small_drops) {
    fresh(1);
    point(0);
    ck_assert_int_eq(w.have_base, 0);
    point(1 << 20);
    ck_assert_int_eq(w.have_base, 1);
    ck_assert_double_eq(w.base, 1 << 20);

    fresh(0);
    point(0);
    ck_assert_int_eq(w.have_base, 1);
    ck_assert_double_eq(w.base, 0);

    fresh(0);
    for (int i = 0; i < 10; i++)
        point(1000 + i * 300); /* rises 2,700 bytes */
    ck_assert_int_eq(lw_release_low(&w, 1000), 0);
    point(1000);
    ck_assert_int_eq(w.releasing, 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("release_watch");
    TCase *tc = tcase_create("release");
    tcase_add_test(tc, a_teardown_is_left_out_at_the_end);
    tcase_add_test(tc, a_long_drop_is_the_new_start);
    tcase_add_test(tc, the_first_point_and_small_drops);
    suite_add_tcase(s, tc);
    return lw_check_run(s);
}
