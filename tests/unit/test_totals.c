/* SPDX-License-Identifier: Apache-2.0 */
/* The per-device, per-kind totals (src/track/totals.c): levels, peaks and
 * step floors, and exact sums from many threads at once, across the switch
 * to keeping every level. Run under ThreadSanitizer too (make check-tsan). */
#include "totals.h"

#include "../check_run.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

START_TEST(totals_levels_and_peaks) {
    lw_totals_reset();
    lw_totals_alloc(0, LW_KIND_DEVICE, 100);
    lw_totals_alloc(1, LW_KIND_DEVICE, 50);
    lw_totals_alloc(-1, LW_KIND_PINNED_HOST, 10);
    lw_totals_free(0, LW_KIND_DEVICE, 100);
    lw_totals_failed(0, LW_KIND_DEVICE);
    lw_totals_unknown_free();
    lw_counts d0 = lw_totals_get(0, LW_KIND_DEVICE);
    ck_assert_uint_eq(d0.alloc_count, 1);
    ck_assert_uint_eq(d0.free_count, 1);
    ck_assert_uint_eq(d0.failed_count, 1);
    ck_assert_int_eq(d0.live_bytes, 0);
    ck_assert_int_eq(d0.peak_live_bytes, 100);
    lw_counts d1 = lw_totals_get(1, LW_KIND_DEVICE);
    ck_assert_int_eq(d1.live_bytes, 50);
    ck_assert_uint_eq(lw_totals_unknown_frees(), 1);
}
END_TEST

/* The step floor and peak are device memory's; pinned host memory (host RAM)
 * has its own. */
START_TEST(totals_pinned_host_floor_apart) {
    lw_totals_reset();
    int64_t fl, pk;
    lw_totals_take_floor_peak(&fl, &pk);
    lw_totals_take_host_floor_peak(&fl, &pk);
    lw_totals_alloc(0, LW_KIND_DEVICE, 100);
    lw_totals_alloc(-1, LW_KIND_PINNED_HOST, 1000);
    lw_totals_free(0, LW_KIND_DEVICE, 100);
    lw_totals_alloc(0, LW_KIND_DEVICE, 40);
    lw_totals_take_floor_peak(&fl, &pk);
    ck_assert_int_eq(fl, 0);
    ck_assert_int_eq(pk, 100);
    lw_totals_take_host_floor_peak(&fl, &pk);
    ck_assert_int_eq(fl, 0);
    ck_assert_int_eq(pk, 1000);
    lw_totals_free(-1, LW_KIND_PINNED_HOST, 1000);
    lw_totals_take_floor_peak(&fl, &pk);
    ck_assert_int_eq(fl, 40);
    ck_assert_int_eq(pk, 40);
    lw_totals_take_host_floor_peak(&fl, &pk);
    ck_assert_int_eq(fl, 0);
    ck_assert_int_eq(pk, 1000);
}
END_TEST

static void *alloc_free_many(void *arg) {
    (void)arg;
    for (int i = 0; i < 10000; i++) {
        lw_totals_alloc(2, LW_KIND_DEVICE, 3);
        lw_totals_free(2, LW_KIND_DEVICE, 3);
    }
    lw_totals_alloc(2, LW_KIND_DEVICE, 1);
    return NULL;
}

START_TEST(totals_threads_sum_exactly) {
    lw_totals_reset();
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, alloc_free_many, NULL);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    lw_counts c = lw_totals_get(2, LW_KIND_DEVICE);
    ck_assert_uint_eq(c.alloc_count, 8 * 10001);
    ck_assert_uint_eq(c.free_count, 8 * 10000);
    ck_assert_int_eq(c.live_bytes, 8);
}
END_TEST

/* One (device, kind) cell: the finer levels are read from the base; the
 * first event on a second cell starts keeping them, with the history so far
 * (live and peak) carried over exactly. */
START_TEST(totals_exact_across_the_switch) {
    lw_totals_reset();
    lw_totals_alloc(0, LW_KIND_DEVICE, 100);
    lw_totals_alloc(0, LW_KIND_DEVICE, 50);
    lw_totals_free(0, LW_KIND_DEVICE, 50);
    lw_counts c = lw_totals_get(0, LW_KIND_DEVICE);
    ck_assert_int_eq(c.live_bytes, 100);
    ck_assert_int_eq(c.peak_live_bytes, 150);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_COUNT).peak_live_bytes, 150);
    ck_assert_int_eq(lw_totals_get(1, LW_KIND_COUNT).live_bytes, 0);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_MANAGED).peak_live_bytes, 0);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_PINNED_HOST).live_bytes, 0);
    lw_totals_alloc(1, LW_KIND_DEVICE, 10); /* a second cell */
    lw_totals_alloc(0, LW_KIND_MANAGED, 5);
    lw_totals_free(0, LW_KIND_DEVICE, 100);
    c = lw_totals_get(0, LW_KIND_DEVICE);
    ck_assert_int_eq(c.live_bytes, 0);
    ck_assert_int_eq(c.peak_live_bytes, 150);
    ck_assert_uint_eq(c.alloc_count, 2);
    c = lw_totals_get(0, LW_KIND_COUNT);
    ck_assert_int_eq(c.live_bytes, 5);
    ck_assert_int_eq(c.peak_live_bytes, 150);
    c = lw_totals_get(1, LW_KIND_COUNT);
    ck_assert_int_eq(c.live_bytes, 10);
    ck_assert_int_eq(c.peak_live_bytes, 10);
    c = lw_totals_get(-2, LW_KIND_DEVICE);
    ck_assert_int_eq(c.live_bytes, 10);
    ck_assert_int_eq(c.peak_live_bytes, 150);
    c = lw_totals_get(-2, LW_KIND_MANAGED);
    ck_assert_int_eq(c.live_bytes, 5);
    ck_assert_int_eq(c.peak_live_bytes, 5);
    c = lw_totals_get(-2, LW_KIND_COUNT);
    ck_assert_int_eq(c.live_bytes, 15);
    ck_assert_int_eq(c.peak_live_bytes, 150);
    ck_assert_uint_eq(c.alloc_count, 4);
    int64_t fl, pk;
    lw_totals_take_floor_peak(&fl, &pk);
    ck_assert_int_eq(fl, 0); /* since the reset: the floor started at 0 */
    ck_assert_int_eq(pk, 150);
    /* Pinned host memory first: every level that holds it is its base. */
    lw_totals_reset();
    lw_totals_alloc(-1, LW_KIND_PINNED_HOST, 1000);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_COUNT).live_bytes, 1000);
    ck_assert_int_eq(lw_totals_get(-1, LW_KIND_PINNED_HOST).peak_live_bytes, 1000);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_DEVICE).live_bytes, 0);
    lw_totals_alloc(0, LW_KIND_DEVICE, 10);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_COUNT).live_bytes, 1010);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_COUNT).peak_live_bytes, 1010);
    ck_assert_int_eq(lw_totals_get(-1, LW_KIND_COUNT).live_bytes, 1000);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_PINNED_HOST).live_bytes, 1000);
    ck_assert_int_eq(lw_totals_get(0, LW_KIND_COUNT).live_bytes, 10);
    lw_totals_take_host_floor_peak(&fl, &pk);
    ck_assert_int_eq(pk, 1000);
}
END_TEST

/* Threads allocating (never freeing) on one cell while another thread's
 * event on a second cell switches to keeping every level: no byte is lost
 * or counted twice, and since every level only grows, each peak is its
 * final live bytes. Repeated, so the switch lands at many points. */
static _Atomic int switch_go;
static void *grow_cell0(void *arg) {
    (void)arg;
    while (!atomic_load(&switch_go)) {
    }
    for (int i = 0; i < 3000; i++)
        lw_totals_alloc(0, LW_KIND_DEVICE, 7);
    return NULL;
}

START_TEST(totals_switch_under_threads_is_exact) {
    for (int round = 0; round < 20; round++) {
        lw_totals_reset();
        lw_totals_alloc(0, LW_KIND_DEVICE, 1);
        atomic_store(&switch_go, 0);
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, grow_cell0, NULL);
        atomic_store(&switch_go, 1);
        for (volatile int spin = 0; spin < round * 2000; spin++) {
        }
        lw_totals_alloc(1, LW_KIND_DEVICE, 1000);
        lw_totals_alloc(0, LW_KIND_PINNED_HOST, 3);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        int64_t c0 = 1 + 4 * 3000 * 7;
        lw_counts c = lw_totals_get(0, LW_KIND_DEVICE);
        ck_assert_int_eq(c.live_bytes, c0);
        ck_assert_int_eq(c.peak_live_bytes, c0);
        c = lw_totals_get(0, LW_KIND_COUNT);
        ck_assert_int_eq(c.live_bytes, c0 + 3);
        ck_assert_int_eq(c.peak_live_bytes, c0 + 3);
        c = lw_totals_get(-2, LW_KIND_DEVICE);
        ck_assert_int_eq(c.live_bytes, c0 + 1000);
        ck_assert_int_eq(c.peak_live_bytes, c0 + 1000);
        c = lw_totals_get(-2, LW_KIND_COUNT);
        ck_assert_int_eq(c.live_bytes, c0 + 1003);
        ck_assert_int_eq(c.peak_live_bytes, c0 + 1003);
        ck_assert_uint_eq(c.alloc_count, 1 + 4 * 3000 + 2);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("totals");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, totals_levels_and_peaks);
    tcase_add_test(tc, totals_pinned_host_floor_apart);
    tcase_add_test(tc, totals_exact_across_the_switch);
    tcase_add_test(tc, totals_switch_under_threads_is_exact);
    tcase_add_test(tc, totals_threads_sum_exactly);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
