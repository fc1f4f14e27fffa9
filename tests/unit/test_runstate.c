/* SPDX-License-Identifier: Apache-2.0 */
/* The run's clocks (src/track/runstate.c). */
#include "runstate.h"

#include "../check_run.h"
#include "clock.h"

#include <check.h>
#include <stdint.h>

/* The start is stamped on the precise clock and events on the coarse one,
 * which lags it by up to a tick: an event just after the start must read as
 * age 0, not as a wrapped 2^64 ns (a failure "at over 1000 days"). */
START_TEST(age_right_after_the_start_is_never_negative) {
    lw_set_start_time_ns(lw_now_coarse_ns() + 1000000000u); /* coarse reads "before" */
    ck_assert_uint_eq(lw_run_age_coarse_ns(), 0);
    lw_set_start_time_ns(lw_now_coarse_ns() - 3000000000u);
    uint64_t age = lw_run_age_coarse_ns();
    ck_assert_uint_ge(age, 3000000000u);
    ck_assert_uint_lt(age, 3000000000u + 3600u * 1000000000u);
}
END_TEST

int main(void) {
    Suite *s = suite_create("runstate");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, age_right_after_the_start_is_never_negative);
    suite_add_tcase(s, tc);
    int failed = lw_check_run(s);
    return failed ? 1 : 0;
}
