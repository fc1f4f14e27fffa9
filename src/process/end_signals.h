/* SPDX-License-Identifier: Apache-2.0 */
/* SIGINT, SIGTERM, SIGHUP: a final report, then the job ends as it would
 * have without us.
 *
 * The contract:
 *  - Only a signal whose disposition is still the default (SIG_DFL) gets a
 *    handler of ours; a job's own handler, SIG_IGN, or an SA_SIGINFO handler
 *    is left alone, and a handler the job installs later simply replaces
 *    ours.
 *  - The handler writes nothing itself (a report allocates and takes locks):
 *    it hands the signal to a thread of ours through a word of memory (a
 *    futex: no descriptor, so a job that closes every descriptor it did not
 *    open, close_range, still gets its report) and waits for that thread at
 *    most 10 seconds. The thread calls the report function
 *    given at start with the signal's name ("SIGTERM"), once per process.
 *  - Then the handler puts the default action back, unblocks the signal and
 *    raises it again: the process ends by the same signal, with the same
 *    status, as without leakwatch. A second signal while the report is
 *    being written ends the process at once.
 *  - A forked child that starts recording calls lw_end_signals_start again:
 *    it gets a thread of its own (its handler, inherited, kept). In a child that has not, the
 *    handler does nothing but end the process as the default action would.
 *  - lw_end_signals_stop (a detach) gives the signals whose handler is still
 *    ours their default action back, the job's dispositions as they were
 *    before the attach, and ends the thread.
 * Nothing here blocks or changes a signal the job handles itself. */
#ifndef LW_END_SIGNALS_H
#define LW_END_SIGNALS_H

/* Installs the handlers (see above) and starts the thread that calls
 * report(signal name) when one of the signals arrives. Without a
 * thread, no handler is installed: the signals end the job as without us. */
void lw_end_signals_start(void (*report)(const char *signal_name));

/* The detach: the default actions back where the handler is ours; the
 * thread ends. */
void lw_end_signals_stop(void);

#endif
