/* SPDX-License-Identifier: Apache-2.0 */
/* The run's shared clock and counters: the step count, the time intervals
 * closed by the worker and the start time. A leaf module, so
 * that the allocation path can stamp records without reaching the layers that
 * advance the clock. */
#ifndef LW_RUNSTATE_H
#define LW_RUNSTATE_H

#include <stdint.h>

/* Steps marked with leakwatch_step() (or the PyTorch helper). */
uint32_t lw_step_now(void);
uint32_t lw_step_mark(void); /* adds one; returns the new count */
void lw_step_reset(void);

/* Time intervals closed by the worker (time mode, no step marks). */
uint64_t lw_intervals_now(void);
uint64_t lw_intervals_close(void); /* adds one; returns the new count */
void lw_intervals_reset(void);

/* The clock that stamps allocations: the step count once steps are marked,
 * else the number of time intervals closed. */
uint32_t lw_run_clock(void);

/* When recording started (lw_run_now_ns() clock). */
uint64_t lw_start_time_ns(void);
void lw_set_start_time_ns(uint64_t t);

/* Time since recording started, on the coarse clock (the hot path's). The
 * coarse clock lags the precise one that stamped the start by up to a tick
 * (4 ms), so an event in the first milliseconds would read as "before the
 * start": that is 0, never a wrapped 584 years. */
uint64_t lw_run_age_coarse_ns(void);

/* The run's time, for everything that measures the job (time intervals, the
 * pace, the live warning's and the periodic report's schedule): the
 * monotonic clock, or under LEAKWATCH_TEST_CLOCK=1 (for tests only) a
 * counter that only the job moves. Deadlines of leakwatch's own work (a
 * symbolizer's time budget) stay on the wall clock. */
uint64_t lw_run_now_ns(void);
uint64_t lw_run_now_coarse_ns(void);

/* The test clock: read the option (start of recording, before the sampler
 * starts); whether it is on. */
void lw_test_clock_init(void);
int lw_test_clock_on(void);
/* Moves the test clock on by ns, calls wake_sampler, then waits until the
 * sampler (if one runs) has done everything due by the new time and waits
 * for a later one. -1 (nothing done) when the test clock is off. */
int lw_test_clock_advance(uint64_t ns, void (*wake_sampler)(void));
/* The sampler says it waits for the run's time until (> 0), that it works
 * (woken), or that it is gone (its thread ends); a step mark says it has
 * woken the sampler (the next move of the time waits until it waits). */
void lw_test_clock_sampler_waits(uint64_t until);
void lw_test_clock_sampler_works(void);
void lw_test_clock_sampler_woken(void);
void lw_test_clock_sampler_gone(void);

#endif
