/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for src/analyze/cycles.c: growth within each cycle released at
 * its end (an epoch's local list of losses) is told from a steady leak, a
 * staircase (one block held for a phase) and noise. */
#include "../check_run.h"
#include "cycles.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>

/* A floor of BASE + RISE * (s mod PERIOD) for steps 1..N, plus a leak. */
static void sawtooth(lw_cycles *c, int n, int period, double rise, double leak) {
    lw_cycles_init(c);
    for (int s = 1; s <= n; s++)
        lw_cycles_add(c, s, 64e6 + rise * ((s - 1) % period) + leak * s);
}

START_TEST(epoch_sawtooth_is_described) {
    lw_cycles c;
    sawtooth(&c, 1000, 100, 512, 0);
    lw_cycles_summary s;
    ck_assert_int_eq(lw_cycles_get(&c, &s), 1);
    /* From one release to the next: the first epoch (from the start of the
     * run, with its warm-up) and the last (still under way) are not
     * measured. */
    ck_assert_uint_eq(s.count, 8);
    ck_assert_double_eq_tol(s.period, 100, 1e-9);
    ck_assert_double_eq_tol(s.rise_per_step, 512, 1e-9);
    ck_assert_double_eq_tol(s.peak, 99 * 512, 1e-9);
    ck_assert_double_eq_tol(s.floor, 64e6, 1e-9);
    ck_assert_double_eq_tol(s.last_release, 901, 1e-9);
}
END_TEST

START_TEST(one_cycle_is_not_each_cycle) {
    lw_cycles c;
    sawtooth(&c, 250, 100, 512, 0);
    lw_cycles_summary s;
    ck_assert_int_eq(lw_cycles_get(&c, &s), 0);
    ck_assert_uint_eq(s.count, 1);
    ck_assert_double_eq_tol(s.period, 100, 1e-9);
}
END_TEST

START_TEST(warm_up_jumps_do_not_hide_the_releases) {
    /* Nothing before the first mark, the model, then the optimizer's state
     * over the first steps; then epochs of 100 steps. */
    lw_cycles c;
    lw_cycles_init(&c);
    lw_cycles_add(&c, 0, 0);
    for (int s = 1; s <= 1000; s++)
        lw_cycles_add(&c, s, 64e6 + (s < 4 ? s * 8e6 : 24e6) + 4096.0 * ((s - 1) % 100));
    lw_cycles_summary s;
    ck_assert_int_eq(lw_cycles_get(&c, &s), 1);
    ck_assert_uint_eq(s.count, 8);
    ck_assert_double_eq_tol(s.peak, 99 * 4096, 1e-9);
}
END_TEST

START_TEST(steady_leak_has_no_cycle) {
    lw_cycles c;
    sawtooth(&c, 1000, 1000000, 0, 512);
    lw_cycles_summary s;
    ck_assert_int_eq(lw_cycles_get(&c, &s), 0);
    ck_assert_uint_eq(s.count, 0);
}
END_TEST

START_TEST(staircase_is_not_growth_within_cycles) {
    /* One 2 MiB block held for 50 steps of every 100, then freed. */
    lw_cycles c;
    lw_cycles_init(&c);
    for (int s = 1; s <= 1000; s++)
        lw_cycles_add(&c, s, 64e6 + ((s % 100) >= 50 ? 2097152.0 : 0));
    lw_cycles_summary s;
    ck_assert_int_eq(lw_cycles_get(&c, &s), 0);
    ck_assert_uint_eq(s.count, 0);
}
END_TEST

START_TEST(noise_alone_has_no_cycle) {
    lw_cycles c;
    lw_cycles_init(&c);
    srand(7);
    for (int s = 1; s <= 5000; s++) {
        double e = 0;
        for (int k = 0; k < 12; k++)
            e += (double)rand() / RAND_MAX;
        lw_cycles_add(&c, s, 64e6 + 65536 * (e - 6));
    }
    lw_cycles_summary s;
    ck_assert_int_eq(lw_cycles_get(&c, &s), 0);
}
END_TEST

START_TEST(sawtooth_over_noise_is_described) {
    /* 512 KiB per cycle of 100 steps under 4 KiB of noise. */
    lw_cycles c;
    lw_cycles_init(&c);
    srand(11);
    for (int s = 1; s <= 2000; s++) {
        double e = 0;
        for (int k = 0; k < 12; k++)
            e += (double)rand() / RAND_MAX;
        lw_cycles_add(&c, s, 64e6 + 5242.88 * ((s - 1) % 100) + 4096 * (e - 6));
    }
    lw_cycles_summary s;
    ck_assert_int_eq(lw_cycles_get(&c, &s), 1);
    ck_assert_uint_eq(s.count, 18);
    ck_assert_double_eq_tol(s.period, 100, 1e-9);
    ck_assert(s.rise_per_step > 4000 && s.rise_per_step < 6500);
}
END_TEST

START_TEST(leak_under_a_sawtooth_keeps_its_cycles) {
    /* The lows rise too: the cycles are still described (the verdict is
     * the detector's business). */
    lw_cycles c;
    sawtooth(&c, 1000, 100, 4096, 64);
    lw_cycles_summary s;
    ck_assert_int_eq(lw_cycles_get(&c, &s), 1);
    ck_assert_uint_eq(s.count, 8);
    ck_assert_double_eq_tol(s.floor, 64e6 + 101 * 64, 1e-6);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cycles");
    TCase *tc = tcase_create("cycles");
    tcase_add_test(tc, epoch_sawtooth_is_described);
    tcase_add_test(tc, one_cycle_is_not_each_cycle);
    tcase_add_test(tc, warm_up_jumps_do_not_hide_the_releases);
    tcase_add_test(tc, steady_leak_has_no_cycle);
    tcase_add_test(tc, staircase_is_not_growth_within_cycles);
    tcase_add_test(tc, noise_alone_has_no_cycle);
    tcase_add_test(tc, sawtooth_over_noise_is_described);
    tcase_add_test(tc, leak_under_a_sawtooth_keeps_its_cycles);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
