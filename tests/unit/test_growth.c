/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for src/analyze/growth.c: PyTorch's tensor series per device
 * (leakwatch_torch_counters) is decided by the same rule as leakwatch's own
 * series (lw_decision: confirmation, withdrawal, a reason that agrees with
 * the verdict), and decides the verdict once it has points. */
#include "../check_run.h"
#include "growth.h"
#include "runstate.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Deterministic noise of +-2 KiB around the floor. */
static int64_t noise(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (int64_t)((*s >> 33) % 4097) - 2048;
}

static void steps(int n, int64_t *level, int64_t per_step, uint64_t *seed) {
    for (int i = 0; i < n; i++) {
        lw_step_mark();
        *level += per_step;
        lw_growth_torch_counters(0, (64 << 20) + *level + noise(seed), 256 << 20, -1);
        lw_growth_update(0);
    }
}

static lw_torch_device_state device0(void) {
    lw_torch_device_state d[LW_TORCH_MAX_DEVICES];
    memset(d, 0, sizeof d);
    ck_assert_int_eq(lw_growth_torch_get(d, LW_TORCH_MAX_DEVICES, NULL, 0, NULL), 1);
    ck_assert_int_eq(d[0].device, 0);
    return d[0];
}

START_TEST(tensor_series_follows_the_decision_rule) {
    lw_growth_init();
    int64_t level = 0;
    uint64_t seed = 1;
    /* 4 KiB kept per step: a leak, announced after confirmation. */
    steps(400, &level, 4096, &seed);
    lw_growth_flush();
    lw_torch_device_state d = device0();
    ck_assert_int_eq(d.verdict, LW_VERDICT_LEAK);
    ck_assert_int_ge(d.first_leak_step, 1);
    ck_assert_str_eq(d.reason, "the floor grows steadily");
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    ck_assert_str_eq(g.signal, "torch_allocated");
    ck_assert_int_eq(g.signal_device, 0);
    ck_assert_int_eq(g.verdict, LW_VERDICT_LEAK);
    ck_assert_int_eq(g.first_leak_step, d.first_leak_step);
    ck_assert_msg(strstr(g.reason, "grows") != NULL, "reason: %s", g.reason);
    ck_assert_uint_eq(g.withdrawn, 0);
    /* The growth stops for good: the verdict is withdrawn as lw_decision
     * withdraws one, saying so, and counted in growth.leak_verdicts_withdrawn. */
    steps(6000, &level, 0, &seed);
    lw_growth_flush();
    d = device0();
    ck_assert_int_ne(d.verdict, LW_VERDICT_LEAK);
    ck_assert_int_eq(d.first_leak_step, -1);
    ck_assert_msg(strncmp(d.reason, "leak verdict withdrawn", 22) == 0 ||
                      d.verdict == LW_VERDICT_NO_LEAK,
                  "reason: %s", d.reason);
    lw_growth_get(&g, NULL, 0, NULL);
    ck_assert_int_ne(g.verdict, LW_VERDICT_LEAK);
    ck_assert_uint_ge(g.withdrawn, 1);
    ck_assert_int_eq(g.first_leak_step, -1);
}
END_TEST

/* A job whose leaking function returns at its end (the kept tensors freed,
 * then the teardown) while the counters are still read (a job without
 * marks: the helper reads them each interval) ends with points back at the
 * start: the verdict is the one on the data before that release, as for
 * leakwatch's own series. It was "no leak" (five low points) or withdrawn
 * ("the growth decelerates", on real PyTorch). */
START_TEST(tensor_release_at_the_end_keeps_the_leak) {
    lw_growth_init();
    int64_t level = 0;
    uint64_t seed = 3;
    steps(100, &level, 12800, &seed);
    lw_growth_flush();
    ck_assert_int_eq(device0().verdict, LW_VERDICT_LEAK);
    level = 0;
    steps(5, &level, 0, &seed);
    lw_growth_finish();
    lw_torch_device_state d = device0();
    ck_assert_msg(d.verdict == LW_VERDICT_LEAK, "verdict %d: %s", d.verdict, d.reason);
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    ck_assert_int_eq(g.verdict, LW_VERDICT_LEAK);
}
END_TEST

/* The same, when the series' first point predates the job's start-up
 * memory that stays to the end (PyTorch's cuBLAS workspace, 32 MiB, taken
 * at the first matrix product after the first read): the teardown goes back
 * to that level, not to the first point's. Seen on real PyTorch
 * (tests/real/torch_server.py tensors): one read after the leaking function
 * returned, and the leak was withdrawn ("the growth decelerates"). */
START_TEST(tensor_release_to_the_start_up_level_keeps_the_leak) {
    lw_growth_init();
    lw_step_mark();
    lw_growth_torch_counters(0, 16384, 2 << 20, -1); /* before the workspace */
    lw_growth_update(0);
    int64_t level = 0;
    uint64_t seed = 5;
    steps(100, &level, 12800, &seed); /* each (64 << 20) + level: the workspace kept */
    lw_growth_flush();
    ck_assert_int_eq(device0().verdict, LW_VERDICT_LEAK);
    level = 0;
    steps(1, &level, 0, &seed); /* the kept tensors freed; the workspace stays */
    lw_growth_finish();
    lw_torch_device_state d = device0();
    ck_assert_msg(d.verdict == LW_VERDICT_LEAK, "verdict %d: %s", d.verdict, d.reason);
}
END_TEST

/* A flat tensor series never gives a leak, and its reason is never one. */
START_TEST(flat_tensor_series_is_no_leak) {
    lw_growth_init();
    int64_t level = 0;
    uint64_t seed = 7;
    steps(600, &level, 0, &seed);
    lw_growth_flush();
    lw_torch_device_state d = device0();
    ck_assert_int_ne(d.verdict, LW_VERDICT_LEAK);
    ck_assert_ptr_null(strstr(d.reason, "grows steadily"));
}
END_TEST

/* The job's pace (series.h): steps per second of its recent step marks,
 * from their own times. Slow start-up steps (1 s each) and a thread
 * descheduled for 20 ms every 50 steps of 1 ms do not move it: early (the
 * live line) and late (the exit line) it is the steps' own 1,000 per
 * second; two marks at once (a fold) count their steps. */
/* A step mark wakes the worker only for the first marks (it learns the
 * job's pace from them) and when the queue is half full; after that the
 * worker takes the queue in on its own schedule (lw_growth_unmarked_tick,
 * every half mean step, and each interval), so a training step costs no
 * wake-up of another thread. The tick takes in what was queued. */
START_TEST(step_marks_wake_the_worker_only_at_first) {
    lw_growth_init();
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    ck_assert_str_eq(g.step_source, "time");
    uint64_t w0 = lw_growth_wakes();
    for (int i = 0; i < 1000; i++) {
        lw_step_mark();
        lw_growth_step();
    }
    ck_assert_uint_le(lw_growth_wakes() - w0, 8);
    lw_growth_unmarked_tick();
    lw_growth_get(&g, NULL, 0, NULL);
    ck_assert_str_eq(g.step_source, "marker");
    /* A queue left to fill (no worker) wakes it at half full, before any
     * step is folded. */
    w0 = lw_growth_wakes();
    for (int i = 0; i < 4096; i++) {
        lw_step_mark();
        lw_growth_step();
    }
    ck_assert_uint_ge(lw_growth_wakes() - w0, 1);
}
END_TEST

START_TEST(pace_is_the_recent_steps_own) {
    static lw_pace p;
    lw_pace_reset(&p);
    ck_assert(isnan(lw_pace_rate(&p)));
    double t = 0, x = 0;
    for (int i = 0; i < 5; i++)
        lw_pace_add(&p, ++x, t += 1.0);
    double early = NAN;
    for (int i = 1; i <= 5000; i++) {
        t += i % 50 == 0 ? 0.020 : 0.001;
        x += i % 97 == 0 ? 2 : 1;
        if (i % 97 == 0) t += 0.001;
        lw_pace_add(&p, x, t);
        if (i == 60) early = lw_pace_rate(&p);
    }
    double late = lw_pace_rate(&p);
    ck_assert_msg(fabs(early - 1000) < 1 && fabs(late - 1000) < 1, "pace: early %g, late %g", early,
                  late);
}
END_TEST

static Suite *growth_suite(void) {
    Suite *s = suite_create("growth");
    TCase *tc = tcase_create("torch");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tensor_series_follows_the_decision_rule);
    tcase_add_test(tc, flat_tensor_series_is_no_leak);
    tcase_add_test(tc, tensor_release_at_the_end_keeps_the_leak);
    tcase_add_test(tc, tensor_release_to_the_start_up_level_keeps_the_leak);
    tcase_add_test(tc, pace_is_the_recent_steps_own);
    tcase_add_test(tc, step_marks_wake_the_worker_only_at_first);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return lw_check_run(growth_suite());
}
