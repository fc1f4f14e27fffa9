/* SPDX-License-Identifier: Apache-2.0 */
/* Which series gives the run's verdict (growth_run.h lists growth's files):
 * lw_growth_get, whose state every output reads. */
#ifndef LW_GROWTH_SIGNAL_H
#define LW_GROWTH_SIGNAL_H

/* Forgets lw_growth_steps_are_calls (a fresh run, a forked child). */
void lw_growth_signal_forget(void);

#endif
