/* SPDX-License-Identifier: Apache-2.0 */
/* The live warning on stderr when a leak is confirmed while the job runs. */
#ifndef LW_WARNING_H
#define LW_WARNING_H

/* Says the current leak verdict in one line (LEAKWATCH_WARN), at most once in
 * 30 minutes. */
void lw_warning_leak(void);
/* On the worker's tick: when a LEAK line was printed and the verdict is no
 * longer a leak, says so in one line, once. */
void lw_warning_check(void);
/* On the worker's tick after an interval closed: the first time one closes
 * without any step mark, one line says that steps are time intervals and
 * how to mark them (not under LEAKWATCH_QUIET, nor with PyTorch's helper). */
void lw_warning_steps_hint(void);
/* An announced leak not yet said as one (growth.h, lw_growth_take_growing):
 * once, until a LEAK line or a withdrawal, "growing, not yet a leak: ..."
 * with the evidence so far. */
void lw_warning_growing(void);

/* A LEAK line said while the job ran and withdrawn later (issue 38): the
 * report records it and the exit says it. */
typedef struct {
    unsigned count;                           /* LEAK lines withdrawn */
    unsigned long long said_at, withdrawn_at; /* the last one's steps (or intervals) */
    const char *unit;                         /* "step" or "interval" */
    char reason[160];                         /* why it was withdrawn */
} lw_withdrawn_alarm;

/* Fills *out; returns its count (0: none withdrawn). */
unsigned lw_warning_withdrawn(lw_withdrawn_alarm *out);

/* A forked child's own start: its warnings are its own. */
void lw_warning_forget(void);

/* withdrawn_alarm's lock (a leaf), taken around a fork (fork_locks.c) so that
 * a child's report can read the record. */
void lw_warning_lock_for_fork(void);
void lw_warning_unlock_after_fork(void);

#endif
