/* SPDX-License-Identifier: Apache-2.0 */
/* The binned series (src/analyze/series.c): bins hold the means of their
 * points, stay in order and within their storage, the width doubling as it
 * fills. */
#include "series.h"

#include "../check_run.h"

#include <check.h>
#include <math.h>
#include <stdint.h>

START_TEST(series_bins_merge_and_keep_the_mean) {
    lw_bin storage[8];
    lw_series s;
    lw_series_init(&s, storage, 8);
    for (int i = 1; i <= 100; i++)
        lw_series_add(&s, i, i * 0.5, 10.0 * i, 20.0 * i);
    lw_bin out[9];
    int n = lw_series_get(&s, out, 9);
    ck_assert_int_le(n, 9);
    ck_assert_uint_eq(s.points, 100);
    /* Every point is in exactly one bin, bins are in order, and each bin's
     * floor is the mean of its points' floors (10 x), its peak the largest. */
    uint64_t total = 0;
    double prev = 0;
    for (int i = 0; i < n; i++) {
        total += out[i].n;
        ck_assert(out[i].x > prev);
        prev = out[i].x;
        ck_assert(fabs(out[i].floor - 10 * out[i].x) < 1e-9);
        ck_assert(out[i].peak >= 20 * out[i].x);
    }
    ck_assert_uint_eq(total, 100);
    ck_assert(out[n - 1].peak == 2000);
    /* The width doubled as the storage filled: a power of two. */
    ck_assert_uint_gt(s.width, 1);
    ck_assert_uint_eq(s.width & (s.width - 1), 0);
    lw_series_reset(&s);
    ck_assert_int_eq(lw_series_get(&s, out, 9), 0);
    ck_assert_uint_eq(s.points, 0);
}
END_TEST

START_TEST(series_bins_hold_means_and_stay_bounded) {
    static lw_bin storage[8], out[9];
    lw_series s;
    lw_series_init(&s, storage, 8);
    for (int i = 0; i < 1000; i++)
        lw_series_add(&s, i, i, i * 2.0, i * 3.0);
    int n = lw_series_get(&s, out, 9);
    ck_assert_int_le(n, 9);
    ck_assert_uint_eq(s.points, 1000);
    /* Every bin is the mean of its points: floor = 2x exactly, peak = max. */
    uint32_t total = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_double_eq_tol(out[i].floor, 2 * out[i].x, 1e-9);
        total += out[i].n;
        if (i) ck_assert(out[i].x > out[i - 1].x);
    }
    ck_assert_uint_eq(total, 1000);
    ck_assert_double_eq_tol(out[n - 1].peak, 999 * 3.0, 1e-9);
}

int main(void) {
    Suite *s = suite_create("series");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, series_bins_merge_and_keep_the_mean);
    tcase_add_test(tc, series_bins_hold_means_and_stay_bounded);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
