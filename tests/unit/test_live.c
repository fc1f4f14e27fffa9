/* SPDX-License-Identifier: Apache-2.0 */
/* The live table (src/track/live.c), on its own, without the hooks or a
 * CUDA stand-in: records by class and address, replaced and removed, and a
 * scan of everything at a bounded cost per record. */
#include "live.h"
#include "tracker_mem.h"

#include "../check_run.h"

#include <check.h>
#include <stdint.h>

static void count(const lw_alloc *r, void *arg) {
    uint64_t *sum = arg;
    sum[0]++;
    sum[1] += r->size;
}

START_TEST(live_insert_remove_replace) {
    lw_tracker_mem_init();
    lw_live_forget_all();
    lw_alloc a = {.key = 0x1000, .size = 64, .cls = LW_CLASS_DPTR}, old;
    ck_assert_int_eq(lw_live_insert(&a, &old), 0);
    /* The same address in another class is another record. */
    lw_alloc h = {.key = 0x1000, .size = 8, .cls = LW_CLASS_HOST};
    ck_assert_int_eq(lw_live_insert(&h, &old), 0);
    /* The same address again: the record is replaced and the old one given back. */
    lw_alloc b = {.key = 0x1000, .size = 128, .cls = LW_CLASS_DPTR};
    ck_assert_int_eq(lw_live_insert(&b, &old), 1);
    ck_assert_uint_eq(old.size, 64);
    ck_assert_uint_eq(lw_live_records(), 2);
    lw_alloc out;
    ck_assert_int_eq(lw_live_remove(LW_CLASS_DPTR, 0x1000, &out), 1);
    ck_assert_uint_eq(out.size, 128);
    ck_assert_int_eq(lw_live_remove(LW_CLASS_DPTR, 0x1000, &out), 0);
    ck_assert_int_eq(lw_live_remove(LW_CLASS_HOST, 0x1000, &out), 1);
    ck_assert_uint_eq(lw_live_records(), 0);
}
END_TEST

START_TEST(live_grows_and_scans_everything) {
    lw_tracker_mem_init();
    lw_live_forget_all();
    enum { N = 100000 };
    lw_alloc old;
    for (uint64_t i = 0; i < N; i++) {
        lw_alloc r = {.key = 0x7f0000000000ull + i * 512, .size = i % 7 + 1};
        ck_assert_int_eq(lw_live_insert(&r, &old), 0);
    }
    uint64_t sum[2] = {0, 0};
    lw_live_scan(count, sum);
    ck_assert_uint_eq(sum[0], N);
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < N; i++)
        bytes += i % 7 + 1;
    ck_assert_uint_eq(sum[1], bytes);
    /* Bounded overhead per record (the README's figure is per live allocation). */
    ck_assert_uint_le(lw_live_overhead_bytes() / N, 64);
    for (uint64_t i = 0; i < N; i += 2) {
        lw_alloc r;
        ck_assert_int_eq(lw_live_remove(LW_CLASS_DPTR, 0x7f0000000000ull + i * 512, &r), 1);
    }
    ck_assert_uint_eq(lw_live_records(), N / 2);
    lw_live_forget_all();
    ck_assert_uint_eq(lw_live_records(), 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("live");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, live_insert_remove_replace);
    tcase_add_test(tc, live_grows_and_scans_everything);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
